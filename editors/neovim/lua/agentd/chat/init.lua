-- :Agent chat: the core's conversation (agentd/chat/*) in a Markdown
-- buffer. Layout as avante.nvim's: the transcript in a split (read-only,
-- drawn from agentd/chat/load and drawn again on agentd/chat/changed), and
-- a small input buffer below it where the message is written and sent
-- (<CR> in normal mode, <C-s> in insert mode). A message is a plan turn
-- (agentd/plan/create with the chatId), or a question when it starts with
-- `?` (agentd/chat/ask, its answer streamed in as agentd/chat/stream
-- arrives). :help agentd-chat.
local client = require('agentd.client')
local render = require('agentd.chat.render')
local context = require('agentd.chat.context')

local api = vim.api
local M = {}

local function notify(msg, level, opts)
  return require('agentd.notify').notify(msg, level, opts)
end

-- One chat at a time (the latest opened).
local S = {
  chat_id = nil,
  root = nil,
  view = nil, -- agentd/chat/load's result
  changes = {}, -- [runId] = { ChangeSet } (agentd/changes/list)
  pending = nil, -- { kind = 'plan'|'ask'|'revise', request, text, chips, id, client, cancelled }
  buf = nil, -- the transcript
  input = nil, -- the input buffer
  origin = nil, -- the buffer the chat is for (#buffer, #selection, #diagnostics)
  selection = nil, -- the selection :'<,'>Agent chat gave
  built = nil, -- the last render.build result
  loading = nil, -- the client a chat/load is in flight on
  again = false,
  approvals = {}, -- { { p = ApprovalRequestParams, answer = fn(option) } } asked in the chat
  output = {}, -- [runId] = { [stepId] = text } the commands' output (stepOutput, or run/get)
  output_asked = {}, -- [runId] = true once agentd/run/get was asked for a past run's output
  model = nil, -- agentd/model/get's result (the header line)
  starting = nil, -- the planId of the turn whose run/start is being answered
  queue = {}, -- { { message, ask, r } } sent one by one once nothing is going
}
M._state = S

function M.root()
  return S.root or client.root_of(0)
end

local function cl()
  return client.get(S.root) or client.current()
end

local function is_chat_buf(b)
  return b == S.buf or b == S.input
end

-- Drawing ---------------------------------------------------------------

local function wins_of(b)
  local out = {}
  if b and api.nvim_buf_is_valid(b) then
    for _, w in ipairs(api.nvim_list_wins()) do
      if api.nvim_win_get_buf(w) == b then
        out[#out + 1] = w
      end
    end
  end
  return out
end

local function meta_at_cursor()
  local b = S.built
  if not b or api.nvim_get_current_buf() ~= S.buf then
    return {}
  end
  return b.meta[api.nvim_win_get_cursor(0)[1]] or {}
end

--- The fold level of a transcript line (its 'foldexpr').
function M.foldexpr(lnum)
  local b = S.built
  return b and b.folds[lnum] or '0'
end

local function set_win_opts(w)
  vim.wo[w].foldmethod = 'expr'
  vim.wo[w].foldexpr = "v:lua.require'agentd.chat'.foldexpr(v:lnum)"
  vim.wo[w].foldlevel = 0
  vim.wo[w].foldenable = true
  vim.wo[w].wrap = true
  vim.wo[w].linebreak = true
  vim.wo[w].number = false
  vim.wo[w].relativenumber = false
end

--- A fold's name that survives a redraw: its turn, what it folds and its
--- line within the turn.
local function fold_key(built, lnum)
  local m = built.meta[lnum] or {}
  local start = (built.turn_start or {})[m.turn or 0] or 0
  return ('%d:%s:%d'):format(m.turn or 0, m.kind or 'fold', lnum - start)
end

--- Draws the transcript from the loaded chat, the changes and what is
--- pending; keeps the cards the user unfolded open, and a window that
--- showed the end shows the end again.
function M.draw()
  local b = S.buf
  if not b or not api.nvim_buf_is_valid(b) then
    return
  end
  local old = S.built
  local open, follow = {}, {}
  for _, w in ipairs(wins_of(b)) do
    local at_end = api.nvim_win_get_cursor(w)[1] >= api.nvim_buf_line_count(b) - 1
    follow[w] = at_end and 'end' or api.nvim_win_get_cursor(w)
    if old then
      api.nvim_win_call(w, function()
        for lnum, expr in pairs(old.folds) do
          if expr == '>1' and vim.fn.foldclosed(lnum) == -1 then
            open[fold_key(old, lnum)] = true
          end
        end
      end)
    end
  end
  local approvals = {}
  for i, a in ipairs(S.approvals) do
    approvals[#approvals + 1] = { p = a.p, id = i, turn = M.turn_of_run(a.p.runId) }
  end
  local built = render.build(S.view, {
    queue = S.queue,
    chat_id = S.chat_id,
    root = S.root,
    changes = S.changes,
    pending = S.pending,
    approvals = approvals,
    output = S.output,
    model = S.model and (S.model.configured and (S.model.model or '?') or 'none set') or nil,
  })
  -- Where each turn starts, to name a fold by its place in its turn.
  built.turn_start = {}
  for lnum, m in pairs(built.meta) do
    if m.turn and (not built.turn_start[m.turn] or lnum < built.turn_start[m.turn]) then
      built.turn_start[m.turn] = lnum
    end
  end
  S.built = built
  vim.bo[b].modifiable = true
  api.nvim_buf_set_lines(b, 0, -1, false, built.lines)
  vim.bo[b].modifiable = false
  vim.bo[b].modified = false
  for _, w in ipairs(wins_of(b)) do
    api.nvim_win_call(w, function()
      vim.cmd('silent! normal! zX')
      for lnum, expr in pairs(built.folds) do
        if expr == '>1' and open[fold_key(built, lnum)] then
          vim.cmd(('silent! %dfoldopen'):format(lnum))
        end
      end
      local n = api.nvim_buf_line_count(b)
      if follow[w] == 'end' then
        api.nvim_win_set_cursor(w, { n, 0 })
      elseif follow[w] then
        api.nvim_win_set_cursor(w, { math.min(follow[w][1], n), 0 })
      end
    end)
  end
end

--- Loads the chat (agentd/chat/load) and its runs' changes
--- (agentd/changes/list), then draws. One load at a time; a change told
--- meanwhile loads again after it.
function M.refresh()
  if not S.chat_id then
    return
  end
  -- A load in flight on a daemon that stopped since is never answered.
  if S.loading and not S.loading.is_stopped() then
    S.again = true
    return
  end
  local c = cl()
  if not c then
    return
  end
  S.loading = c
  local id = S.chat_id
  client.request(c, 'agentd/chat/load', { chatId = id }, function(err, view, e)
    if id ~= S.chat_id then
      -- Another chat was opened meanwhile: load that one.
      S.loading, S.again = nil, false
      M.refresh()
      return
    end
    if err then
      S.loading = nil
      if e and e.code == -32003 then
        notify(('agentd: chat %s is gone (deleted?); :Agent chat new starts another, :Agent chat list shows the chats'):format(id), vim.log.levels.WARN)
      else
        notify('agentd: chat: ' .. err, vim.log.levels.ERROR)
      end
      return
    end
    S.view = view
    -- The turn being made is in the chat now (the server records it before
    -- it answers the request): its card replaces the "making a plan…" echo,
    -- and its keys work at once, whatever comes first, the chat's news or
    -- the answer.
    local pd = S.pending
    if pd and (pd.cancelled or pd.kind == 'plan') and #(view.turns or {}) > (pd.turns_before or 0) then
      S.pending = nil
    end
    client.request(c, 'agentd/changes/list', vim.empty_dict(), function(_, list)
      S.loading = nil
      if id ~= S.chat_id then
        S.again = false
        M.refresh()
        return
      end
      local by = {}
      for _, cs in ipairs(type(list) == 'table' and list or {}) do
        if cs.runId then
          by[cs.runId] = by[cs.runId] or {}
          table.insert(by[cs.runId], cs)
        end
      end
      S.changes = by
      M.draw()
      M.flush_queue()
      M.load_outputs(c)
      M.load_model(c)
      if S.again then
        S.again = false
        M.refresh()
      end
    end)
  end)
end

--- The model in force (agentd/model/get), for the header line.
function M.load_model(c)
  c = c or cl()
  if not c then
    return
  end
  client.request(c, 'agentd/model/get', vim.empty_dict(), function(err, info)
    if not err and type(info) == 'table' then
      M.on_model(info)
    end
  end)
end

--- The model was set (agentd/model/set's answer, or model/get's).
function M.on_model(info)
  local before = S.model and S.model.model
  S.model = info
  if before ~= info.model or not S.built then
    M.draw()
  end
end

--- m in the transcript: :Agent model; the header line shows the model
--- chosen once it is set.
function M.pick_model()
  require('agentd.model').command({})
  -- A picker that answered at once has set it already; one that answers
  -- later tells on_model through model.lua.
  M.load_model()
end

local MAX_OUTPUT = 16000

local function add_output(run_id, step_id, text)
  S.output[run_id] = S.output[run_id] or {}
  local o = (S.output[run_id][step_id] or '') .. text
  if #o > MAX_OUTPUT then
    -- The end is what tells how a command went; the start goes, at a line.
    o = o:sub(#o - MAX_OUTPUT + 1):gsub('^[^\n]*\n', '', 1)
  end
  S.output[run_id][step_id] = o
end

--- The output of the commands of the chat's past runs (a resumed chat, a
--- run made elsewhere): asked once per run with agentd/run/get, its steps'
--- output (stdout and stderr).
function M.load_outputs(c)
  for _, t in ipairs(S.view and S.view.turns or {}) do
    local rid = t.runId
    if rid and t.status ~= 'running' and not S.output_asked[rid] and not S.output[rid] then
      S.output_asked[rid] = true
      client.request(c, 'agentd/run/get', { runId = rid }, function(err, st)
        if err or type(st) ~= 'table' or S.output[rid] then
          return
        end
        local any = false
        for _, step in ipairs(st.steps or {}) do
          local o = step.output
          if type(o) == 'table' then
            local text = (type(o.stdout) == 'string' and o.stdout or '') .. (type(o.stderr) == 'string' and o.stderr or '')
            if text ~= '' then
              add_output(rid, step.id, text)
              any = true
            end
          end
        end
        if any then
          M.draw()
        end
      end)
    end
  end
end

--- The turn (its index) whose run is run_id: by the run the chat has, or
--- by the plan the run runs (known from runStarted, before the chat
--- reloads). nil when none.
function M.turn_of_run(run_id)
  if not run_id or not S.view then
    return nil
  end
  for i, t in ipairs(S.view.turns or {}) do
    if t.runId == run_id then
      return i
    end
  end
  -- A run whose start is still being answered (an approval can come
  -- first) is the run of the turn being started.
  local plan_id = require('agentd.plan').run_plan[run_id] or S.starting
  for i, t in ipairs(S.view.turns or {}) do
    if plan_id and not t.runId and t.planId == plan_id then
      return i
    end
  end
  return nil
end

-- Approvals (handlers.lua asks the chat first) ------------------------------

--- Whether the chat asks this approval: its transcript is shown and the
--- approval is of one of its turns' runs, or of the plan it is making.
function M.claims(p)
  if not S.chat_id or #wins_of(S.buf) == 0 or type(p) ~= 'table' then
    return false
  end
  if p.runId == 'plan' then
    local pd = S.pending
    return pd ~= nil and not pd.cancelled and (pd.kind == 'plan' or pd.kind == 'revise')
  end
  return M.turn_of_run(p.runId) ~= nil
end

--- Draws the approval's block; answer(option) answers it (once).
function M.show_approval(p, answer)
  S.approvals[#S.approvals + 1] = { p = p, answer = answer }
  M.draw()
  notify(('agentd: step %s waits for your approval in the chat (a allows, x rejects on its block; or :Agent approve)'):format(p.stepId or '?'), vim.log.levels.WARN)
end

--- The approval was answered (here or in the picker) or dropped: its
--- block goes.
function M.hide_approval(p)
  for i, a in ipairs(S.approvals) do
    if a.p == p then
      table.remove(S.approvals, i)
      break
    end
  end
  M.draw()
end

--- a / A / x / X on an approval block: answers it with that option.
function M.answer_approval(kind)
  local m = meta_at_cursor()
  local a = m.kind == 'approval' and S.approvals[m.approval]
  if not a then
    notify('agentd: put the cursor on an approval block of the chat', vim.log.levels.WARN)
    return false
  end
  for _, o in ipairs(a.p.options or {}) do
    if o.kind == kind then
      return a.answer(o)
    end
  end
  notify(('agentd: this approval does not offer %s'):format(kind:gsub('_', ' ')), vim.log.levels.WARN)
  return false
end

-- Server notifications (handlers.lua passes them on) ----------------------

function M.on_changed(p)
  if p and p.chatId == S.chat_id then
    M.refresh()
  end
end

function M.on_stream(p)
  local pd = S.pending
  if p and p.chatId == S.chat_id and pd and pd.kind == 'ask' then
    pd.text = pd.text .. (p.text or '')
    pd.turn = p.turn
    M.draw()
  end
end

local run_pending = false
--- A run's step changed: the running turn's progress lines are drawn
--- again; a command's output is kept under its step.
function M.on_run_event(run_id, p)
  local ev = p and p.event
  if ev and ev.type == 'stepOutput' and ev.stepId and type(ev.text) == 'string' then
    add_output(run_id, ev.stepId, ev.text)
  end
  if run_pending or not S.view then
    return
  end
  for _, t in ipairs(S.view.turns or {}) do
    if t.runId == run_id then
      run_pending = true
      vim.schedule(function()
        run_pending = false
        M.draw()
      end)
      return
    end
  end
end

--- A change set changed (a decision here or anywhere): the change summary
--- is loaded again.
function M.on_changes()
  if S.view and S.buf and api.nvim_buf_is_valid(S.buf) then
    M.refresh()
  end
end

-- Sending ---------------------------------------------------------------

--- Why a message cannot be sent now, or nil.
local function busy()
  local p = S.pending
  if p and not p.cancelled then
    return p.kind == 'ask' and 'a question is being answered' or (p.kind == 'revise' and 'a plan is being revised' or 'a plan is being made')
  end
  for _, t in ipairs(S.view and S.view.turns or {}) do
    if t.status == 'running' then
      return ('run %s of turn "%s" is going'):format(t.runId or '?', (t.request or ''):sub(1, 40))
    end
  end
end

local function finish(err, e)
  S.pending = nil
  if err and not (e and e.code == -32800) then
    notify('agentd: chat: ' .. err, vim.log.levels.ERROR, { whole = true })
  end
  M.draw()
  M.refresh()
end

local dispatch

--- Sends a message: a question when it starts with `?` (or ask is true),
--- else a plan turn. While a turn is still going it is queued (drawn under
--- the running turn, d removes it) and sent when the turn ends. Returns
--- true when sent or queued.
function M.send(message, ask)
  message = vim.trim(message or '')
  if message == '' then
    return false
  end
  if not S.chat_id and not M.ensure_chat() then
    return false
  end
  if message:sub(1, 1) == '?' then
    ask = true
    message = vim.trim(message:sub(2))
    if message == '' then
      return false
    end
  end
  -- What the message names is read now, as the user sees it when sending.
  local r = context.resolve(message, { origin = S.origin, root = S.root, selection = S.selection })
  if #r.problems > 0 then
    notify('agentd: not sent: ' .. table.concat(r.problems, '; '), vim.log.levels.WARN)
    return false
  end
  local why = busy()
  if why or #S.queue > 0 then
    S.queue[#S.queue + 1] = { message = message, ask = ask, r = r }
    notify(('agentd: queued: sent when %s ends (d on its line in the chat removes it)'):format(why or 'the message queued before it'), vim.log.levels.INFO)
    M.draw()
    return true
  end
  return dispatch(message, ask, r)
end

--- Sends the oldest queued message once nothing is going.
function M.flush_queue()
  if #S.queue == 0 or busy() or not S.view then
    return
  end
  local q = table.remove(S.queue, 1)
  if not dispatch(q.message, q.ask, q.r) then
    -- Not sent (said why): back in the input, the rest stays queued.
    if S.input and api.nvim_buf_is_valid(S.input) then
      api.nvim_buf_set_lines(S.input, 0, -1, false, vim.split((q.ask and '?' or '') .. q.message, '\n'))
    end
    M.draw()
  end
end

--- d on a queued message: takes it out of the queue.
function M.unqueue()
  local m = meta_at_cursor()
  if m.kind ~= 'queued' or not S.queue[m.queued] then
    notify('agentd: d removes a queued message: put the cursor on its line', vim.log.levels.WARN)
    return false
  end
  local q = table.remove(S.queue, m.queued)
  notify(('agentd: removed from the queue: %s'):format(q.message:sub(1, 60)), vim.log.levels.INFO)
  M.draw()
  return true
end

function dispatch(message, ask, r)
  local c = cl()
  if not c then
    return false
  end
  local method, params
  if ask then
    method, params = 'agentd/chat/ask', { chatId = S.chat_id, question = r.text, context = r.context }
  else
    if require('agentd.config').model_missing then
      local missing = require('agentd.config').model_missing()
      if missing then
        notify('agentd: a chat turn needs a model: ' .. missing, vim.log.levels.ERROR)
        return false
      end
    end
    method, params = 'agentd/plan/create', { request = r.text, chatId = S.chat_id, context = r.context }
  end
  S.pending = { kind = ask and 'ask' or 'plan', request = message, text = '', chips = r.chips, client = c, turns_before = #(S.view and S.view.turns or {}) }
  local pd = S.pending
  local ok, id = c.request(method, params, function(err, res)
    if not err and not ask and res and res.id then
      require('agentd.plan').plans[res.id] = res
      require('agentd.state').last_plan = res.id
    end
    if S.pending ~= pd then
      return -- the chat already has the turn (refresh above), or it was stopped
    end
    finish(err and (err.message or vim.inspect(err)) or nil, err)
  end)
  if not ok then
    S.pending = nil
    notify('agentd: chat: agentd has stopped', vim.log.levels.ERROR)
    return false
  end
  pd.id = id
  M.draw()
  return true
end

--- <C-c>: stops what the chat is doing: the question being answered or
--- the plan being made ($/cancelRequest), else the running turn's run.
function M.cancel()
  local p = S.pending
  if p and p.id and p.client and not p.cancelled then
    -- Neovim's client drops the answer to a cancelled request: the plan
    -- being made is gone at once; a stopped answer stays drawn until the
    -- chat has its turn (the server keeps what was said, agentd/chat/changed).
    p.cancelled = true
    p.client.cancel_request(p.id)
    if p.kind ~= 'ask' then
      S.pending = nil
    end
    M.draw()
    M.refresh()
    return true
  end
  for _, t in ipairs(S.view and S.view.turns or {}) do
    if t.status == 'running' and t.runId then
      require('agentd.state').run_id = t.runId
      return require('agentd').control('cancel') ~= nil
    end
  end
  notify('agentd: nothing is running in this chat', vim.log.levels.INFO)
  return false
end

-- Keys of the transcript ----------------------------------------------------

local function turn_at_cursor(need)
  local m = meta_at_cursor()
  local t = m.turn and S.view and S.view.turns[m.turn]
  if not t then
    notify('agentd: put the cursor on a turn of the chat', vim.log.levels.WARN)
    return nil
  end
  if need == 'plan' and not t.planId then
    notify('agentd: this turn has no plan (a question)', vim.log.levels.WARN)
    return nil
  end
  if need == 'run' and not t.runId then
    notify('agentd: this turn has not run yet (r runs its plan)', vim.log.levels.WARN)
    return nil
  end
  return t, m
end

--- Runs the plan of the turn at the cursor, as :Agent run does (the
--- same review and approval settings).
function M.run_turn()
  local t = turn_at_cursor('plan')
  if not t then
    return
  end
  local why = busy()
  if why then
    notify(('agentd: not run: %s'):format(why), vim.log.levels.WARN)
    return
  end
  S.starting = t.planId
  local ok, run_id = pcall(require('agentd').run, { plan_id = t.planId })
  S.starting = nil
  if not ok then
    error(run_id, 0)
  end
  if run_id then
    M.refresh()
  end
  return run_id
end

--- Opens the turn's plan in the plan buffer (its keys edit it).
function M.edit_turn()
  local t = turn_at_cursor('plan')
  if not t then
    return
  end
  local p, err = client.request_sync(cl(), 'agentd/plan/get', { planId = t.planId })
  if not p then
    notify('agentd: ' .. err, vim.log.levels.ERROR)
    return
  end
  vim.cmd('aboveleft split')
  return require('agentd.plan').show(p)
end

--- Revises the turn's plan in words (agentd/plan/regenerate).
function M.revise_turn(feedback)
  local t = turn_at_cursor('plan')
  if not t then
    return
  end
  local function go(fb)
    if not fb or vim.trim(fb) == '' then
      return
    end
    local why = busy()
    if why then
      notify(('agentd: not revised: %s'):format(why), vim.log.levels.WARN)
      return
    end
    local c = cl()
    S.pending = { kind = 'revise', request = fb, text = '', client = c }
    local pd = S.pending
    local ok, id = c.request('agentd/plan/regenerate', { planId = t.planId, feedback = fb }, function(err, res)
      if S.pending ~= pd then
        return
      end
      if res and res.id then
        require('agentd.plan').plans[res.id] = res
        require('agentd.plan').refresh_from_server(res.id)
      end
      finish(err and (err.message or vim.inspect(err)) or nil, err)
    end)
    if ok then
      pd.id = id
    else
      S.pending = nil
    end
    M.draw()
  end
  if feedback then
    return go(feedback)
  end
  vim.ui.input({ prompt = 'agentd: what should change in the plan? ' }, go)
end

--- Undoes the turn's run (agentd/undo/run with its runId), with the
--- messages and choices of :Agent undo.
function M.undo_turn()
  local t = turn_at_cursor('run')
  if not t then
    return
  end
  local res = require('agentd.undo').undo('run', t.runId, {})
  M.refresh()
  return res
end

--- ga / gr on a file line of the change summary: every open unit of that
--- file in the turn's change sets, one decision per set with the file's
--- uri and no hunk id (docs/protocol.md, "Client recipe").
function M.decide_file(action)
  local m = meta_at_cursor()
  if m.kind ~= 'file' then
    notify('agentd: ga/gr decide a file: put the cursor on a file line of the change summary', vim.log.levels.WARN)
    return
  end
  local c = cl()
  local list, err = client.request_sync(c, 'agentd/changes/list', { runId = m.runId })
  if not list then
    notify('agentd: ' .. err, vim.log.levels.ERROR)
    return
  end
  local review = require('agentd.review')
  local groups = { order = {} }
  local model = false
  for _, cs in ipairs(list) do
    for _, f in ipairs(cs.files or {}) do
      if f.uri == m.uri and f.counts and review.open_units(f.counts) > 0 then
        groups.order[#groups.order + 1] = cs.id
        groups[cs.id] = { { uri = m.uri, action = action } }
        model = model or cs.reasonToModel == true or review.reason_to_model(cs.id)
      end
    end
  end
  if #groups.order == 0 then
    notify('agentd: nothing left to decide in ' .. vim.fn.fnamemodify(vim.uri_to_fname(m.uri), ':~:.'), vim.log.levels.INFO)
    return
  end
  local reason
  if action == 'reject' and model then
    reason = vim.fn.input('agentd: why reject? (sent to the model; empty for no reason) ')
  end
  local res = require('agentd.review.decide').resolve(groups, action, reason)
  M.refresh()
  return res
end

--- <CR> on a file line: the file in the window the chat was opened from,
--- at its first hunk (the inline review). On a card or a fold: toggles it.
function M.open_file()
  local m = meta_at_cursor()
  if m.kind ~= 'file' then
    if vim.fn.foldlevel('.') > 0 then
      vim.cmd('normal! za')
    end
    return
  end
  local target
  for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
    local b = api.nvim_win_get_buf(w)
    if not is_chat_buf(b) and vim.bo[b].buftype == '' then
      target = w
      break
    end
  end
  if target then
    api.nvim_set_current_win(target)
  else
    vim.cmd('topleft split')
  end
  vim.cmd.edit(vim.fn.fnameescape(vim.uri_to_fname(m.uri)))
  local b = api.nvim_get_current_buf()
  local review = require('agentd.review')
  if not review.sets[m.changeId] then
    local cs = client.request_sync(cl(), 'agentd/changes/get', { changeId = m.changeId })
    if cs then
      review.put(cs)
    end
  end
  review.draw(b)
  local h = review.hunks(b)[1]
  if h then
    api.nvim_win_set_cursor(0, { h.lnum, 0 })
  end
  return b
end

local function focus_input(insert)
  for _, w in ipairs(wins_of(S.input)) do
    api.nvim_set_current_win(w)
    if insert then
      vim.cmd('startinsert!')
    end
    return
  end
end

--- Sends what the input buffer holds; cleared once sent, kept when refused.
function M.send_input()
  local b = S.input
  if not b or not api.nvim_buf_is_valid(b) then
    return false
  end
  local text = table.concat(api.nvim_buf_get_lines(b, 0, -1, false), '\n')
  if M.send(text) then
    api.nvim_buf_set_lines(b, 0, -1, false, { '' })
    return true
  end
  return false
end

local function map(b, mode, lhs, f, desc)
  vim.keymap.set(mode, lhs, f, { buffer = b, nowait = true, silent = true, desc = 'agentd chat: ' .. desc })
end

local function make_bufs()
  if not S.buf or not api.nvim_buf_is_valid(S.buf) then
    local b = api.nvim_create_buf(false, true)
    pcall(api.nvim_buf_set_name, b, 'agentd://chat')
    vim.bo[b].buftype = 'nofile'
    vim.bo[b].bufhidden = 'hide'
    vim.bo[b].swapfile = false
    vim.bo[b].filetype = 'markdown'
    vim.bo[b].modifiable = false
    S.buf = b
    map(b, 'n', '<CR>', M.open_file, 'open the file at its review / toggle the fold')
    map(b, 'n', 'ga', function() M.decide_file('accept') end, 'accept the file')
    map(b, 'n', 'gr', function() M.decide_file('reject') end, 'reject the file')
    map(b, 'n', 'r', M.run_turn, "run the turn's plan")
    map(b, 'n', 'e', M.edit_turn, "edit the turn's plan")
    map(b, 'n', 'R', function() M.revise_turn() end, "revise the turn's plan in words")
    map(b, 'n', 'u', M.undo_turn, 'undo this turn')
    map(b, 'n', '<C-c>', M.cancel, 'stop the running turn')
    map(b, 'n', 'i', function() focus_input(true) end, 'write a message')
    map(b, 'n', 'm', M.pick_model, 'choose the model (:Agent model)')
    map(b, 'n', 'd', M.unqueue, 'remove the queued message')
    map(b, 'n', 'a', function() M.answer_approval('allow_once') end, 'allow once (on an approval)')
    map(b, 'n', 'A', function() M.answer_approval('allow_always') end, 'always allow (on an approval)')
    map(b, 'n', 'x', function() M.answer_approval('reject_once') end, 'reject once (on an approval)')
    map(b, 'n', 'X', function() M.answer_approval('reject_always') end, 'always reject (on an approval)')
    api.nvim_create_autocmd('BufWinEnter', {
      buffer = b,
      callback = function()
        set_win_opts(api.nvim_get_current_win())
      end,
    })
  end
  if not S.input or not api.nvim_buf_is_valid(S.input) then
    local b = api.nvim_create_buf(false, true)
    pcall(api.nvim_buf_set_name, b, 'agentd://chat/input')
    vim.bo[b].buftype = 'nofile'
    vim.bo[b].bufhidden = 'hide'
    vim.bo[b].swapfile = false
    vim.bo[b].filetype = 'markdown'
    vim.bo[b].omnifunc = "v:lua.require'agentd.chat.context'.omnifunc"
    S.input = b
    map(b, 'n', '<CR>', M.send_input, 'send the message')
    map(b, 'i', '<C-s>', function()
      vim.cmd('stopinsert')
      M.send_input()
    end, 'send the message')
    map(b, { 'n', 'i' }, '<C-c>', M.cancel, 'stop the running turn')
    -- # starts the completion of the context items.
    map(b, 'i', '#', '#<C-x><C-o>', 'complete a context item')
  end
end

--- Shows the chat (transcript and input) and focuses the input.
local function show()
  make_bufs()
  local tw = wins_of(S.buf)[1]
  if not tw then
    vim.cmd('botright vsplit')
    tw = api.nvim_get_current_win()
    api.nvim_win_set_buf(tw, S.buf)
    set_win_opts(tw)
  end
  if not wins_of(S.input)[1] then
    api.nvim_set_current_win(tw)
    vim.cmd('belowright 6split')
    api.nvim_win_set_buf(0, S.input)
    vim.wo[0].winfixheight = true
  end
  M.draw()
  focus_input(false)
end

--- Makes a chat when there is none (agentd/chat/new).
function M.ensure_chat()
  if S.chat_id then
    return S.chat_id
  end
  return M.new()
end

--- Starts a new chat and shows it.
function M.new()
  local c = cl()
  if not c then
    return nil
  end
  local res, err = client.request_sync(c, 'agentd/chat/new', vim.empty_dict())
  if not res then
    notify('agentd: chat: ' .. err, vim.log.levels.ERROR)
    return nil
  end
  M.resume(res.chatId)
  return res.chatId
end

--- Shows the chat chatId (loaded from the server).
function M.resume(chat_id)
  S.chat_id = chat_id
  S.view, S.changes, S.pending, S.built, S.queue = nil, {}, nil, nil, {}
  show()
  M.refresh()
end

--- :Agent chat list: picks one of the workspace's chats to resume.
function M.list()
  local c = cl()
  if not c then
    return
  end
  local res, err = client.request_sync(c, 'agentd/chat/list', vim.empty_dict())
  if not res then
    notify('agentd: chat: ' .. err, vim.log.levels.ERROR)
    return
  end
  local chats = res.chats or {}
  if #chats == 0 then
    notify('agentd: no chats yet in this workspace; :Agent chat starts one', vim.log.levels.INFO)
    return
  end
  vim.ui.select(chats, {
    prompt = 'agentd: chat to resume',
    kind = 'agentd.chat',
    format_item = function(ch)
      return ('%s  (%d turn%s, %s)'):format(ch.title ~= '' and ch.title or ch.chatId, ch.turns or 0, ch.turns == 1 and '' or 's', ch.updatedAt or '')
    end,
  }, function(ch)
    if ch then
      M.resume(ch.chatId)
    end
  end)
end

--- :Agent chat [new|list|ask {question}] with its range (o: the command's
--- opts): opens the current chat (a new one if none).
function M.command(args, o)
  local cur = api.nvim_get_current_buf()
  if not is_chat_buf(cur) then
    S.origin = cur
    S.root = client.root_of(cur)
  end
  local sub = args[1]
  local prefill
  if o and o.range and o.range > 0 and not is_chat_buf(cur) then
    -- :'<,'>Agent chat: the lines, or the characters when the range is
    -- the last visual selection made characterwise.
    local cols
    local s, e = api.nvim_buf_get_mark(cur, '<'), api.nvim_buf_get_mark(cur, '>')
    if vim.fn.visualmode() == 'v' and s[1] == o.line1 and e[1] == o.line2 then
      cols = { s[2], e[2] }
    end
    S.selection = context.range_selection(cur, o.line1, o.line2, cols)
    prefill = '#selection '
  end
  if sub == 'new' then
    M.new()
  elseif sub == 'list' then
    M.list()
    return
  elseif sub == 'ask' then
    if not M.ensure_chat() then
      return
    end
    show()
    local q = table.concat(vim.list_slice(args, 2), ' ')
    if q ~= '' then
      M.send(q, true)
    else
      api.nvim_buf_set_lines(S.input, 0, -1, false, { '?' })
    end
    return
  elseif sub then
    notify(('agentd: :Agent chat [new|list|ask {question}]: unknown %q'):format(sub), vim.log.levels.ERROR)
    return
  elseif not M.ensure_chat() then
    return
  else
    show()
    M.refresh()
  end
  if prefill and S.input then
    local l = api.nvim_buf_get_lines(S.input, 0, -1, false)
    if not table.concat(l, '\n'):find('#selection', 1, true) then
      l[#l] = prefill .. l[#l]
      api.nvim_buf_set_lines(S.input, 0, -1, false, l)
    end
    focus_input(false)
    api.nvim_win_set_cursor(0, { #l, #l[#l] })
  end
end

--- The transcript and input buffers (tests and scripts).
function M.bufs()
  return S.buf, S.input
end

function M.chat_id()
  return S.chat_id
end

function M.busy()
  return busy()
end

return M
