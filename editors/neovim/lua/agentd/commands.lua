-- :Agent {sub} and its completion.
local M = {}
local function notify(msg, level)
  return require('agentd.notify').notify(msg, level)
end

local scopes = { 'hunk', 'file', 'all' }

local function a()
  return require('agentd')
end

-- :Agent works without setup(): it then runs setup() with the defaults.
local function ensure_setup()
  if not require('agentd.config').configured then
    require('agentd').setup({})
  end
end

local function snapshots()
  local client = require('agentd.client')
  if not client.current() then
    return -- said why (missing binary)
  end
  local list, err = client.request_sync(nil, 'agentd/snapshot/list', vim.empty_dict())
  if not list then
    notify('agentd: ' .. err, vim.log.levels.ERROR)
    return
  end
  if #list == 0 then
    notify('agentd: no snapshots yet', vim.log.levels.INFO)
    return
  end
  vim.ui.select(list, {
    prompt = 'agentd: snapshot to preview',
    kind = 'agentd.snapshot',
    format_item = function(s)
      return ('%s  %s  %s  (%d files)'):format(s.id:sub(1, 10), s.createdAt or '', s.label or '', s.filesChanged or 0)
    end,
  }, function(s)
    if not s then
      return
    end
    local d, derr = client.request_sync(nil, 'agentd/snapshot/diff', { from = s.id })
    if not d then
      notify('agentd: ' .. derr, vim.log.levels.ERROR)
      return
    end
    local lines = { ('# snapshot %s (%s) compared with the workspace now; :Agent restore %s puts it back'):format(s.id, s.label or '', s.id) }
    for _, f in ipairs(d.files or {}) do
      vim.list_extend(lines, vim.split(f.patch or (f.op .. ' ' .. f.uri), '\n'))
    end
    local b = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
    vim.bo[b].filetype = 'diff'
    vim.bo[b].modifiable = false
    vim.cmd('belowright split')
    vim.api.nvim_win_set_buf(0, b)
  end)
end

local function show_log()
  local lines = require('agentd.state').log
  local b = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, #lines > 0 and lines or { 'agentd: nothing logged yet' })
  vim.bo[b].modifiable = false
  vim.cmd('belowright split')
  vim.api.nvim_win_set_buf(0, b)
  vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(b), 0 })
end

local function show_status()
  local st = a().status()
  local line = ('agentd: %s'):format(st.run_id and ('run %s %s %d%%'):format(st.run_id, st.status, math.floor(st.progress * 100 + 0.5)) or 'no run')
  if #st.current_steps > 0 then
    line = line .. ' — ' .. table.concat(st.current_steps, ', ')
  end
  local n = require('agentd.review').pending_count()
  line = line .. ('; %d pending hunk%s'):format(n, n == 1 and '' or 's')
  notify(line, vim.log.levels.INFO)
end

M.subs = {
  plan = function(args)
    -- Say what is missing before the user types a request.
    local missing = require('agentd.model').missing()
    if missing then
      notify('agentd: :Agent plan needs a model: ' .. missing, vim.log.levels.ERROR)
      return
    end
    if #args > 0 then
      a().plan(table.concat(args, ' '))
      return
    end
    vim.ui.input({ prompt = 'agentd: what should the plan do? ' }, function(request)
      if request and vim.trim(request) ~= '' then
        a().plan(request)
      end
    end)
  end,
  open = function(args)
    a().open_plan(args[1] and vim.fn.expand(args[1]) or nil)
  end,
  run = function()
    a().run()
  end,
  pause = function()
    a().control('pause')
  end,
  resume = function()
    a().control('resume')
  end,
  cancel = function()
    a().control('cancel')
  end,
  retry = function(args)
    if not args[1] then
      notify('agentd: :Agent retry {step}', vim.log.levels.WARN)
      return
    end
    a().control('retry', args[1])
  end,
  skip = function(args)
    if not args[1] then
      notify('agentd: :Agent skip {step}', vim.log.levels.WARN)
      return
    end
    a().control('skip', args[1])
  end,
  review = function()
    a().review()
  end,
  accept = function(args)
    a().accept(args[1] or 'hunk')
  end,
  reject = function(args)
    a().reject(args[1] or 'hunk')
  end,
  snapshots = snapshots,
  restore = function(args)
    local id = args[1]
    if not id then
      id = require('agentd.state').start_snapshot
      if not id then
        notify('agentd: :Agent restore {snapshot id} (:Agent snapshots lists them)', vim.log.levels.WARN)
        return
      end
    end
    a().restore(id)
  end,
  undo = function(args, bang)
    require('agentd.undo').command('run', args, bang)
  end,
  ['undo-restore'] = function(args, bang)
    require('agentd.undo').command('restore', args, bang)
  end,
  next = function()
    require('agentd.review').jump(1)
  end,
  prev = function()
    require('agentd.review').jump(-1)
  end,
  preview = function()
    require('agentd.review').preview()
  end,
  repropose = function(args)
    require('agentd.review').repropose(args[1] or 'hunk')
  end,
  approve = function()
    if package.loaded['agentd.handlers'] then
      require('agentd.handlers').approve()
    else
      notify('agentd: no approval is waiting', vim.log.levels.INFO)
    end
  end,
  rules = function(args)
    require('agentd.rules').run(args)
  end,
  model = function(args)
    require('agentd.model').command(args)
  end,
  status = show_status,
  log = show_log,
  chat = function(args, _, o)
    require('agentd.chat').command(args, o)
  end,
}

function M.run(o)
  ensure_setup()
  local args = vim.deepcopy(o.fargs)
  local sub = table.remove(args, 1)
  if not sub then
    show_status()
    return
  end
  local bang = o.bang
  -- :Agent undo! is :Agent! undo (the bang after the subcommand, as the
  -- help writes it).
  if not M.subs[sub] and sub:sub(-1) == '!' and M.subs[sub:sub(1, -2)] then
    sub, bang = sub:sub(1, -2), true
  end
  local f = M.subs[sub]
  if not f then
    notify(('agentd: unknown subcommand %q; one of: %s'):format(sub, table.concat(M.names(), ', ')), vim.log.levels.ERROR)
    return
  end
  f(args, bang, o)
end

function M.names()
  local names = vim.tbl_keys(M.subs)
  table.sort(names)
  return names
end

local function step_ids()
  local ids = {}
  local plan = require('agentd.plan')
  local state = require('agentd.state')
  local p = plan.plans[(state.run and state.run.planId) or state.last_plan or '']
  for _, s in ipairs(p and p.steps or {}) do
    ids[#ids + 1] = s.id
  end
  return ids
end

local function snapshot_ids()
  local c = require('agentd.client').get(require('agentd.client').root_of(0))
  if not c then
    return {}
  end
  local list = require('agentd.client').request_sync(c, 'agentd/snapshot/list', vim.empty_dict(), 2000) or {}
  local ids = {}
  for _, s in ipairs(list) do
    ids[#ids + 1] = s.id
  end
  return ids
end

function M.complete(arglead, cmdline, _)
  local words = vim.split(cmdline, '%s+', { trimempty = false })
  -- words[1] is "Agent"; the word being completed is the last one.
  local n = #words
  local cands
  if n <= 2 then
    cands = M.names()
  else
    local sub = words[2]
    if n > 3 then
      return {}
    end
    if sub == 'accept' or sub == 'reject' or sub == 'repropose' then
      cands = scopes
    elseif sub == 'rules' then
      cands = { 'list', 'revoke' }
    elseif sub == 'retry' or sub == 'skip' then
      cands = step_ids()
    elseif sub == 'restore' then
      cands = snapshot_ids()
    elseif sub == 'undo' or sub == 'undo!' or sub == 'undo-restore' or sub == 'undo-restore!' then
      cands = { 'keep', 'overwrite' }
    elseif sub == 'model' then
      cands = require('agentd.model').complete()
    elseif sub == 'chat' then
      cands = { 'new', 'list', 'ask', 'unrestore' }
    elseif sub == 'open' then
      return vim.fn.getcompletion(arglead, 'file')
    else
      return {}
    end
  end
  return vim.tbl_filter(function(c)
    return vim.startswith(c, arglead)
  end, cands)
end

return M
