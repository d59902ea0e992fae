-- Handlers for what the server sends. Server -> client requests run in a
-- coroutine (Neovim's rpc layer wraps them), so an answer that needs the
-- user (vim.ui.select) waits without blocking the editor.
local state = require('agentd.state')

local M = {}
local function notify(msg, level, opts)
  return require('agentd.notify').notify(msg, level, opts)
end

--- Waits for an async callback inside a server request's coroutine. Works
--- both with UIs that call back later and with ones that call back at once.
local function await(start)
  local co = coroutine.running()
  local done, value = false, nil
  local waiting = false
  start(function(v)
    done, value = true, v
    if waiting then
      coroutine.resume(co)
    end
  end)
  if not done then
    waiting = true
    coroutine.yield()
  end
  return value
end
M.await = await

-- Per buffer: changedtick after the last edit the agent applied, and whether
-- the user typed since the last save (their own unsaved edits).
M.agent_tick = {}
M.user_dirty = {}

--- Whether bufnr holds unsaved edits the user typed (not the agent's).
function M.has_user_edits(bufnr)
  if not vim.api.nvim_buf_is_loaded(bufnr) or not vim.bo[bufnr].modified then
    return false
  end
  if M.user_dirty[bufnr] then
    return true
  end
  local tick = M.agent_tick[bufnr]
  return tick == nil or vim.api.nvim_buf_get_changedtick(bufnr) ~= tick
end

function M.on_write(bufnr)
  M.agent_tick[bufnr] = nil
  M.user_dirty[bufnr] = nil
end

local function apply_edit(_, params, ctx)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  local bufs = {}
  for _, dc in ipairs(params.edit.documentChanges or {}) do
    if dc.textDocument and dc.textDocument.uri then
      local b = vim.uri_to_bufnr(dc.textDocument.uri)
      -- The user typed after the server computed this edit (their changes
      -- are on the way to it). Neovim would skip the edit yet answer
      -- "applied"; say no instead, so the hunk stays to be accepted again.
      local v = dc.textDocument.version
      local have = vim.lsp.util.buf_versions[b]
      if v and v ~= vim.NIL and v > 0 and have and have > v then
        return { applied = false, failureReason = 'the buffer changed while the edit was on its way (you were typing); accept the hunk again' }
      end
      bufs[#bufs + 1] = b
      if vim.api.nvim_buf_is_loaded(b) and M.has_user_edits(b) then
        M.user_dirty[b] = true
      end
    end
  end
  for uri, _ in pairs(params.edit.changes or {}) do
    bufs[#bufs + 1] = vim.uri_to_bufnr(uri)
  end
  local ok, err = pcall(vim.lsp.util.apply_workspace_edit, params.edit, client and client.offset_encoding or 'utf-16')
  if ok then
    for _, b in ipairs(bufs) do
      if vim.api.nvim_buf_is_loaded(b) then
        M.agent_tick[b] = vim.api.nvim_buf_get_changedtick(b)
      end
    end
    require('agentd.review').after_agent_edit(bufs)
  end
  return { applied = ok, failureReason = (not ok) and tostring(err) or nil }
end

local function documents_save(_, params)
  local saved = {}
  for _, uri in ipairs(params.uris or {}) do
    local b = vim.uri_to_bufnr(uri)
    if vim.api.nvim_buf_is_loaded(b) then
      local save = true
      if M.user_dirty[b] then
        local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(b), ':~:.')
        local choice = await(function(cb)
          vim.ui.select({ 'Save it', 'Leave it unsaved' }, {
            prompt = ('agentd: %s also holds your unsaved edits. %s. Save?'):format(name, params.reason or ''),
          }, cb)
        end)
        save = choice == 'Save it'
      end
      if save then
        local ok = pcall(vim.api.nvim_buf_call, b, function()
          vim.cmd('silent noautocmd write!')
        end)
        if ok then
          M.on_write(b)
          -- noautocmd skipped the LSP didSave; send it so the server knows.
          for _, c in ipairs(vim.lsp.get_clients({ bufnr = b, name = 'agentd' })) do
            c.notify('textDocument/didSave', { textDocument = { uri = uri } })
          end
          saved[#saved + 1] = uri
        end
      end
    end
  end
  return { saved = saved }
end

--- agentd/documents/reload: the daemon wrote these files on disk (binary
--- or not UTF-8: a buffer cannot hold their bytes); each buffer without
--- unsaved changes is read again from disk.
local function documents_reload(_, params)
  local reloaded = {}
  for _, uri in ipairs(params.uris or {}) do
    local b = vim.uri_to_bufnr(uri)
    if vim.api.nvim_buf_is_loaded(b) and not vim.bo[b].modified then
      local ok = pcall(vim.api.nvim_buf_call, b, function()
        vim.cmd('silent edit!')
      end)
      if ok then
        reloaded[#reloaded + 1] = uri
      end
    end
  end
  return { reloaded = reloaded }
end

local kind_names = {
  allow_once = 'Allow once',
  allow_always = 'Always allow',
  reject_once = 'Reject once',
  reject_always = 'Always reject',
}

-- Approvals dismissed without an answer: they wait for :Agent approve.
-- { params, resume } in arrival order.
M.pending_approvals = {}

--- A prompt was dismissed: waits (in the server request's coroutine) until
--- :Agent approve asks again ('ask') or the run ends ('cancel'). note is
--- said once the prompt's screen is redrawn (an echo on top of it would
--- stop at a "Press ENTER" prompt).
function M.wait_for_answer(run_id, note)
  local entry = { params = { runId = run_id } }
  M.pending_approvals[#M.pending_approvals + 1] = entry
  vim.cmd.redrawstatus({ bang = true, mods = { emsg_silent = true } })
  vim.defer_fn(function()
    if not entry.done then
      require('agentd.notify').notify(note, vim.log.levels.WARN)
    end
  end, 300)
  local again = await(function(cb)
    entry.resume = cb
  end)
  entry.done = true
  for i, e in ipairs(M.pending_approvals) do
    if e == entry then
      table.remove(M.pending_approvals, i)
      break
    end
  end
  return again
end

local LATER = { optionId = false, name = 'Decide later (the step keeps waiting; :Agent approve)' }

--- An approval of a run the open chat shows is asked in the chat's
--- transcript, under its turn (agentd.chat draws the block and maps its
--- keys), not in a picker; :Agent approve still asks it in the picker.
--- Whichever answers first answers, the other is dropped (the block goes;
--- a picker's later choice is ignored). Only an explicit choice answers:
--- an ignored block or a dismissed picker leaves the step waiting, and the
--- run's end cancels it (= reject once).
local function approval_in_chat(chat, p, lines, items)
  local entry = { params = p }
  M.pending_approvals[#M.pending_approvals + 1] = entry
  vim.cmd.redrawstatus({ bang = true, mods = { emsg_silent = true } })
  local choice = await(function(cb)
    local answered = false
    local function answer(v)
      if answered then
        return false
      end
      answered = true
      cb(v)
      return true
    end
    entry.resume = function(what)
      if what == 'cancel' then
        return answer('cancel')
      end
      vim.ui.select(items, {
        prompt = table.concat(lines, '\n') .. '\n',
        kind = 'agentd.approval',
        format_item = function(o)
          return o.name or kind_names[o.kind] or o.optionId
        end,
      }, function(c)
        if c and c.optionId then
          answer(c)
        end
      end)
    end
    chat.show_approval(p, answer)
  end)
  for i, e in ipairs(M.pending_approvals) do
    if e == entry then
      table.remove(M.pending_approvals, i)
      break
    end
  end
  chat.hide_approval(p)
  vim.cmd.redrawstatus({ bang = true, mods = { emsg_silent = true } })
  if type(choice) ~= 'table' or not choice.optionId then
    return { outcome = 'cancelled' }
  end
  state.append_log(('[%s] step %s: %s'):format(p.runId or '?', p.stepId or '?', choice.name or choice.optionId))
  return { outcome = 'selected', optionId = choice.optionId }
end

--- Asks the user. An approval is answered only by an explicit choice:
--- dismissing the prompt (<Esc>, or the <CR> that closes a "Press ENTER"
--- message landing on it) is not a denial, and the step keeps waiting for
--- :Agent approve. A high-risk approval's first item (a picker's default)
--- is "Decide later", never an allow.
local function approval_request(_, p)
  local lines = { ('agentd: %s (step %s, %s risk)'):format(p.title or 'approval', p.stepId or '?', p.risk or '?') }
  if p.command and p.command ~= '' then
    lines[#lines + 1] = '  command: ' .. p.command
    lines[#lines + 1] = '  in: ' .. (p.cwd and p.cwd ~= '' and p.cwd or '.')
  end
  if p.category == 'delete' then
    lines[#lines + 1] = '  deletes: ' .. ((p.detail and p.detail ~= '') and p.detail or p.title or '?')
  elseif p.detail and p.detail ~= '' then
    lines[#lines + 1] = '  ' .. p.detail
  end
  state.append_log(table.concat(lines, '\n'))
  local items = vim.deepcopy(p.options or {})
  if p.risk == 'high' then
    table.insert(items, 1, LATER)
  else
    items[#items + 1] = LATER
  end
  local chat = package.loaded['agentd.chat'] and require('agentd.chat')
  if chat and chat.claims(p) then
    return approval_in_chat(chat, p, lines, items)
  end
  while true do
    local choice = await(function(cb)
      vim.ui.select(items, {
        prompt = table.concat(lines, '\n') .. '\n',
        kind = 'agentd.approval',
        format_item = function(o)
          return o.name or kind_names[o.kind] or o.optionId
        end,
      }, cb)
    end)
    if choice and choice.optionId then
      state.append_log(('[%s] step %s: %s'):format(p.runId or '?', p.stepId or '?', choice.name or choice.optionId))
      return { outcome = 'selected', optionId = choice.optionId }
    end
    local again = M.wait_for_answer(p.runId, ('agentd: step %s still waits for your approval: :Agent approve'):format(p.stepId or '?'))
    if again == 'cancel' then
      return { outcome = 'cancelled' }
    end
  end
end

--- :Agent approve: asks again the oldest approval left unanswered.
function M.approve()
  local e = M.pending_approvals[1]
  if not e then
    require('agentd.notify').notify('agentd: no approval is waiting', vim.log.levels.INFO)
    return false
  end
  e.resume('ask')
  return true
end

--- The run ended (or, for run_id "plan", the planning the chat showed):
--- approvals it left waiting are no longer asked.
local function drop_approvals(run_id)
  for _, e in ipairs(vim.list_slice(M.pending_approvals, 1)) do
    if e.params.runId == run_id and e.resume then
      e.resume('cancel')
    end
  end
end
M.drop_approvals = drop_approvals

local function show_message_request(_, p)
  local actions = p.actions or {}
  if #actions == 0 then
    require('agentd.notify').notify('agentd: ' .. (p.message or ''), vim.log.levels.INFO)
    return vim.NIL
  end
  -- A question (retry/skip/abort a failed step, an input step's options)
  -- is answered only by an explicit choice too: dismissing it keeps it
  -- waiting for :Agent approve.
  while true do
    local choice = await(function(cb)
      vim.ui.select(actions, {
        prompt = p.message,
        format_item = function(a)
          return a.title
        end,
      }, cb)
    end)
    if choice then
      return choice
    end
    local again = M.wait_for_answer(p.runId, 'agentd: a question still waits for your answer: :Agent approve')
    if again == 'cancel' then
      return vim.NIL
    end
  end
end

local level_of = { vim.log.levels.ERROR, vim.log.levels.WARN, vim.log.levels.INFO, vim.log.levels.DEBUG }

local function run_did_change(_, p)
  local ev = p.event or {}
  local run_id = p.runId or ev.runId
  if p.state then
    if not state.run_id or state.run_id == run_id or p.state.status == 'running' then
      state.run, state.run_id = p.state, run_id
    end
    if p.state.planId then
      require('agentd.plan').run_plan[run_id] = p.state.planId
    end
  end
  local t = ev.type
  if ev.stepId and ev.status then
    state.set_step(run_id, ev.stepId, ev.status)
  end
  -- A step a remembered rule allowed says so (allowedBy: {ruleId, command?}).
  if ev.stepId and type(ev.allowedBy) == 'table' then
    state.set_allowed(run_id, ev.stepId, ev.allowedBy)
  end
  for _, st in ipairs(p.state and p.state.steps or {}) do
    if type(st.allowedBy) == 'table' then
      state.set_allowed(run_id, st.id, st.allowedBy)
    end
  end
  if t == 'stepStarted' and ev.stepId then
    state.set_step(run_id, ev.stepId, 'running')
  elseif t == 'stepFinished' and ev.stepId then
    state.set_step(run_id, ev.stepId, ev.status or 'completed')
    local by = state.allowed_note(run_id, ev.stepId)
    state.append_log(('[%s] step %s: %s%s'):format(run_id, ev.stepId, ev.status or 'completed', by and (' (' .. by .. ')') or ''))
    if require('agentd.config').options.notify_steps then
      notify(('agentd: step %s %s'):format(ev.stepId, ev.status or 'completed'), vim.log.levels.INFO)
    end
  elseif t == 'stepFailed' then
    state.set_step(run_id, ev.stepId, 'failed')
    state.append_log(('[%s] step %s failed: %s'):format(run_id, ev.stepId or '?', ev.error or ''))
    -- Whole: the reason names the files to act on (a dismissed question
    -- after it waits for :Agent approve, so a message on it answers nothing).
    notify(('agentd: step %s failed: %s'):format(ev.stepId or '?', ev.error or 'no reason given'), vim.log.levels.ERROR, { whole = true })
  elseif t == 'stepSkipped' or t == 'stepBlocked' then
    state.set_step(run_id, ev.stepId, t == 'stepSkipped' and 'skipped' or 'blocked')
    state.append_log(('[%s] step %s %s%s'):format(run_id, ev.stepId or '?', t == 'stepSkipped' and 'skipped' or 'blocked', ev.reason and (': ' .. ev.reason) or ''))
  elseif t == 'stepRetrying' then
    state.set_step(run_id, ev.stepId, 'retrying')
    local wait = ev.delayMs and (' in %.1f s'):format(ev.delayMs / 1000) or ''
    state.append_log(('[%s] step %s retrying%s (attempt %s): %s'):format(run_id, ev.stepId or '?', wait, tostring(ev.attempt or '?'), ev.error or ''))
    if require('agentd.config').options.notify_steps then
      notify(('agentd: step %s retrying%s: %s'):format(ev.stepId or '?', wait, ev.error or ''), vim.log.levels.INFO)
    end
  elseif t == 'stepOutput' and ev.text then
    state.append_log(ev.text)
  elseif t == 'changeProposed' and ev.changeId then
    state.append_log(('[%s] step %s proposes change %s'):format(run_id, ev.stepId or '?', ev.changeId))
    -- The server sends the event once the set is registered, with the set
    -- (clientFeatures.inlineChanges). Without one there is nothing to
    -- review: a dry run, review "none", or an approval refused.
    if p.change then
      require('agentd.review').proposed(p.change)
    end
  elseif t == 'approvalPending' and ev.stepId then
    state.set_step(run_id, ev.stepId, 'waiting')
  elseif t == 'planUpdated' then
    require('agentd.plan').refresh_from_server(p.state and p.state.planId)
  elseif t == 'runFinished' then
    drop_approvals(run_id)
    local s = p.state or {}
    state.append_log(('[%s] run %s'):format(run_id, s.status or 'finished'))
    local lvl = (s.status == 'completed') and vim.log.levels.INFO or vim.log.levels.WARN
    local msg = ('agentd: run %s %s: %d/%d steps%s'):format(run_id, s.status or 'finished', s.completedSteps or 0, s.totalSteps or 0, (s.failedSteps or 0) > 0 and (', ' .. s.failedSteps .. ' failed') or '')
    -- The server names the accepted changes still only in buffers (its
    -- rule, its words); the plugin adds how to save here.
    state.unsaved = p.unsaved or {}
    if #state.unsaved > 0 then
      msg = msg .. '\n' .. (p.note or 'accepted changes are not on disk yet') .. ' (:wa saves them)'
      lvl = vim.log.levels.WARN
    end
    -- Whole: the files must be read to act on them (the run is over, its
    -- approvals dropped above: no prompt of it waits behind this).
    notify(msg, lvl, { whole = #state.unsaved > 0 or nil })
  end
  require('agentd.plan').on_run_event(run_id)
  if package.loaded['agentd.chat'] then
    require('agentd.chat').on_run_event(run_id, p)
  end
  vim.cmd.redrawstatus({ bang = true, mods = { emsg_silent = true } })
end

local function changes_did_change(_, p)
  require('agentd.review').on_did_change(p)
  if package.loaded['agentd.chat'] then
    require('agentd.chat').on_changes()
  end
end

-- The chat buffer (agentd.chat) draws these; without it open, nothing to do.
local function chat_note(name)
  return function(_, p)
    if package.loaded['agentd.chat'] then
      require('agentd.chat')[name](p)
    end
  end
end

local function log_message(_, p)
  state.append_log(p.message or '')
end

local function show_message(_, p)
  notify('agentd: ' .. (p.message or ''), level_of[p.type or 3] or vim.log.levels.INFO)
end

function M.table()
  return {
    ['workspace/applyEdit'] = apply_edit,
    ['agentd/documents/save'] = documents_save,
    ['agentd/documents/reload'] = documents_reload,
    ['agentd/approval/request'] = approval_request,
    ['window/showMessageRequest'] = show_message_request,
    ['agentd/run/didChange'] = run_did_change,
    ['agentd/changes/didChange'] = changes_did_change,
    ['window/logMessage'] = log_message,
    ['window/showMessage'] = show_message,
    ['agentd/chat/changed'] = chat_note('on_changed'),
    ['agentd/chat/stream'] = chat_note('on_stream'),
  }
end

return M
