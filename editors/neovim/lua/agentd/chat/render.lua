-- The chat transcript as Markdown lines: one section per turn (the
-- request; a question's answer; a plan turn's card, run, change summary,
-- review and undo), with what each line is (for the keys) and the folds
-- (the plan card, a failure's output).
local R = {}

local function rel(root, uri)
  local p = vim.uri_to_fname(uri)
  if root and vim.startswith(p, root .. '/') then
    return p:sub(#root + 2)
  end
  return vim.fn.fnamemodify(p, ':~:.')
end

--- A cost in USD as the chat shows it (the VS Code view's the same): cents
--- from $0.10, else up to four decimals without trailing zeros; a cost too
--- small for that is "<$0.0001".
function R.cost_words(c)
  if c >= 0.1 then
    return ('$%.2f'):format(c)
  end
  local s = ('%.4f'):format(c):gsub('0+$', ''):gsub('%.$', '')
  if s == '0' and c > 0 then
    return '<$0.0001'
  end
  return '$' .. s
end

local function counts_text(f)
  local c = f.counts or {}
  local parts = {}
  for _, k in ipairs({ 'pending', 'stale', 'accepted', 'rejected' }) do
    if (c[k] or 0) > 0 then
      parts[#parts + 1] = ('%d %s'):format(c[k], k)
    end
  end
  return #parts > 0 and (' (' .. table.concat(parts, ', ') .. ')') or ''
end

--- The live status of each of a running turn's steps, from the run's
--- notifications (agentd/run/didChange); nil when none arrived yet.
local function live_steps(t)
  local st = require('agentd.state').steps[t.runId]
  if not st then
    return nil
  end
  local out = {}
  for _, s in ipairs(t.planSteps or {}) do
    local id = s:match('^(%S+)')
    out[#out + 1] = ('step %s: %s'):format(id, st[id] or 'pending')
  end
  return out
end

local option_keys = { allow_once = 'a', allow_always = 'A', reject_once = 'x', reject_always = 'X' }

--- An approval asked in the chat: what asks (step, tool, risk), what it
--- does, and its options with their keys.
local function approval_lines(add, a, turn)
  local p = a.p
  local m = { turn = turn, kind = 'approval', approval = a.id }
  add('', m)
  add(('#### Approval needed: %s'):format(p.title or '?'), m)
  add(('step %s%s, %s risk%s'):format(p.stepId or '?', p.tool and (' (' .. p.tool .. ')') or '', p.risk or '?', p.sensitive and ', a sensitive file' or ''), m)
  if p.command and p.command ~= '' then
    add(('command: `%s` in %s'):format(p.command, (p.cwd and p.cwd ~= '') and p.cwd or '.'), m)
  end
  if p.detail and p.detail ~= '' then
    add((p.category == 'delete' and 'deletes: ' or '') .. p.detail, m)
  end
  local opts = {}
  for _, o in ipairs(p.options or {}) do
    opts[#opts + 1] = ('%s %s'):format(option_keys[o.kind] or '?', o.name or o.kind or o.optionId)
  end
  add(table.concat(opts, ' · '), m)
  add('_nothing is done until you choose (the step waits); :Agent approve asks in a picker_', m)
end

--- A step's output, folded under its step line.
local function output_lines(add, turn, step, text)
  text = text:gsub('\n$', '')
  local ls = vim.split(text, '\n', { plain = true })
  add(('  output of step %s: %d line%s (za)'):format(step, #ls, #ls == 1 and '' or 's'), { turn = turn, kind = 'output:' .. step }, '>1')
  for _, l in ipairs(ls) do
    add('    ' .. l, { turn = turn, kind = 'output' }, '1')
  end
end

--- Builds the transcript. view: chat/load's result (nil: a chat not
--- loaded yet); x: { chat_id, root, changes = { [runId] = {ChangeSet} },
--- pending = { kind, request, text, chips, cancelled },
--- approvals = { { p, id, turn? } }, output = { [runId] = { [stepId] = text } },
--- model = the model's name or nil, activity = { [turn] = { line } } (the
--- planner's work on a plan turn, agentd/chat/stream's activity),
--- titles = { [chatId] = title } (of the chat's branches and origin),
--- editing = { turn } (the message being edited for a branch) }.
--- Returns { lines, meta = { [lnum] = { turn, kind, uri, runId, chatId } },
--- folds = { [lnum] = level expr }, cards = { lnum of each card header },
--- dim = { [lnum] = true } (the lines of rewound turns) }.
function R.build(view, x)
  local lines, meta, folds, cards, dim = {}, {}, {}, {}, {}
  -- While a rewound turn's body is added: every line of it is dimmed and
  -- folded one level deeper (the turn folds whole under its heading).
  local rewound = nil -- nil, 'first' (the next line opens the fold), 'in'
  local deeper = { ['0'] = '1', ['1'] = '2', ['>1'] = '>2' }
  local function add(line, m, fold)
    for _, l in ipairs(vim.split(line, '\n', { plain = true })) do
      lines[#lines + 1] = l
      meta[#lines] = m
      local f = fold or '0'
      if rewound then
        dim[#lines] = true
        f = rewound == 'first' and '>1' or deeper[f] or f
        rewound = 'in'
      end
      folds[#lines] = f
      fold = (fold == '>1') and '1' or fold
    end
  end
  view = view or { turns = {} }
  local titles = x.titles or {}
  local function chat_name(id)
    local t = titles[id]
    return (t and t ~= '') and ('"' .. t .. '"') or id
  end
  local title = (view.title and view.title ~= '') and view.title or 'new chat'
  local from = ''
  local ff = view.forkedFrom
  if type(ff) == 'table' and ff.chatId then
    -- The wire's turn is 0-based: the branch differs from turn turn+1 on.
    from = ('  · branch of %s at turn %d (gb goes there)'):format(chat_name(ff.chatId), (ff.turn or 0) + 1)
  end
  add(('# %s  (%s)%s%s'):format(title, x.chat_id or '?', from, x.model and ('  · model ' .. x.model .. ' (m changes it)') or ''), { kind = 'header', chatId = ff and ff.chatId })
  add('_<CR> sends · ?question asks · #buffer #selection #file: #diagnostics · :help agentd-chat_')
  local branches = {} -- [turn, 1-based] = { {chatId, turn} }
  for _, br in ipairs(type(view.branches) == 'table' and view.branches or {}) do
    local k = (br.turn or 0) + 1
    branches[k] = branches[k] or {}
    table.insert(branches[k], br)
  end
  local function branch_lines(i)
    for _, br in ipairs(branches[i] or {}) do
      add(('_↳ branch %s (%s) goes on from here with an edited message: gb opens it_'):format(chat_name(br.chatId), br.chatId), { turn = i <= #(view.turns or {}) and i or nil, kind = 'branch', chatId = br.chatId })
    end
  end
  local asks = {} -- [turn] = { approval }, [0] = the ones of no turn
  for _, a in ipairs(x.approvals or {}) do
    local k = a.turn or 0
    asks[k] = asks[k] or {}
    table.insert(asks[k], a)
  end
  local condensed = {}
  for _, n in ipairs(view.condensed or {}) do
    condensed[n] = true
  end
  for i, t in ipairs(view.turns or {}) do
    local m = { turn = i }
    add('', m)
    local head = ('## %d. You%s'):format(i, t.question and ' asked' or '')
    if type(t.tokens) == 'table' and (t.tokens.input or t.tokens.output) then
      head = head .. ('  · tokens %d in, %d out'):format(t.tokens.input or 0, t.tokens.output or 0)
      if type(t.tokens.cost) == 'number' then
        head = head .. ' · ' .. R.cost_words(t.tokens.cost)
      end
    end
    if t.rewound then
      head = head .. '  _(rewound: not told to the model; gu brings it back)_'
    elseif condensed[i] then
      head = head .. '  _(condensed in the next request: its output and long answer are shortened)_'
    end
    local hstart = #lines + 1
    add(head, { turn = i, kind = 'turn' })
    add(t.request or '', { turn = i, kind = 'request' })
    -- The words the user gave the turn while it was going (agentd/chat/queue
    -- when "guidance").
    for _, g in ipairs(t.guidance or {}) do
      add('guidance: ' .. g, { turn = i, kind = 'guidance' })
    end
    if t.rewound then
      -- Heading and request stay in sight, dimmed; the rest folds.
      for l = hstart, #lines do
        dim[l] = true
      end
      rewound = 'first'
    end
    if t.question then
      add('', m)
      add(t.status == 'cancelled' and '### agentd (stopped)' or '### agentd', m)
      for _, r in ipairs(t.read or {}) do
        add('> ' .. r, m)
      end
      add((t.answer and t.answer ~= '') and t.answer or '_(no answer)_', m)
    elseif not t.planId and (t.status == 'planning' or t.status == 'cancelled' or t.status == 'failed') then
      -- A plan turn recorded when its planning started: being planned,
      -- or stopped or failed before a plan was made.
      add('', m)
      if t.status == 'planning' then
        add('_making a plan… (<C-c> stops)_', { turn = i, kind = 'planning' })
      elseif t.status == 'cancelled' then
        add('_planning stopped: no plan was made (the next turns are told so)_', { turn = i, kind = 'planning' })
      else
        add('_planning failed: no plan was made_', { turn = i, kind = 'planning' })
      end
      for _, a in ipairs((x.activity or {})[i] or {}) do
        add('  · ' .. a, { turn = i, kind = 'activity' })
      end
      if t.status == 'failed' and t.failure and t.failure ~= '' then
        for _, l in ipairs(vim.split(t.failure, '\n')) do
          add('    ' .. l, m)
        end
      end
    elseif t.planId then
      add('', m)
      cards[#cards + 1] = #lines + 1
      add(('### Plan: %s  (r run · e edit · R revise · za)'):format(t.planTitle or t.planId), { turn = i, kind = 'card' }, '>1')
      add('Request: ' .. (t.request or ''):gsub('\n.*', ' …'), m, '1')
      for j, s in ipairs(t.planSteps or {}) do
        add(('%d. %s'):format(j, s), m, '1')
      end
      if t.runId then
        add('', m)
        add(('**Run %s: %s**'):format(t.runId, t.status or '?'), { turn = i, kind = 'run' })
        local steps = (t.status == 'running' and live_steps(t)) or t.steps or {}
        local out = (x.output or {})[t.runId] or {}
        for _, s in ipairs(steps) do
          add('- ' .. s, m)
          local id = s:match('^step (%S+):')
          if id and out[id] and out[id] ~= '' then
            output_lines(add, i, id, out[id])
          end
        end
        if t.failure and t.failure ~= '' then
          add('Failure (za unfolds the output):', m, '>1')
          for _, l in ipairs(vim.split(t.failure, '\n')) do
            add('    ' .. l, m, '1')
          end
        end
        local sets = (x.changes or {})[t.runId] or {}
        local any = false
        for _, cs in ipairs(sets) do
          for _, f in ipairs(cs.files or {}) do
            if not any then
              add('Changes (ga accept, gr reject the file; <CR> opens its review):', m)
              any = true
            end
            add(('- %s  %s%s'):format(rel(x.root, f.uri), f.status or cs.status or '?', counts_text(f)), { turn = i, kind = 'file', uri = f.uri, changeId = cs.id, runId = t.runId })
          end
        end
        if t.review and #t.review > 0 then
          add('Decisions:', m)
          for _, r in ipairs(t.review) do
            add('- ' .. r, m)
          end
        end
        if t.undone then
          add('_This turn was undone: its changes were taken back._', m)
        elseif t.status ~= 'running' then
          add('_u undoes this turn._', m)
        end
      else
        add('_Not run yet: r runs the plan._', m)
      end
    end
    rewound = nil
    branch_lines(i)
    for _, a in ipairs(asks[i] or {}) do
      approval_lines(add, a, i)
    end
  end
  -- A branch made after the last turn (forked at the end).
  branch_lines(#(view.turns or {}) + 1)
  local p = x.pending
  if p then
    local m = { kind = 'pending' }
    add('', m)
    add(p.kind == 'ask' and '## You asked' or (p.kind == 'revise' and '## Revising the plan' or '## You'), m)
    add(p.request, m)
    if p.chips and #p.chips > 0 then
      add('_context: ' .. table.concat(p.chips, ', ') .. '_', m)
    end
    add('', m)
    if p.kind == 'ask' then
      add(p.cancelled and '### agentd (stopping…)' or '### agentd (answering… <C-c> stops)', m)
      add(p.text ~= '' and p.text or '…', m)
    else
      add(p.cancelled and '_stopping…_' or '_making a plan… (<C-c> stops)_', m)
    end
  end
  for _, a in ipairs(asks[0] or {}) do
    approval_lines(add, a, nil)
  end
  if x.editing then
    add('', { kind = 'editing' })
    add(('_Editing turn %d\'s message in the input: sending it starts a branch there (the chat stays as it is; d here stops editing)_'):format(x.editing.turn + 1), { kind = 'editing' })
  end
  if #(view.condensed or {}) > 0 and not p then
    -- Said before the user sends: the next request shortens these.
    local c = view.condensed
    local which = #c == 1 and ('turn %d'):format(c[1]) or ('turns %d-%d'):format(c[1], c[#c])
    local contiguous = #c == 1 or (c[#c] - c[1] + 1 == #c)
    if not contiguous then
      which = 'turns ' .. table.concat(c, ', ')
    end
    add('', { kind = 'condensed' })
    add(('_%s will be condensed for the model in your next message (kept whole here)_'):format(which), { kind = 'condensed' })
  end
  local queued = type(view.queued) == 'table' and view.queued or {}
  if #queued > 0 then
    add('', { kind = 'pending' })
    add('### Queued (planned one by one when the turn ends; d removes, e edits, gs sends now)', { kind = 'pending' })
    for _, q in ipairs(queued) do
      local first = (q.request or ''):gsub('\n.*', ' …')
      add(('- queued%s: %s'):format(q.when == 'now' and ' (now)' or '', first), { kind = 'queued', queueId = q.queueId, request = q.request, context = q.context })
    end
  end
  return { lines = lines, meta = meta, folds = folds, cards = cards, dim = dim }
end

return R
