-- :Agent rules: the remembered approval rules ("always allow/reject"
-- answers), listed and revoked through the server (agentd/policy/get and
-- agentd/policy/set with revoke). The rules are the workspace's: every
-- front end sees the same list.
local client = require('agentd.client')

local M = {}
local function notify(msg, level)
  return require('agentd.notify').notify(msg, level)
end

--- The rules, or nil and an error.
function M.list()
  if not client.current() then
    return nil, 'agentd is not running'
  end
  local pol, err = client.request_sync(nil, 'agentd/policy/get', vim.empty_dict())
  if not pol then
    return nil, err
  end
  return pol.rules or {}
end

function M.describe(r)
  local what = r.command and r.command ~= '' and ('`' .. r.command .. '`') or (r.path or r.tool or r.category or '?')
  return ('%s  %s %s %s%s'):format(r.id, r.allow == false and 'reject' or 'allow', r.category or '?', what, r.createdAt and ('  (' .. r.createdAt .. ')') or '')
end

--- Revokes rules by id. Returns the policy, or nil and the error (an
--- unknown id changes nothing and is named in the error).
function M.revoke(ids)
  local pol, err = client.request_sync(nil, 'agentd/policy/set', { revoke = ids })
  if not pol then
    notify('agentd: revoke failed: ' .. err, vim.log.levels.ERROR)
    return nil, err
  end
  notify(('agentd: revoked %s'):format(table.concat(ids, ', ')), vim.log.levels.INFO)
  return pol
end

--- :Agent rules [list | revoke [id...]]: without an id, a picker of the
--- rules; the one picked is revoked.
function M.run(args)
  local sub = args[1] or 'revoke'
  local rules, err = M.list()
  if not rules then
    notify('agentd: ' .. err, vim.log.levels.ERROR)
    return
  end
  if sub == 'list' then
    if #rules == 0 then
      notify('agentd: no remembered rules (an "Always allow/reject" answer makes one)', vim.log.levels.INFO)
      return
    end
    local lines = { '# agentd rules (:Agent rules revoke {id} takes one out)' }
    for _, r in ipairs(rules) do
      lines[#lines + 1] = M.describe(r)
    end
    local b = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
    vim.bo[b].modifiable = false
    vim.cmd('belowright split')
    vim.api.nvim_win_set_buf(0, b)
    return rules
  elseif sub ~= 'revoke' then
    notify(("agentd: :Agent rules [list | revoke [id...]], not %q"):format(sub), vim.log.levels.ERROR)
    return
  end
  if #args > 1 then
    return M.revoke(vim.list_slice(args, 2))
  end
  if #rules == 0 then
    notify('agentd: no remembered rules to revoke', vim.log.levels.INFO)
    return
  end
  vim.ui.select(rules, { prompt = 'agentd: revoke which rule?', kind = 'agentd.rule', format_item = M.describe }, function(r)
    if r then
      M.revoke({ r.id })
    end
  end)
end

return M
