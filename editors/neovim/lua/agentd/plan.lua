-- The plan buffer: one line per step, live status signs, validation
-- problems as diagnostics, and keys that edit the plan on the server.
local config = require('agentd.config')
local client = require('agentd.client')
local state = require('agentd.state')

local M = {}
local function notify(msg, level)
  return require('agentd.notify').notify(msg, level)
end
local api = vim.api
local ns = api.nvim_create_namespace('agentd.plan')
local ns_diag = api.nvim_create_namespace('agentd.plan.problems')
M.ns, M.ns_diag = ns, ns_diag

M.plans = {} -- [planId] = Plan
M.run_plan = {} -- [runId] = planId
local bufs = {} -- [planId] = bufnr

local sign_hl = {
  completed = 'DiagnosticOk',
  failed = 'DiagnosticError',
  running = 'DiagnosticInfo',
  waiting = 'DiagnosticWarn',
  retrying = 'DiagnosticWarn',
  blocked = 'DiagnosticError',
  cancelled = 'DiagnosticError',
}

function M.find_step(run_id, step_id)
  local plan = M.plans[M.run_plan[run_id] or ''] or M.plans[state.last_plan or '']
  for _, p in ipairs(plan and { plan } or vim.tbl_values(M.plans)) do
    for _, s in ipairs(p.steps or {}) do
      if s.id == step_id then
        return s
      end
    end
  end
end

local function run_of(plan)
  local run_id
  for r, p in pairs(M.run_plan) do
    if p == plan.id and (not run_id or r == state.run_id) then
      run_id = r
    end
  end
  return run_id
end

local function status_of(plan, step)
  local run_id = run_of(plan)
  local st = run_id and state.step_status(run_id, step.id)
  if st then
    return st
  end
  if step.skip then
    return 'skipped'
  end
  return 'pending'
end

local function step_line(step)
  local what = step.tool or step.kind or 'tool'
  if step.kind and step.kind ~= 'tool' then
    what = step.kind
  end
  local line = ('%-14s %-12s %s'):format(step.id, what, step.description or '')
  if step.dependsOn and #step.dependsOn > 0 then
    line = line .. '  ← ' .. table.concat(step.dependsOn, ', ')
  end
  if step.skip then
    line = line .. '  (skipped)'
  end
  return line
end

--- The step on the cursor's line of a plan buffer.
local function cursor_step(bufnr)
  local plan = M.plans[vim.b[bufnr].agentd_plan or '']
  if not plan then
    return nil
  end
  local row = api.nvim_win_get_cursor(0)[1] - 1 -- the title takes line 1
  return plan, plan.steps[row], row
end

--- The id of the step on the cursor's line of a plan buffer.
function M.cursor_step_id(bufnr)
  local _, step = cursor_step(bufnr)
  return step and step.id
end

--- Draws (or redraws) the plan buffer with the plan's steps and the
--- problems, each on its step's line.
function M.render(plan_id, problems)
  local plan = M.plans[plan_id]
  local b = bufs[plan_id]
  if not plan or not b or not api.nvim_buf_is_valid(b) then
    return
  end
  local lines = { ('# %s  (plan %s, version %d)'):format(plan.title or plan.request or 'plan', plan.id, plan.version or 0) }
  for _, s in ipairs(plan.steps or {}) do
    lines[#lines + 1] = step_line(s)
  end
  vim.bo[b].modifiable = true
  api.nvim_buf_set_lines(b, 0, -1, false, lines)
  vim.bo[b].modifiable = false
  vim.bo[b].modified = false
  api.nvim_buf_clear_namespace(b, ns, 0, -1)
  local signs = config.options.signs
  for i, s in ipairs(plan.steps or {}) do
    local st = status_of(plan, s)
    local label = ({ waiting = 'waiting for you (review or approval)' })[st] or st
    if st == 'skipped' and s.skip then
      label = nil -- the line says "(skipped)" already (and the sign)
    end
    local note = run_of(plan) and state.allowed_note(run_of(plan), s.id)
    local opts = {
      virt_text = { { ' ' .. (label or '') .. (note and ((label and ' · ' or '') .. note) or ''), sign_hl[st] or 'Comment' } },
      virt_text_pos = 'eol',
    }
    if signs then
      opts.sign_text = signs[st] or '?'
      opts.sign_hl_group = sign_hl[st] or 'Comment'
    end
    api.nvim_buf_set_extmark(b, ns, i, 0, opts)
  end
  if problems ~= nil then
    local diags = {}
    for _, p in ipairs(problems) do
      local row = 0
      for i, s in ipairs(plan.steps or {}) do
        if p.stepId and s.id == p.stepId then
          row = i
        end
      end
      diags[#diags + 1] = {
        lnum = row,
        col = 0,
        severity = vim.diagnostic.severity.ERROR,
        source = 'agentd',
        message = (p.field and (p.field .. ': ') or '') .. (p.message or ''),
      }
    end
    vim.diagnostic.set(ns_diag, b, diags)
  end
end

local function reload(plan_id)
  local p, err = client.request_sync(nil, 'agentd/plan/get', { planId = plan_id })
  if p then
    M.plans[plan_id] = p
    M.render(plan_id)
  end
  return p, err
end

--- Sends plan edits; a stale version reloads the plan instead of
--- overwriting it; refused edits show their problems on the steps.
function M.edit(plan_id, edits)
  local plan = M.plans[plan_id]
  if not plan then
    return nil, 'unknown plan ' .. tostring(plan_id)
  end
  local res, err, e = client.request_sync(nil, 'agentd/plan/edit', { planId = plan_id, version = plan.version, edits = edits })
  if res then
    M.plans[plan_id] = res
    M.render(plan_id, {})
    return res
  end
  if e and e.code == -32002 then
    reload(plan_id)
    notify('agentd: the plan changed on the server (another version); reloaded it. Make your change again.', vim.log.levels.WARN)
  elseif e and e.code == -32001 then
    M.render(plan_id, e.data and e.data.problems or {})
    notify('agentd: edit refused, the plan would be invalid: ' .. err, vim.log.levels.ERROR)
  else
    notify('agentd: edit failed: ' .. (err or '?'), vim.log.levels.ERROR)
  end
  return nil, err
end

--- A scratch buffer holding a step as JSON; :write sends it back.
local function edit_json(plan_id, step, on_write, title)
  local b = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(b, ('agentd://plan/%s/%s'):format(plan_id, title))
  local text = vim.json.encode(step)
  local ok, pretty = pcall(function()
    return vim.fn.system({ 'python3', '-m', 'json.tool', '--indent', '2' }, text)
  end)
  local lines = (ok and vim.v.shell_error == 0) and vim.split(vim.trim(pretty), '\n') or { text }
  api.nvim_buf_set_lines(b, 0, -1, false, lines)
  vim.bo[b].buftype = 'acwrite'
  vim.bo[b].filetype = 'json'
  vim.bo[b].modified = false
  api.nvim_create_autocmd('BufWriteCmd', {
    buffer = b,
    callback = function()
      local src = table.concat(api.nvim_buf_get_lines(b, 0, -1, false), '\n')
      local okd, val = pcall(vim.json.decode, src, { luanil = { object = true, array = true } })
      if not okd then
        notify('agentd: the step is not valid JSON: ' .. tostring(val), vim.log.levels.ERROR)
        return
      end
      if on_write(val) then
        vim.bo[b].modified = false
        vim.cmd('bwipeout ' .. b)
      end
    end,
  })
  vim.cmd('belowright split')
  api.nvim_win_set_buf(0, b)
  return b
end
M.edit_json = edit_json

local actions = {}

function actions.skip(b)
  local plan, step = cursor_step(b)
  if step then
    M.edit(plan.id, { { op = step.skip and 'unskip' or 'skip', stepId = step.id } })
  end
end

function actions.edit(b)
  local plan, step = cursor_step(b)
  if not step then
    return
  end
  local id = step.id
  edit_json(plan.id, step, function(val)
    return M.edit(plan.id, { { op = 'update', stepId = id, step = val } }) ~= nil
  end, 'step/' .. id)
end

function actions.move_down(b)
  local plan, step, row = cursor_step(b)
  local nxt = plan and plan.steps[row + 1]
  if step and nxt and M.edit(plan.id, { { op = 'move', stepId = step.id, after = nxt.id } }) then
    api.nvim_win_set_cursor(0, { row + 2, 0 })
  end
end

function actions.move_up(b)
  local plan, step, row = cursor_step(b)
  if not step or row <= 1 then
    return
  end
  local after = row > 2 and plan.steps[row - 2].id or nil
  if M.edit(plan.id, { { op = 'move', stepId = step.id, after = after } }) then
    api.nvim_win_set_cursor(0, { row, 0 })
  end
end

function actions.remove(b)
  local plan, step = cursor_step(b)
  if step then
    M.edit(plan.id, { { op = 'remove', stepId = step.id } })
  end
end

function actions.add(b)
  local plan, step = cursor_step(b)
  if not plan then
    return
  end
  local after = step and step.id or nil
  local template = { id = 'new-step', description = '', tool = 'read_file', args = { path = '' } }
  edit_json(plan.id, template, function(val)
    return M.edit(plan.id, { { op = 'insert', step = val, after = after } }) ~= nil
  end, 'new')
end

function actions.run(b)
  require('agentd').run({ plan_id = vim.b[b].agentd_plan })
end

function actions.regenerate(b)
  local plan_id = vim.b[b].agentd_plan
  vim.ui.input({ prompt = 'agentd: what should change in the plan? ' }, function(feedback)
    if not feedback or feedback == '' then
      return
    end
    local p, err = client.request_sync(nil, 'agentd/plan/regenerate', { planId = plan_id, feedback = feedback }, 300000)
    if p then
      M.plans[plan_id] = p
      M.render(plan_id, {})
    else
      notify('agentd: regenerate failed: ' .. err, vim.log.levels.ERROR)
    end
  end)
end

--- Shows a plan in its buffer (made on first use), in the current window.
function M.show(plan, problems)
  M.plans[plan.id] = plan
  state.last_plan = plan.id
  local b = bufs[plan.id]
  if not b or not api.nvim_buf_is_valid(b) then
    b = api.nvim_create_buf(true, true)
    api.nvim_buf_set_name(b, 'agentd://plan/' .. plan.id)
    vim.bo[b].buftype = 'nofile'
    vim.bo[b].bufhidden = 'hide'
    vim.bo[b].swapfile = false
    vim.bo[b].filetype = 'agentdplan'
    vim.b[b].agentd_plan = plan.id
    bufs[plan.id] = b
    for name, lhs in pairs(config.options.plan_keymaps or {}) do
      if lhs and actions[name] then
        vim.keymap.set('n', lhs, function()
          actions[name](b)
        end, { buffer = b, nowait = true, desc = 'agentd plan: ' .. name })
      end
    end
    -- The review keys work here too: ga/gr (gA/gR) decide the changes of
    -- the step on the cursor's line, ]h/[h go to the hunks.
    require('agentd.review').set_keymaps(b, true)
  end
  api.nvim_win_set_buf(0, b)
  M.render(plan.id, problems or {})
  return b
end

--- Plan buffer number for a plan id (tests and scripts).
function M.bufnr(plan_id)
  return bufs[plan_id]
end

--- Loads a plan file (JSON or YAML) and shows it. Returns the plan id, or
--- nil and the error. An invalid plan is shown with its problems.
function M.open(path)
  local uri = vim.uri_from_fname(vim.fn.fnamemodify(path, ':p'))
  local c = client.current()
  if not c then
    return nil, 'agentd is not running'
  end
  local full = vim.fn.fnamemodify(path, ':p')
  local plan, err, e = client.request_sync(c, 'agentd/plan/load', { uri = uri })
  if not plan and e and e.code == -32004 and vim.fn.filereadable(full) == 1 then
    -- The server reads plan files inside the workspace only; one the user
    -- named outside it is sent as its text (the server bounds and parses it).
    local text = table.concat(vim.fn.readfile(full, 'b'), '\n')
    plan, err, e = client.request_sync(c, 'agentd/plan/load', { text = text, name = full })
  end
  if plan then
    M.show(plan)
    return plan.id
  end
  if e and e.code == -32001 then
    -- Show the steps as written, with every problem on its step.
    local ok, raw = pcall(function()
      return vim.json.decode(table.concat(vim.fn.readfile(path), '\n'), { luanil = { object = true, array = true } })
    end)
    if ok and type(raw) == 'table' then
      raw.id = raw.id or ('invalid:' .. vim.fn.fnamemodify(path, ':t'))
      raw.version = raw.version or 0
      raw.steps = raw.steps or {}
      M.show(raw, e.data and e.data.problems or {})
    end
    notify('agentd: ' .. path .. ' is not a valid plan: ' .. err, vim.log.levels.ERROR)
    return nil, err
  end
  notify('agentd: cannot open plan ' .. path .. ': ' .. (err or '?'), vim.log.levels.ERROR)
  return nil, err
end

function M.create(request)
  local c = client.current()
  if not c then
    return nil
  end
  local plan, err = client.request_sync(c, 'agentd/plan/create', { request = request }, 300000)
  if not plan then
    notify('agentd: ' .. err, vim.log.levels.ERROR)
    return nil, err
  end
  M.show(plan)
  return plan.id
end

local pending_render = false
function M.on_run_event(run_id)
  if pending_render then
    return
  end
  pending_render = true
  vim.schedule(function()
    pending_render = false
    local pid = M.run_plan[run_id]
    if pid then
      M.render(pid)
    end
  end)
end

function M.refresh_from_server(plan_id)
  if plan_id and bufs[plan_id] then
    reload(plan_id)
  end
end

return M
