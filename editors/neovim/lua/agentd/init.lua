-- agentd for Neovim: the Lua API (:help agentd-api). The :Agent command
-- calls these functions; scripts and tests use them too.
-- Only the options load with setup(); the rest loads on first use, so the
-- plugin adds next to nothing to Neovim's startup.
local config = require('agentd.config')

local M = {}
local function notify(msg, level)
  return require('agentd.notify').notify(msg, level)
end

local lazy = { client = 'agentd.client', state = 'agentd.state' }
local client = setmetatable({}, { __index = function(_, k) return require(lazy.client)[k] end })
local state = setmetatable({}, {
  __index = function(_, k) return require(lazy.state)[k] end,
  __newindex = function(_, k, v) require(lazy.state)[k] = v end,
})

--- A file buffer was read: attach it (and draw its hunks) once the editor
--- is idle, so opening a file never waits for the server.
local function on_buf(buf)
  vim.schedule(function()
    if not vim.api.nvim_buf_is_valid(buf) then
      return
    end
    client.on_buf(buf)
    if package.loaded['agentd.review'] then
      require('agentd.review').draw(buf)
    end
  end)
end

local group

--- Configures the plugin (:help agentd-setup). Safe to call again.
function M.setup(opts)
  local before = config.configured and vim.deepcopy(config.options.approval) or nil
  config.set(opts)
  if package.loaded['agentd.client'] and not vim.deep_equal(before, config.options.approval) then
    for _, c in ipairs(vim.lsp.get_clients({ name = 'agentd' })) do
      require('agentd.client').send_approval(c)
    end
  end
  config.highlights()
  group = vim.api.nvim_create_augroup('agentd', { clear = true })
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile' }, {
    group = group,
    callback = function(ev)
      on_buf(ev.buf)
    end,
  })
  vim.api.nvim_create_autocmd('BufWritePost', {
    group = group,
    callback = function(ev)
      if package.loaded['agentd.handlers'] then
        require('agentd.handlers').on_write(ev.buf)
      end
      -- A new file is shown to the server once it is on disk.
      on_buf(ev.buf)
    end,
  })
  vim.api.nvim_create_autocmd({ 'BufWipeout', 'BufUnload' }, {
    group = group,
    callback = function(ev)
      if package.loaded['agentd.review'] then
        require('agentd.review').forget(ev.buf)
      end
    end,
  })
  -- Hunks of a hidden buffer are drawn when it is shown; review keymaps
  -- are set in the buffer the user enters.
  vim.api.nvim_create_autocmd('BufWinEnter', {
    group = group,
    callback = function(ev)
      if package.loaded['agentd.review'] then
        require('agentd.review').on_win_enter(ev.buf)
      end
    end,
  })
  vim.api.nvim_create_autocmd('BufEnter', {
    group = group,
    callback = function(ev)
      if package.loaded['agentd.review'] then
        require('agentd.review').on_enter(ev.buf)
      end
    end,
  })
  vim.api.nvim_create_autocmd('ColorScheme', {
    group = group,
    callback = config.highlights,
  })
  vim.api.nvim_create_autocmd('LspProgress', {
    group = group,
    callback = function(ev)
      local c = vim.lsp.get_client_by_id(ev.data.client_id)
      if not c or c.name ~= 'agentd' then
        return
      end
      local v = ev.data.params.value or {}
      state.progress = v.kind ~= 'end' and (v.message or v.title) or nil
      vim.cmd.redrawstatus({ bang = true, mods = { emsg_silent = true } })
    end,
  })
  -- Buffers already open when setup runs (lazy loading).
  if config.options.auto_start then
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(b) and vim.api.nvim_buf_get_name(b) ~= '' then
        on_buf(b)
      end
    end
  end
  return config.options
end

--- Loads a plan file and shows it in the plan buffer. Returns the plan id.
function M.open_plan(path)
  path = path or vim.api.nvim_buf_get_name(0)
  return require('agentd.plan').open(path)
end

--- Asks the model for a plan and shows it. Returns the plan id.
function M.plan(request)
  return require('agentd.plan').create(request)
end

--- Starts a run of a plan (opts.plan_id, default the last one opened) with
--- the configured review mode. Returns the run id.
function M.run(opts)
  opts = opts or {}
  local plan_id = opts.plan_id or vim.b.agentd_plan or state.last_plan
  if not plan_id then
    notify('agentd: no plan to run: open one first (:Agent open plan.json or :Agent plan {request})', vim.log.levels.WARN)
    return nil
  end
  local options = vim.tbl_extend('force', { review = config.options.review }, config.options.run or {}, opts.options or {})
  local res, err, e = client.request_sync(nil, 'agentd/run/start', { planId = plan_id, options = options })
  if not res and e and e.code == -32010 and type(e.data) == 'table' and e.data.runId then
    -- One run at a time per workspace: the user picks what to do with the
    -- run that is still going (the server's rule; nothing is orphaned).
    local other, status = e.data.runId, e.data.status or 'running'
    -- The live status (the error's can lag a pause just made).
    local live = client.request_sync(nil, 'agentd/run/get', { runId = other }, 5000)
    if type(live) == 'table' and live.status then
      status = live.status
    end
    local choices = {
      { id = 'resume', label = ('Resume run %s (%s)'):format(other, status) },
      { id = 'cancel', label = ('Cancel run %s, then start this plan'):format(other) },
      { id = 'concurrent', label = 'Start this plan beside it (a second run)' },
      { id = 'nothing', label = 'Do nothing' },
    }
    if status ~= 'paused' then
      table.remove(choices, 1)
    end
    vim.ui.select(choices, {
      prompt = ('agentd: run %s is %s.'):format(other, status),
      kind = 'agentd.run_conflict',
      format_item = function(c)
        return c.label
      end,
    }, function(c)
      if not c or c.id == 'nothing' then
        return
      end
      state.run_id = other
      if c.id == 'resume' then
        M.control('resume')
      elseif c.id == 'cancel' then
        if M.control('cancel') then
          M.run(opts)
        end
      else
        M.run(vim.tbl_extend('force', opts, { options = vim.tbl_extend('force', opts.options or {}, { concurrent = true }) }))
      end
    end)
    return nil, err
  end
  if not res then
    notify('agentd: run failed to start: ' .. err, vim.log.levels.ERROR)
    return nil, err
  end
  -- The run's first notifications may have arrived before this answer.
  if state.run_id ~= res.runId or not state.run then
    state.run_id = res.runId
    state.run = { runId = res.runId, planId = plan_id, status = 'running', progress = 0, currentSteps = {} }
  end
  state.start_snapshot = res.snapshotId
  require('agentd.plan').run_plan[res.runId] = plan_id
  state.append_log(('[%s] run started (plan %s, snapshot %s)'):format(res.runId, plan_id, res.snapshotId or ''))
  return res.runId, res.snapshotId
end

local function run_id_or_warn()
  if not state.run_id then
    notify('agentd: no run yet (:Agent run)', vim.log.levels.WARN)
  end
  return state.run_id
end

--- Pause, resume or cancel the current run; retry or skip one of its steps.
function M.control(what, step_id)
  local run_id = run_id_or_warn()
  if not run_id then
    return nil
  end
  local method = ({ pause = 'agentd/run/pause', resume = 'agentd/run/resume', cancel = 'agentd/run/cancel', retry = 'agentd/run/retryStep', skip = 'agentd/run/skipStep' })[what]
  local params = { runId = run_id, stepId = step_id }
  local res, err = client.request_sync(nil, method, params)
  if not res then
    notify(('agentd: %s failed: %s'):format(what, err), vim.log.levels.ERROR)
    return nil, err
  end
  state.run = res
  vim.cmd.redrawstatus({ bang = true, mods = { emsg_silent = true } })
  return res
end

--- The current run: { run_id, status, progress, current_steps }.
function M.status()
  local r = state.run
  if not r then
    return { run_id = nil, status = 'idle', progress = 0, current_steps = {} }
  end
  return { run_id = state.run_id, status = r.status, progress = r.progress or 0, current_steps = r.currentSteps or {} }
end

--- The buffer's pending or stale hunks: { id, change_id, status, lnum, end_lnum }.
function M.hunks(bufnr)
  return require('agentd.review').hunks(bufnr)
end

--- Accept at the cursor: scope 'hunk' (default), 'file' or 'all'.
function M.accept(scope)
  return require('agentd.review').accept(scope)
end

--- Reject at the cursor: scope 'hunk' (default), 'file' or 'all'.
function M.reject(scope, reason)
  return require('agentd.review').reject(scope, reason)
end

--- Reloads the clean buffers of the files a restore changed on disk and
--- tells what happened (conflicts: buffers with the user's unsaved edits,
--- left alone). what: 'restored', 'undid run ...'.
local function after_restore(res, what, hint)
  res.conflicts = res.conflicts or {}
  local n = 0
  for _, list in ipairs({ res.restored or {}, res.created or {}, res.deleted or {} }) do
    for _, u in ipairs(list) do
      n = n + 1
      local b = vim.fn.bufnr(vim.uri_to_fname(u))
      if b > 0 and vim.api.nvim_buf_is_loaded(b) and not vim.bo[b].modified then
        -- Reload only when the disk differs from the buffer (a buffer the
        -- server restored itself already matches).
        local path = vim.uri_to_fname(u)
        local disk = vim.uv.fs_stat(path) and table.concat(vim.fn.readfile(path, 'b'), '\n') or nil
        local text = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n') .. (vim.bo[b].eol and '\n' or '')
        if disk ~= text then
          vim.api.nvim_buf_call(b, function()
            vim.cmd('silent edit!')
          end)
        end
      end
    end
  end
  local msg = ('agentd: %s: %d file%s'):format(what, n, n == 1 and '' or 's')
  if #res.conflicts > 0 then
    local names = {}
    for _, cf in ipairs(res.conflicts) do
      names[#names + 1] = vim.fn.fnamemodify(vim.uri_to_fname(cf.uri), ':~:.') .. ': ' .. (cf.message or '')
    end
    notify(msg .. '; left alone: ' .. table.concat(names, '; '), vim.log.levels.WARN)
  else
    notify(msg .. (hint or ''), vim.log.levels.INFO)
  end
  return res
end

--- Restores a snapshot. The server decides what it may change: it puts
--- the restored text into open buffers (through workspace/applyEdit, then
--- agentd/documents/save) and reports a buffer with the user's unsaved edits
--- as a conflict, leaving it alone. Clean buffers of files it changed on disk
--- are reloaded here. Returns the server's restore result.
function M.restore(snapshot_id, opts)
  local c = client.current()
  if not c then
    return nil
  end
  local res, err = client.request_sync(c, 'agentd/snapshot/restore', vim.tbl_extend('force', { id = snapshot_id }, opts or {}))
  if not res then
    notify('agentd: restore failed: ' .. err, vim.log.levels.ERROR)
    return nil, err
  end
  return after_restore(res, 'restored', (res.undoSnapshotId and res.undoSnapshotId ~= '') and ' (:Agent undo-restore puts them back)' or '')
end

--- Undoes a run (agentd/undo/run): the newest not yet undone, or
--- opts.run_id. The daemon reverts what the agent wrote and keeps the
--- user's lines; when the user changed the agent's own lines the undo
--- changes nothing and vim.ui.select offers the choices (opts.ask = false:
--- only say them). opts: { run_id, on_conflict = 'keep'|'overwrite',
--- dry_run = true, ask = false }. Returns the result and the raw answer.
--- The journal is the server's: the plugin keeps no undo state.
function M.undo(opts)
  opts = opts or {}
  return require('agentd.undo').undo('run', opts.run_id or opts.runId, opts)
end

--- Undoes the newest restore or undo not yet undone (agentd/undo/restore),
--- or opts.id; the same opts and choices as undo().
function M.undo_restore(opts)
  opts = opts or {}
  return require('agentd.undo').undo('restore', opts.id, opts)
end

--- A short string for the statusline: run status and progress, pending
--- hunks. Empty when there is nothing to say.
function M.statusline()
  if not package.loaded['agentd.state'] then
    return ''
  end
  return state.statusline()
end

--- Loads pending change sets and fills the quickfix list.
function M.review()
  return require('agentd.review').review()
end

return M
