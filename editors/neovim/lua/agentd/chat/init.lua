-- :Agent chat: the core's conversation (agentd/chat/*) in a Markdown
-- buffer. Layout as avante.nvim's: the transcript in a split (read-only,
-- drawn from agentd/chat/load and drawn again on agentd/chat/changed), and
-- a small input buffer below it where the message is written and sent
-- (<CR> in normal mode, <C-s> in insert mode). A message is a plan turn
-- (agentd/plan/create with the chatId), or a question when it starts with
-- `?` (agentd/chat/ask, its answer streamed in as agentd/chat/stream
-- arrives). A message sent while a turn is going is queued in the core
-- (agentd/chat/queue; chat/load's queued draws it), which plans it when the
-- turn ends. :help agentd-chat.
local client = require('agentd.client')
local render = require('agentd.chat.render')
local context = require('agentd.chat.context')

local api = vim.api
local M = {}
M.ns = api.nvim_create_namespace('agentd.chat')
api.nvim_set_hl(0, 'AgentdChatRewound', { default = true, link = 'Comment' })

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
  inflight = nil, -- the agentd/plan/create in flight ({ id, client }): <C-c> cancels it
  activity = {}, -- [turn, 1-based] = { lines } the planner's work (agentd/chat/stream activity)
  titles = {}, -- [chatId] = title, of the chat's origin and branches (agentd/chat/list)
  editing = nil, -- { chat_id, turn (0-based), request } a message edited for a branch
  restored = nil, -- { chat_id, turn, what, files = wayBack?, conversation = wayBack? } the last restore
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

local function focus_input(insert)
  for _, w in ipairs(wins_of(S.input)) do
    api.nvim_set_current_win(w)
    if insert then
      vim.cmd('startinsert!')
    end
    return
  end
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
    activity = S.activity,
    chat_id = S.chat_id,
    root = S.root,
    changes = S.changes,
    pending = S.pending,
    approvals = approvals,
    output = S.output,
    model = S.model and (S.model.configured and (S.model.model or '?') or 'none set') or nil,
    titles = S.titles,
    editing = S.editing and S.editing.chat_id == S.chat_id and S.editing or nil,
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
  -- Rewound turns are dimmed.
  api.nvim_buf_clear_namespace(b, M.ns, 0, -1)
  for lnum in pairs(built.dim or {}) do
    api.nvim_buf_set_extmark(b, M.ns, lnum - 1, 0, { end_row = lnum, end_col = 0, hl_group = 'AgentdChatRewound', hl_eol = true, strict = false })
  end
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
      M.load_titles(c, view)
      M.drop_planner_approvals()
      M.draw()
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

local planning_turn
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

--- The turn (1-based) whose plan is being made, or nil.
function planning_turn()
  for i, t in ipairs(S.view and S.view.turns or {}) do
    if t.status == 'planning' then
      return i
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
  if run_id == 'plan' then
    -- The planner's reads: of the turn being planned (recorded when its
    -- planning starts, status "planning").
    return planning_turn()
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
    return (pd ~= nil and not pd.cancelled and (pd.kind == 'plan' or pd.kind == 'revise')) or planning_turn() ~= nil
  end
  return M.turn_of_run(p.runId) ~= nil
end

--- The planner's approvals (runId "plan") once no plan is being made any
--- more (the planning was stopped or ended): their blocks go, as a run's
--- go at its end.
function M.drop_planner_approvals()
  local pd = S.pending
  if planning_turn() or (pd and not pd.cancelled and (pd.kind == 'plan' or pd.kind == 'revise')) then
    return
  end
  for _, a in ipairs(S.approvals) do
    if a.p.runId == 'plan' then
      return require('agentd.handlers').drop_approvals('plan')
    end
  end
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

local activity_pending = false
function M.on_stream(p)
  local pd = S.pending
  if p and p.chatId == S.chat_id and type(p.activity) == 'string' and p.turn then
    -- The planner's work on a plan turn, listed under it while it plans.
    local k = p.turn + 1
    S.activity[k] = S.activity[k] or {}
    table.insert(S.activity[k], p.activity)
    if not activity_pending then
      activity_pending = true
      vim.schedule(function()
        activity_pending = false
        M.draw()
      end)
    end
    return
  end
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
  if S.starting then
    return 'a run of the chat is starting'
  end
  for _, a in ipairs(S.approvals) do
    -- Known before the chat's reload says the run runs.
    return ('step %s waits for your approval'):format(a.p.stepId or '?')
  end
  for _, t in ipairs(S.view and S.view.turns or {}) do
    if t.status == 'running' then
      return ('run %s of turn "%s" is going'):format(t.runId or '?', (t.request or ''):sub(1, 40))
    elseif t.status == 'planning' then
      return ('the plan of turn "%s" is being made'):format((t.request or ''):sub(1, 40))
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
--- else a plan turn. While a turn is still going a plan message is queued
--- in the core (agentd/chat/queue, when "after"; drawn from chat/load's
--- queued under the running turn), which plans it when the turn ends; a
--- question is not queued (the core's queue plans messages). Returns true
--- when sent or queued.
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
  local r = context.resolve(message, { origin = S.origin, root = S.root, selection = S.selection, client = cl() })
  if #r.problems > 0 then
    notify('agentd: not sent: ' .. table.concat(r.problems, '; '), vim.log.levels.WARN)
    return false
  end
  local why = busy()
  if not why and #(S.view and S.view.queued or {}) == 0 then
    return dispatch(message, ask, r)
  end
  if ask then
    notify(('agentd: not asked: %s; a question cannot be queued (the queue plans messages): ask it when the turn ends, or send it without ? to queue it as a plan turn'):format(why or 'messages are queued'), vim.log.levels.WARN)
    return false
  end
  return M.enqueue(r, 'after', why)
end

--- Queues the message in the core (agentd/chat/queue with its context).
function M.enqueue(r, when, why)
  local c = cl()
  if not c then
    return false
  end
  local res, err = client.request_sync(c, 'agentd/chat/queue', { chatId = S.chat_id, request = r.text, context = r.context, when = when })
  if not res then
    notify('agentd: not queued: ' .. err, vim.log.levels.ERROR)
    return false
  end
  if S.view then
    S.view.queued = res.queued
  end
  notify(('agentd: queued: sent when %s ends (on its line in the chat: d removes it, e edits it, gs sends it now)'):format(why or 'the turn going'), vim.log.levels.INFO)
  M.draw()
  M.refresh()
  return true
end

--- The queued message at the cursor, or nil (said why).
local function queued_at_cursor(what)
  local m = meta_at_cursor()
  local q = m.kind == 'queued' and m.queueId
  if not q then
    notify(('agentd: %s a queued message: put the cursor on its line'):format(what), vim.log.levels.WARN)
  end
  return q, m
end

--- A queue method's answer: the queue as it is now, drawn.
local function queue_answer(res, err, what)
  if not res then
    notify(('agentd: %s: %s'):format(what, err), vim.log.levels.ERROR)
    M.refresh()
    return false
  end
  if S.view then
    S.view.queued = res.queued
  end
  M.draw()
  M.refresh()
  return true
end

--- d on a queued message: takes it out of the queue (agentd/chat/unqueue).
function M.unqueue()
  local m = meta_at_cursor()
  if m.kind == 'editing' then
    return M.stop_editing()
  end
  local q = queued_at_cursor('d removes')
  if not q then
    return false
  end
  local res, err = client.request_sync(cl(), 'agentd/chat/unqueue', { chatId = S.chat_id, queueId = q })
  if res then
    notify(('agentd: removed from the queue: %s'):format((m.request or ''):sub(1, 60)), vim.log.levels.INFO)
  end
  return queue_answer(res, err, 'unqueue')
end

--- e on a queued message: its words edited (vim.ui.input), its place in
--- the queue kept (agentd/chat/queue/edit).
function M.edit_queued(words)
  local q, m = queued_at_cursor('e edits')
  if not q then
    return false
  end
  local chat_id = S.chat_id
  local function go(text)
    text = text and vim.trim(text) or ''
    if text == '' then
      return false
    end
    local res, err = client.request_sync(cl(), 'agentd/chat/queue/edit', { chatId = chat_id, queueId = q, request = text })
    return queue_answer(res, err, 'edit the queued message')
  end
  if words then
    return go(words)
  end
  vim.ui.input({ prompt = 'agentd: the queued message: ', default = m.request or '' }, go)
end

--- gs on a queued message: sent now. Taken out of the queue
--- (agentd/chat/unqueue), then queued with when "now" with its words and
--- context (the core stops the going turn and plans it next); a refusal
--- of the second puts the words in the input, so nothing is lost.
function M.send_queued_now()
  local q, m = queued_at_cursor('gs sends now')
  if not q then
    return false
  end
  local c = cl()
  local res, err = client.request_sync(c, 'agentd/chat/unqueue', { chatId = S.chat_id, queueId = q })
  if not res then
    return queue_answer(res, err, 'send now')
  end
  res, err = client.request_sync(c, 'agentd/chat/queue', { chatId = S.chat_id, request = m.request, context = m.context, when = 'now' })
  if not res and S.input and api.nvim_buf_is_valid(S.input) then
    api.nvim_buf_set_lines(S.input, 0, -1, false, vim.split(m.request or '', '\n'))
    notify('agentd: not sent now (its words are in the input): ' .. err, vim.log.levels.ERROR)
    M.refresh()
    return false
  end
  notify('agentd: sent now: the going turn is stopped and this message is planned next', vim.log.levels.INFO)
  return queue_answer(res, err, 'send now')
end

function dispatch(message, ask, r, o)
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
  S.pending = { kind = ask and 'ask' or 'plan', request = message, text = '', chips = r.chips, client = c, turns_before = (o and o.turns_before) or #(S.view and S.view.turns or {}) }
  local pd = S.pending
  local ok, id = c.request(method, params, function(err, res)
    if S.inflight == pd then
      S.inflight = nil
    end
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
  if not ask then
    -- Kept past S.pending (the turn is recorded when planning starts and
    -- drawn from the chat): <C-c> on it cancels this request.
    S.inflight = pd
  end
  M.draw()
  return true
end

--- <C-c>: stops what the chat is doing: the question being answered or
--- the plan being made by a request of ours ($/cancelRequest), else the
--- chat's going turn in the daemon (agentd/chat/stop: a queued message it
--- plans by itself, or a run).
function M.cancel()
  local p = S.pending
  if not (p and p.id and p.client and not p.cancelled) then
    p = S.inflight
  end
  if p and p.id and p.client and not p.cancelled then
    -- Neovim's client drops the answer to a cancelled request: the plan
    -- being made is gone at once; a stopped answer stays drawn until the
    -- chat has its turn (the server keeps what was said, agentd/chat/changed).
    p.cancelled = true
    p.client.cancel_request(p.id)
    if S.inflight == p then
      S.inflight = nil
    end
    if p.kind ~= 'ask' and S.pending == p then
      S.pending = nil
    end
    M.draw()
    M.refresh()
    return true
  end
  -- A turn no request of ours owns (a queued message the core plans, or a
  -- run): the daemon stops it (agentd/chat/stop) and says what it stopped.
  local c = cl()
  if not (c and S.chat_id) then
    notify('agentd: nothing is running in this chat', vim.log.levels.INFO)
    return false
  end
  local res, err, e = client.request_sync(c, 'agentd/chat/stop', { chatId = S.chat_id })
  if not res then
    if (e and e.code == -32601) or (err or ''):find('not built', 1, true) then
      notify('agentd: this agentd cannot stop a turn it runs by itself (no agentd/chat/stop, not built yet): update agentd; :Agent cancel cancels a run', vim.log.levels.WARN)
    else
      notify('agentd: not stopped: ' .. err, vim.log.levels.ERROR)
    end
    return false
  end
  notify('agentd: ' .. M.stopped_words(res.stopped), vim.log.levels.INFO)
  M.draw()
  M.refresh()
  return #(res.stopped or {}) > 0
end

--- agentd/chat/stop's answer in words (the VS Code view's the same).
function M.stopped_words(stopped)
  if not stopped or #stopped == 0 then
    return 'Nothing of this chat was going in agentd: nothing to stop.'
  end
  return 'Stopped: ' .. table.concat(vim.tbl_map(function(w) return 'the ' .. w end, stopped), ' and ') .. '.'
end

--- agentd/chat/queue's answer to guidance in words (the VS Code view's the
--- same): delivered to the going turn, or queued with the daemon's reason.
function M.guided_words(r)
  if r.delivered then
    local to = table.concat(vim.tbl_map(function(d) return 'the ' .. d end, r.deliveredTo or {}), ' and ')
    return ('Guidance delivered to %s: its agent reads it before its next model call.'):format(to ~= '' and to or 'the going turn'), vim.log.levels.INFO
  end
  return ('Not delivered as guidance%s. Queued instead: planned when the going turn ends.'):format(r.reason and r.reason ~= '' and (': ' .. r.reason) or ''), vim.log.levels.WARN
end

--- <C-g> in the input: the message goes to the chat's going turn as
--- guidance (agentd/chat/queue when "guidance"): its running agent steps or
--- its planner read it before their next model call. When nothing can take
--- it the daemon says why and queues it as "after"; both are said as it
--- says them. Returns true when the daemon took the message.
function M.guide(message)
  message = vim.trim(message or '')
  if message == '' then
    return false
  end
  local c = cl()
  if not (c and S.chat_id) then
    notify('agentd: not sent: guidance goes to a turn of the chat: send a message first', vim.log.levels.WARN)
    return false
  end
  local r = context.resolve(message, { origin = S.origin, root = S.root, selection = S.selection })
  if #r.problems > 0 then
    notify('agentd: not sent: ' .. table.concat(r.problems, '; '), vim.log.levels.WARN)
    return false
  end
  local res, err, e = client.request_sync(c, 'agentd/chat/queue', { chatId = S.chat_id, request = r.text, context = r.context, when = 'guidance' })
  if not res then
    if e and (e.code == -32601 or e.code == -32602) or (err or ''):find('not built', 1, true) then
      notify(('agentd: not sent: this agentd cannot take guidance yet (%s): update agentd, or send it with <CR> to queue it'):format(err), vim.log.levels.WARN)
    else
      notify('agentd: the guidance was not sent: ' .. err, vim.log.levels.ERROR)
    end
    return false
  end
  if S.view then
    S.view.queued = res.queued
  end
  local words, level = M.guided_words(res)
  notify('agentd: ' .. words, level)
  M.draw()
  M.refresh()
  return true
end

--- <C-g> in the input: its text sent as guidance (M.guide).
function M.guide_input()
  local b = S.input
  if not b or not api.nvim_buf_is_valid(b) then
    return false
  end
  if M.guide(table.concat(api.nvim_buf_get_lines(b, 0, -1, false), '\n')) then
    api.nvim_buf_set_lines(b, 0, -1, false, { '' })
    return true
  end
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

-- Checkpoints: restore to before a turn, rewound turns, branches ------------
-- (docs/protocol.md "Checkpoints": agentd/chat/restore, unrewind, fork.
-- The rules are the session's; this asks, shows and sends.)

--- The titles of the chat's origin and branches, for their lines
--- (agentd/chat/list, asked when the chat has either).
function M.load_titles(c, view)
  local want = {}
  if type(view.forkedFrom) == 'table' and view.forkedFrom.chatId then
    want[#want + 1] = view.forkedFrom.chatId
  end
  for _, br in ipairs(type(view.branches) == 'table' and view.branches or {}) do
    want[#want + 1] = br.chatId
  end
  local missing = false
  for _, id in ipairs(want) do
    missing = missing or S.titles[id] == nil
  end
  if not missing then
    return
  end
  client.request(c, 'agentd/chat/list', vim.empty_dict(), function(err, res)
    if err or type(res) ~= 'table' then
      return
    end
    for _, ch in ipairs(res.chats or {}) do
      S.titles[ch.chatId] = ch.title or ''
    end
    for _, id in ipairs(want) do
      S.titles[id] = S.titles[id] or '' -- deleted since: named by its id
    end
    M.draw()
  end)
end

local function shown(p)
  if type(p) ~= 'string' then
    return '?'
  end
  local f = p:match('^file://') and vim.uri_to_fname(p) or p
  return vim.fn.fnamemodify(f, ':~:.')
end

local function names(list, key)
  local t = {}
  for _, x in ipairs(type(list) == 'table' and list or {}) do
    t[#t + 1] = shown(type(x) == 'table' and (x[key or 'path'] or x.uri) or x)
  end
  return table.concat(t, ', ')
end

local function turns_text(list)
  local t = {}
  for _, n in ipairs(type(list) == 'table' and list or {}) do
    t[#t + 1] = tostring(n + 1)
  end
  return (#t == 1 and 'turn ' or 'turns ') .. table.concat(t, ', ')
end

--- The dry run's answer as lines for a diff buffer: what would be taken
--- back (per file, the diff from the file now to what the restore
--- writes), the conflicts with their diffs, the turns rewound.
local function preview_lines(turn, what, dry)
  local L = {
    ('# Restore to before turn %d (%s): nothing has changed yet.'):format(turn + 1, what),
  }
  local f = type(dry.files) == 'table' and dry.files or nil
  if f then
    if #(f.runs or {}) == 0 then
      L[#L + 1] = '# files: no run of these turns to take back.'
    else
      L[#L + 1] = ('# files: takes back run%s %s (%s) as one undo; your own lines stay.'):format(#f.runs == 1 and '' or 's', table.concat(f.runs, ', '), turns_text(f.turns))
    end
    if #(f.created or {}) > 0 then
      L[#L + 1] = '#   deletes what they created: ' .. names(f.created)
    end
    if #(f.deleted or {}) > 0 then
      L[#L + 1] = '#   brings back what they deleted: ' .. names(f.deleted)
    end
    for _, cf in ipairs(f.conflicts or {}) do
      L[#L + 1] = ('# conflict: %s: %s'):format(shown(cf.path or cf.uri), cf.message or cf.reason or '')
    end
  end
  local cv = type(dry.conversation) == 'table' and dry.conversation or nil
  if cv then
    if #(cv.turns or {}) == 0 then
      L[#L + 1] = '# conversation: every one of these turns is rewound already.'
    else
      L[#L + 1] = ('# conversation: %s rewound: kept in the chat, not told to the model.'):format(turns_text(cv.turns))
    end
  end
  if f then
    for _, d in ipairs(f.diffs or {}) do
      if d.diff and d.diff ~= '' then
        L[#L + 1] = ''
        vim.list_extend(L, vim.split((d.diff:gsub('\n$', '')), '\n', { plain = true }))
      end
    end
    for _, cf in ipairs(f.conflicts or {}) do
      L[#L + 1] = ''
      L[#L + 1] = ('# conflict in %s: your edits are on lines it would take back; this is what "overwrite" writes:'):format(shown(cf.path or cf.uri))
      if cf.diff and cf.diff ~= '' then
        vim.list_extend(L, vim.split((cf.diff:gsub('\n$', '')), '\n', { plain = true }))
      end
    end
  end
  return L
end

--- The preview in a split below the transcript (filetype diff); returns
--- its buffer.
local function show_preview(lines, name)
  local b = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(b, 0, -1, false, lines)
  vim.bo[b].filetype = 'diff'
  vim.bo[b].modifiable = false
  vim.bo[b].bufhidden = 'wipe'
  pcall(api.nvim_buf_set_name, b, name)
  local tw = wins_of(S.buf)[1]
  if tw then
    api.nvim_set_current_win(tw)
  end
  vim.cmd('belowright split')
  api.nvim_win_set_buf(0, b)
  S.preview = b
  return b
end

local function close_preview(b)
  for _, w in ipairs(wins_of(b)) do
    pcall(api.nvim_win_close, w, true)
  end
  if S.preview == b then
    S.preview = nil
  end
end

--- Tells what the applied restore did, reloads the clean buffers of the
--- files it wrote, and keeps its way back (gU, :Agent chat unrestore).
local function restored(root, chat_id, turn, what, res)
  local parts = { ('agentd: restored to before turn %d'):format(turn + 1) }
  local level = vim.log.levels.INFO
  local back = { chat_id = chat_id, turn = turn, what = what }
  local f = type(res.files) == 'table' and res.files or nil
  if f then
    local undo = require('agentd.undo')
    local dirty, n = undo.reload(root, undo.normalize(f))
    parts[#parts + 1] = ('%d file%s taken back'):format(n, n == 1 and '' or 's')
    if #(f.kept or {}) > 0 or #(f.conflicts or {}) > 0 then
      level = vim.log.levels.WARN
      parts[#parts + 1] = 'kept as you have them: ' .. names(#(f.kept or {}) > 0 and f.kept or f.conflicts)
    end
    if #(f.overwritten or {}) > 0 then
      parts[#parts + 1] = 'overwritten: ' .. names(f.overwritten)
    end
    if #dirty > 0 then
      level = vim.log.levels.WARN
      parts[#parts + 1] = table.concat(dirty, ', ') .. ': your unsaved edits are kept in the buffer (:e! loads the file)'
    end
    back.files = type(f.wayBack) == 'table' and f.wayBack or nil
  end
  local cv = type(res.conversation) == 'table' and res.conversation or nil
  if cv then
    parts[#parts + 1] = #(cv.turns or {}) > 0 and (turns_text(cv.turns) .. ' rewound (not told to the model)') or 'no turn to rewind'
    back.conversation = type(cv.wayBack) == 'table' and cv.wayBack or nil
  end
  if back.files or back.conversation then
    S.restored = back
    parts[#parts + 1] = 'gU in the chat (or :Agent chat unrestore) takes it back'
  end
  notify(table.concat(parts, '; '), level)
end

--- Sends the restore for real with the choice; a conflict that came up
--- since the dry run asks again. done(applied) at the end.
local function restore_apply(c, chat_id, turn, what, on_conflict, done)
  local params = { chatId = chat_id, turn = turn, what = what }
  if on_conflict then
    params.onConflict = on_conflict
  end
  local res, err = client.request_sync(c, 'agentd/chat/restore', params)
  if not res then
    notify('agentd: restore: ' .. err, vim.log.levels.ERROR)
    return done(false)
  end
  if not res.applied then
    -- A conflict new since the dry run: shown and asked again.
    return M.restore(chat_id, turn, what, done)
  end
  restored(c.root_dir or S.root, chat_id, turn, what, res)
  if chat_id == S.chat_id then
    M.refresh()
  end
  return done(true)
end

--- Restore to before turn (0-based) of chat_id, what: 'files',
--- 'conversation' or 'both': a dry run first, shown in a diff buffer;
--- then asked: restore, or with conflicts keep my lines / overwrite /
--- cancel (the wire's onConflict). done(applied) when it ends.
function M.restore(chat_id, turn, what, done)
  done = done or function() end
  local c = cl()
  if not c then
    return done(false)
  end
  local dry, err = client.request_sync(c, 'agentd/chat/restore', { chatId = chat_id, turn = turn, what = what, dryRun = true })
  if not dry then
    notify('agentd: restore (dry run): ' .. err, vim.log.levels.ERROR)
    return done(false)
  end
  local pb = show_preview(preview_lines(turn, what, dry), ('agentd://chat/%s/restore-%d'):format(chat_id, turn + 1))
  -- The default vim.ui.select (inputlist) asks without redrawing: the
  -- preview would not be on screen while the user decides over it.
  vim.cmd.redraw()
  local f = type(dry.files) == 'table' and dry.files or {}
  local items
  if dry.applied then
    items = {
      { choice = 'go', text = ('Restore to before turn %d (%s) as shown'):format(turn + 1, what) },
      { choice = 'cancel', text = 'Cancel (nothing changes)' },
    }
  else
    local files = names(f.conflicts)
    items = {
      { choice = 'keep', text = ('Keep my lines: restore the rest, leave %s as I have it'):format(files) },
      { choice = 'overwrite', text = ('Overwrite my lines in %s (a safety snapshot keeps them)'):format(files) },
      { choice = 'cancel', text = 'Cancel (nothing changes)' },
    }
  end
  vim.ui.select(items, {
    prompt = dry.applied and ('agentd: restore to before turn %d?'):format(turn + 1) or ('agentd: restoring to before turn %d conflicts with your edits'):format(turn + 1),
    kind = 'agentd.chat_restore',
    format_item = function(it)
      return it.text
    end,
  }, function(it)
    close_preview(pb)
    local choice = it and it.choice or 'cancel'
    if choice == 'cancel' then
      notify('agentd: nothing restored', vim.log.levels.INFO)
      return done(false)
    end
    restore_apply(c, chat_id, turn, what, choice ~= 'go' and choice or nil, done)
  end)
end

local what_items = {
  { what = 'both', text = 'Files and conversation: take back what turn %d and later wrote, and do not tell the model those turns' },
  { what = 'files', text = 'Files only: take back what turn %d and later wrote (your own lines stay)' },
  { what = 'conversation', text = 'Conversation only: do not tell the model turn %d and later (kept here; files stay)' },
}

--- U on a turn: restore to before it, asking what (files, conversation or
--- both), with the dry run shown first.
function M.restore_turn(what)
  local _, m = turn_at_cursor()
  if not m then
    return
  end
  local chat_id, turn = S.chat_id, m.turn - 1
  if what then
    return M.restore(chat_id, turn, what)
  end
  vim.ui.select(what_items, {
    prompt = ('agentd: restore to before turn %d: what?'):format(m.turn),
    kind = 'agentd.chat_restore_what',
    format_item = function(it)
      return it.text:format(m.turn)
    end,
  }, function(it)
    if it then
      M.restore(chat_id, turn, it.what)
    end
  end)
end

--- gu on a rewound turn: brings its rewind back (agentd/chat/unrewind).
function M.unrewind_turn()
  local t = turn_at_cursor()
  if not t then
    return
  end
  if not t.rewound or not t.rewindId then
    notify('agentd: this turn is not rewound (U restores to before a turn)', vim.log.levels.WARN)
    return
  end
  local res, err = client.request_sync(cl(), 'agentd/chat/unrewind', { chatId = S.chat_id, rewindId = t.rewindId })
  if not res then
    notify('agentd: unrewind: ' .. err, vim.log.levels.ERROR)
    return
  end
  if S.restored and S.restored.conversation and (S.restored.conversation.params or {}).rewindId == t.rewindId then
    S.restored.conversation = nil
  end
  notify(('agentd: %s told to the model again'):format(turns_text(res.turns)), vim.log.levels.INFO)
  M.refresh()
  return res
end

--- gU / :Agent chat unrestore: takes the last restore back, both its
--- parts (the files through agentd/undo/restore with the choices of
--- :Agent undo-restore, the conversation through agentd/chat/unrewind).
function M.unrestore()
  local r = S.restored
  if not r or not (r.files or r.conversation) then
    notify('agentd: no restore of the chat to take back (U on a turn restores to before it)', vim.log.levels.WARN)
    return
  end
  local ok = true
  if r.files then
    local p = r.files.params or {}
    local res
    if r.files.method == 'agentd/undo/restore' and p.id then
      res = require('agentd.undo').undo('restore', p.id, {})
    else
      res = client.request_sync(cl(), r.files.method, p)
    end
    if res and (res.applied ~= false) then
      r.files = nil
    else
      ok = false
    end
  end
  if r.conversation then
    local res, err = client.request_sync(cl(), r.conversation.method, r.conversation.params)
    if res then
      r.conversation = nil
      notify(('agentd: %s told to the model again'):format(turns_text(res.turns)), vim.log.levels.INFO)
    else
      ok = false
      notify('agentd: unrewind: ' .. err, vim.log.levels.ERROR)
    end
  end
  if not r.files and not r.conversation then
    S.restored = nil
  end
  M.refresh()
  return ok
end

--- E on a turn: its message in the input, to edit; sending it branches the
--- chat there (M.branch).
function M.edit_message()
  local t, m = turn_at_cursor()
  if not t then
    return
  end
  S.editing = { chat_id = S.chat_id, turn = m.turn - 1, request = t.request or '', question = t.question }
  if S.input and api.nvim_buf_is_valid(S.input) then
    api.nvim_buf_set_lines(S.input, 0, -1, false, vim.split((t.question and '?' or '') .. (t.request or ''), '\n'))
  end
  M.draw()
  focus_input(false)
  notify(('agentd: edit turn %d\'s message and send it: the chat branches there (d on the "Editing" line stops)'):format(m.turn), vim.log.levels.INFO)
end

--- d on the "Editing" line: the input is a plain message again.
function M.stop_editing()
  S.editing = nil
  M.draw()
end

--- Whether a turn from turn (0-based) on has a run not undone.
local function runs_from(view, turn)
  for i, t in ipairs(view and view.turns or {}) do
    if i - 1 >= turn and t.runId and not t.undone then
      return true
    end
  end
  return false
end

--- Sends the edited message as a branch: agentd/chat/fork at its turn,
--- the buffer switches to the new chat, the files are offered back to
--- before that turn (restore what "files" on the original chat, dry run
--- first), then the message is planned (or asked) in the new chat.
function M.branch(message)
  local ed = S.editing
  message = vim.trim(message or '')
  if not ed or message == '' then
    return false
  end
  local ask = false
  if message:sub(1, 1) == '?' then
    ask, message = true, vim.trim(message:sub(2))
  end
  local r = context.resolve(message, { origin = S.origin, root = S.root, selection = S.selection, client = cl() })
  if #r.problems > 0 then
    notify('agentd: not sent: ' .. table.concat(r.problems, '; '), vim.log.levels.WARN)
    return false
  end
  local c = cl()
  local res, err = client.request_sync(c, 'agentd/chat/fork', { chatId = ed.chat_id, turn = ed.turn, request = message })
  if not res then
    notify('agentd: branch: ' .. err, vim.log.levels.ERROR)
    return false
  end
  S.editing = nil
  local from_view = S.view
  S.titles[ed.chat_id] = from_view and from_view.title or S.titles[ed.chat_id]
  M.resume(res.chatId)
  notify(('agentd: branched at turn %d into %s; the original chat stays (gb on the header goes there)'):format(ed.turn + 1, res.chatId), vim.log.levels.INFO)
  local function go()
    dispatch(message, ask, r, { turns_before = res.turns or ed.turn })
  end
  if not runs_from(from_view, ed.turn) then
    go()
    return true
  end
  vim.ui.select({
    { files = false, text = 'Keep the files as they are now' },
    { files = true, text = ('Restore the files to before turn %d too (a dry run shows the diff first)'):format(ed.turn + 1) },
  }, {
    prompt = 'agentd: the branch starts with the files as they are; restore them to before that turn?',
    kind = 'agentd.chat_branch_files',
    format_item = function(it)
      return it.text
    end,
  }, function(it)
    if it and it.files then
      M.restore(ed.chat_id, ed.turn, 'files', function()
        go()
      end)
    else
      go()
    end
  end)
  return true
end

--- gb: on the header of a branch, its origin; on a branch line, that
--- branch.
function M.goto_branch()
  local m = meta_at_cursor()
  if (m.kind == 'branch' or m.kind == 'header') and m.chatId then
    M.resume(m.chatId)
    return m.chatId
  end
  notify('agentd: gb opens a branch: put the cursor on a "branch" line, or on the header of a branch to go to its origin', vim.log.levels.WARN)
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

--- Sends what the input buffer holds; cleared once sent, kept when refused.
function M.send_input()
  local b = S.input
  if not b or not api.nvim_buf_is_valid(b) then
    return false
  end
  local text = table.concat(api.nvim_buf_get_lines(b, 0, -1, false), '\n')
  local ed = S.editing
  local send = (ed and ed.chat_id == S.chat_id) and M.branch or M.send
  if send(text) then
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
    map(b, 'n', 'e', function()
      if meta_at_cursor().kind == 'queued' then
        return M.edit_queued()
      end
      return M.edit_turn()
    end, "edit the turn's plan (on a queued message: its words)")
    map(b, 'n', 'gs', M.send_queued_now, 'send the queued message now (stops the going turn)')
    map(b, 'n', 'R', function() M.revise_turn() end, "revise the turn's plan in words")
    map(b, 'n', 'u', M.undo_turn, 'undo this turn')
    map(b, 'n', 'U', function() M.restore_turn() end, 'restore to before this turn (files, conversation or both)')
    map(b, 'n', 'gU', M.unrestore, 'take the last restore back')
    map(b, 'n', 'gu', M.unrewind_turn, 'bring the rewound turn back')
    map(b, 'n', 'E', M.edit_message, "edit the turn's message: sending it branches the chat")
    map(b, 'n', 'gb', M.goto_branch, 'open the branch (or the origin of this branch)')
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
    map(b, { 'n', 'i' }, '<C-g>', M.guide_input, 'send the message to the going turn as guidance')
    -- # starts the completion of the context items, with nothing inserted
    -- until one is chosen: with Neovim's default completeopt the first
    -- item was inserted at once, and "#diff" typed on became
    -- "#bufferdiff". <C-p> goes back to the typed text, unless the user's
    -- completeopt inserts nothing already (there it would pick the last).
    vim.keymap.set('i', '#', function()
      local co = vim.o.completeopt
      return (co:find('noinsert') or co:find('noselect')) and '#<C-x><C-o>' or '#<C-x><C-o><C-p>'
    end, { buffer = b, expr = true, nowait = true, silent = true, desc = 'agentd chat: complete a context item' })
    -- The sizes of what it names, drawn above it as the user types.
    context.watch(b, function() return cl(), { origin = S.origin, root = S.root, selection = S.selection } end)
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
  if S.editing and S.editing.chat_id ~= chat_id then
    S.editing = nil
  end
  S.chat_id = chat_id
  S.view, S.changes, S.pending, S.built, S.activity, S.inflight = nil, {}, nil, nil, {}, nil
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
  local titles = {}
  for _, ch in ipairs(chats) do
    titles[ch.chatId] = ch.title
    S.titles[ch.chatId] = ch.title or ''
  end
  if #chats == 0 then
    notify('agentd: no chats yet in this workspace; :Agent chat starts one', vim.log.levels.INFO)
    return
  end
  vim.ui.select(chats, {
    prompt = 'agentd: chat to resume',
    kind = 'agentd.chat',
    format_item = function(ch)
      local from = ''
      if type(ch.forkedFrom) == 'table' and ch.forkedFrom.chatId then
        local o = titles[ch.forkedFrom.chatId]
        from = ('  · branch of %s at turn %d'):format((o and o ~= '') and ('"' .. o .. '"') or ch.forkedFrom.chatId, (ch.forkedFrom.turn or 0) + 1)
      end
      return ('%s  (%d turn%s, %s)%s'):format(ch.title ~= '' and ch.title or ch.chatId, ch.turns or 0, ch.turns == 1 and '' or 's', ch.updatedAt or '', from)
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
  elseif sub == 'unrestore' then
    M.unrestore()
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
    notify(('agentd: :Agent chat [new|list|ask {question}|unrestore]: unknown %q'):format(sub), vim.log.levels.ERROR)
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
