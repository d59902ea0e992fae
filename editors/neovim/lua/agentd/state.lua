-- What the plugin knows from the server: the latest run state, step
-- statuses, the log, and the last restore. Change sets live in review/ (review/store.lua).
local function notify(msg, level)
  return require('agentd.notify').notify(msg, level)
end

local M = {
  run = nil, -- the latest compact RunState of the current run
  run_id = nil,
  steps = {}, -- [runId] = { [stepId] = status }
  log = {}, -- lines for :Agent log
  last_plan = nil, -- the plan id last opened or created
  progress = nil, -- the latest $/progress message
}

local MAX_LOG = 5000

function M.append_log(line)
  for l in tostring(line):gmatch('[^\n]+') do
    M.log[#M.log + 1] = l
  end
  if #M.log > MAX_LOG then
    local drop = #M.log - MAX_LOG
    for _ = 1, drop do
      table.remove(M.log, 1)
    end
  end
end

M.allowed = {} -- [runId] = { [stepId] = allowedBy }

function M.set_allowed(run_id, step_id, by)
  M.allowed[run_id] = M.allowed[run_id] or {}
  M.allowed[run_id][step_id] = by
end

--- "allowed by rule-2 (`go test ./...`)" for a step a remembered rule
--- allowed, else nil.
function M.allowed_note(run_id, step_id)
  local by = (M.allowed[run_id] or {})[step_id]
  if not by or not by.ruleId then
    return nil
  end
  return ('allowed by %s%s'):format(by.ruleId, (by.command and by.command ~= '') and (' (`' .. by.command .. '`)') or '')
end

function M.step_status(run_id, step_id)
  return (M.steps[run_id] or {})[step_id]
end

function M.set_step(run_id, step_id, status)
  M.steps[run_id] = M.steps[run_id] or {}
  M.steps[run_id][step_id] = status
end

--- The daemon exited. Unless Neovim is quitting or it was stopped on
--- request (exit code 0, or 130/143: SIGINT/SIGTERM), the user is told,
--- with the daemon's last error lines and the fix. Either way its hunks are
--- no longer drawn: the next :Agent command starts a new daemon, and
--- :Agent review shows what is still pending in the workspace's state.
function M.on_exit(client_id, code, signal, root)
  if vim.v.exiting ~= vim.NIL then
    return
  end
  -- A daemon started for the same workspace since (after a refusal) keeps
  -- its hunks.
  local live = require('agentd.client').get(root)
  if package.loaded['agentd.review'] and not (live and live.id ~= client_id) then
    require('agentd.review').clear_root(root)
  end
  if M.run and M.run.status ~= 'completed' and M.run.status ~= 'failed' and M.run.status ~= 'cancelled' and M.run.status ~= 'partial' then
    M.run = vim.tbl_extend('force', M.run, { status = 'stopped' })
  end
  local requested = (code == 0 or code == 130 or code == 143) and (signal == 0 or signal == 15 or signal == nil)
  if not requested then
    local last = require('agentd.client').last_errors[root or ''] or {}
    notify(
      ('agentd: the daemon stopped (exit code %s%s)%s; the next :Agent command starts it again. Its hunks are cleared (:Agent review lists what is still pending in %s); if it keeps stopping, see :checkhealth agentd and :LspLog.'):format(
        tostring(code),
        (signal and signal ~= 0) and (', signal ' .. signal) or '',
        #last > 0 and (': ' .. last[#last]) or '',
        vim.fn.fnamemodify(root or '?', ':~')
      ),
      vim.log.levels.ERROR
    )
  end
  vim.cmd.redrawstatus({ bang = true, mods = { emsg_silent = true } })
end

--- The short status string for the statusline.
function M.statusline()
  local parts = {}
  local r = M.run
  if r then
    local s = r.status or '?'
    if s == 'running' or s == 'paused' then
      s = ('%s %d%%'):format(s, math.floor((r.progress or 0) * 100 + 0.5))
    end
    parts[#parts + 1] = s
  end
  local waiting = package.loaded['agentd.handlers'] and #require('agentd.handlers').pending_approvals or 0
  if waiting > 0 then
    parts[#parts + 1] = ('%d approval%s waiting (:Agent approve)'):format(waiting, waiting == 1 and '' or 's')
  end
  local n = require('agentd.review').pending_count()
  if n > 0 then
    parts[#parts + 1] = ('%d hunk%s'):format(n, n == 1 and '' or 's')
  end
  if #parts == 0 then
    return ''
  end
  return 'agentd: ' .. table.concat(parts, ' · ')
end

return M
