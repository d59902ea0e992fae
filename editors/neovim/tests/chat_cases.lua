-- :Agent chat (lua/agentd/chat/) driven headless against the real daemon
-- and the project's fake model. cases.lua adds these to its table; run.sh
-- lists them from this file too.
local H = require('helpers')

return function(C)
  local function chat()
    return require('agentd.chat')
  end

  local function model(replies, extra)
    local url = H.fakemodel(replies)
    vim.env.OPENAI_API_KEY = 'test-key'
    H.setup(vim.tbl_extend('force', { model = { provider = 'openai', model = 'fake', baseUrl = url }, notify_steps = false }, extra or {}))
    return url
  end

  --- The request bodies the fake model received, decoded.
  local function requests(url)
    local r = vim.system({ 'curl', '-s', url:gsub('/v1$', '') .. '/requests' }, { text = true }):wait()
    return vim.json.decode(r.stdout ~= '' and r.stdout or '[]') or {}
  end

  local function transcript()
    return H.text((chat().bufs()))
  end

  --- Where turn n's heading (whatever follows it on its line: its tokens)
  --- is followed by its request, in text (the transcript by default).
  local function turn_with(n, heading, request, text)
    local pat = ('## %d%%. %s[^\n]*\n%s\n'):format(n, vim.pesc(heading), vim.pesc(request))
    return (text or transcript()):find(pat)
  end

  local function wait_text(s, what)
    H.wait(function()
      return transcript():find(s, 1, true) ~= nil
    end, function()
      return (what or s) .. ' in the chat; it has:\n' .. transcript()
    end, 30000)
  end

  --- Writes a message in the input and sends it with the key (<CR> in
  --- normal mode, or <C-s> in insert mode).
  local function send(text, insert)
    local _, ib = chat().bufs()
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_buf(w) == ib then
        vim.api.nvim_set_current_win(w)
      end
    end
    vim.api.nvim_buf_set_lines(ib, 0, -1, false, vim.split(text, '\n'))
    if insert then
      vim.api.nvim_feedkeys('A' .. vim.keycode('<C-s>'), 'mx', false)
    else
      vim.api.nvim_feedkeys(vim.keycode('<CR>'), 'mx', false)
    end
  end

  --- Puts the cursor of the transcript's window on the first line matching
  --- pat and presses keys there.
  local function press_on(pat, keys)
    local tb = chat().bufs()
    local win
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_buf(w) == tb then
        win = w
      end
    end
    vim.api.nvim_set_current_win(H.truthy(win, 'the transcript is shown'))
    for i, l in ipairs(H.lines(tb)) do
      if l:find(pat) then
        vim.api.nvim_win_set_cursor(win, { i, 0 })
        vim.api.nvim_feedkeys(vim.keycode(keys), 'mx', false)
        return i, win
      end
    end
    error('no line matching ' .. pat .. ' in:\n' .. transcript(), 2)
  end

  local function plan_reply(title, steps)
    return { text = vim.json.encode({ title = title, steps = steps }) }
  end
  local read_a = { { id = 'read', description = 'read a', tool = 'read_file', args = { path = 'a.txt' } } }

  -- Two turns: the plan card is drawn (folded) for each, and the second
  -- turn's planner request, as the fake model received it, carries turn 1.
  function C.chat_two_turns()
    H.workspace({ ['a.txt'] = 'a\n' })
    local url = model({ plan_reply('Read a', read_a), plan_reply('Read a again', read_a) })
    H.open('a.txt')
    vim.cmd('Agent chat')
    local tb, ib = chat().bufs()
    H.eq(ib, vim.api.nvim_get_current_buf(), 'the input is focused')
    H.eq('markdown', vim.bo[tb].filetype, 'the transcript is Markdown')
    send('read the file a.txt')
    wait_text('### Plan: Read a', 'turn 1 plan card')
    H.truthy(turn_with(1, 'You', 'read the file a.txt'), 'turn 1 request:\n' .. transcript())
    local card, win = press_on('^### Plan: Read a', '')
    H.truthy(vim.api.nvim_win_call(win, function() return vim.fn.foldclosed(card + 1) end) ~= -1, 'the card is folded')
    vim.api.nvim_feedkeys('za', 'mx', false)
    H.eq(-1, vim.api.nvim_win_call(win, function() return vim.fn.foldclosed(card + 1) end), 'za unfolds the card')
    H.truthy(transcript():find('1. read [read_file]', 1, true), 'its step in words:\n' .. transcript())
    send('now read it again', true)
    wait_text('### Plan: Read a again', 'turn 2 plan card')
    H.eq(-1, vim.api.nvim_win_call(win, function() return vim.fn.foldclosed(card + 1) end), 'the opened card stays open after a redraw')
    local reqs = requests(url)
    local last = vim.json.encode(reqs[#reqs])
    H.truthy(last:find('now read it again', 1, true), 'turn 2 asked: ' .. last:sub(1, 3000))
    H.truthy(last:find('read the file a.txt', 1, true) and last:find('Read a', 1, true), 'turn 2 planner request carries turn 1: ' .. last:sub(1, 3000))
  end

  -- :'<,'>Agent chat: the input starts with #selection, and the lines
  -- selected reach plan/create's context.items (the model is shown them).
  function C.chat_selection_context()
    H.workspace({ ['a.txt'] = 'alpha\nbravo-selected\ncharlie-selected\ndelta\n' })
    local url = model({ plan_reply('Read a', read_a) })
    H.open('a.txt')
    local sent = {}
    local c = vim.lsp.get_clients({ name = 'agentd' })[1]
    local orig = c.request
    c.request = function(method, params, ...)
      sent[#sent + 1] = { method = method, params = params }
      return orig(method, params, ...)
    end
    vim.cmd('normal! 2GVj' .. vim.keycode('<Esc>'))
    vim.cmd("'<,'>Agent chat")
    local _, ib = chat().bufs()
    H.eq('#selection ', H.lines(ib)[1], 'the input names the selection')
    send('#selection explain these lines')
    wait_text('### Plan: Read a')
    local ctx
    for _, s in ipairs(sent) do
      if s.method == 'agentd/plan/create' then
        ctx = s.params.context
      end
    end
    local sel = ctx and ctx.items and ctx.items[1]
    H.truthy(sel and sel.range, 'plan/create has a {uri, range} item: ' .. vim.inspect(sent))
    H.eq({ start = { line = 1, character = 0 }, ['end'] = { line = 2, character = 16 } }, sel.range, 'the selected lines')
    H.truthy(sel.uri:match('/a%.txt$'), 'of a.txt')
    local body = vim.json.encode(requests(url))
    H.truthy(body:find('bravo-selected\\ncharlie-selected', 1, true), 'the model was shown the selection: ' .. body:sub(1, 3000))
  end

  -- ?question asks (agentd/chat/ask): the answer streams into the buffer
  -- before the request is answered, and stays as the turn's answer.
  function C.chat_question_streams()
    H.workspace({ ['a.txt'] = 'a\n' })
    model({ { text = 'The file a.txt holds one line: the letter a.' } })
    H.open('a.txt')
    vim.cmd('Agent chat')
    local seen = {}
    local on_stream = chat().on_stream
    chat().on_stream = function(p)
      on_stream(p)
      -- What the buffer shows right after each piece, while the answer is
      -- still coming (the request not answered yet).
      seen[#seen + 1] = { text = transcript(), busy = chat().busy() }
    end
    send('? what is in a.txt?')
    wait_text('### agentd\n', 'the answered turn')
    H.truthy(#seen > 0, 'agentd/chat/stream pieces arrived')
    H.truthy(seen[1].busy and seen[1].text:find('answering', 1, true), 'the first piece was drawn while answering:\n' .. (seen[1] and seen[1].text or ''))
    H.truthy(seen[#seen].text:find('The file a.txt holds one line: the letter a.', 1, true), 'the streamed pieces made the answer:\n' .. seen[#seen].text)
    H.truthy(turn_with(1, 'You asked', 'what is in a.txt?'), 'the question turn:\n' .. transcript())
    H.truthy(transcript():find('The file a.txt holds one line: the letter a.', 1, true), 'the answer is kept')
  end

  -- A plan turn that writes: r runs it; a message sent while it runs is
  -- queued, saying why, and d removes it; ga on the file line accepts the file; u undoes
  -- the turn (agentd/undo/run with its runId) and the turn says so.
  function C.chat_run_accept_and_undo_turn()
    local root = H.workspace({ ['a.txt'] = 'a\n' })
    model({ plan_reply('Write b', { { id = 'w', description = 'write b', tool = 'write_file', args = { path = 'b.txt', content = 'bee\n' } } }) })
    H.open('a.txt')
    local got = H.capture_notify()
    vim.cmd('Agent chat')
    send('write b.txt')
    wait_text('### Plan: Write b')
    press_on('^### Plan: Write b', 'r')
    wait_text('- b.txt  pending', 'the change summary line of b.txt')
    H.truthy(transcript():find(': running**', 1, true), 'the run is shown running:\n' .. transcript())
    wait_text('- step w: waiting', 'the live step line')
    -- <CR> on the file line opens the file at its review, in the window
    -- the chat was opened from.
    press_on('^%- b%.txt  pending', '<CR>')
    H.truthy(vim.api.nvim_buf_get_name(0):match('/b%.txt$'), '<CR> opened b.txt: ' .. vim.api.nvim_buf_get_name(0))
    H.truthy(#vim.api.nvim_buf_get_extmarks(0, -1, 0, -1, {}) > 0, 'its proposal is drawn')
    send('and another thing')
    H.wait(function()
      for _, n in ipairs(got) do
        if n.msg:find('queued: sent when run run-', 1, true) then
          return true
        end
      end
    end, 'the message queued while the run goes, saying why: ' .. vim.inspect(got))
    local _, ib = chat().bufs()
    H.eq({ '' }, H.lines(ib), 'the queued message left the input')
    H.truthy(transcript():find('- queued: and another thing', 1, true), 'shown queued:\n' .. transcript())
    press_on('^%- queued: and another thing', 'd')
    H.truthy(not transcript():find('queued: and another thing', 1, true), 'd removed it:\n' .. transcript())
    press_on('^%- b%.txt  pending', 'ga')
    wait_text(': completed**', 'the run completed')
    H.eq('bee\n', H.read(root .. '/b.txt'), 'accepted: written')
    wait_text('- b.txt  accepted')
    press_on('^%*%*Run run%-', 'u')
    wait_text('This turn was undone', 'the turn marked undone')
    H.eq(nil, H.read(root .. '/b.txt'), 'undo this turn took b.txt back')
    local said = false
    for _, n in ipairs(got) do
      said = said or n.msg:find('undid run-', 1, true) ~= nil
    end
    H.truthy(said, ':Agent undo\'s message: ' .. vim.inspect(got))
  end

  -- A chat survives a restart of the daemon: :Agent chat list offers it
  -- and resumes it with its turns.
  function C.chat_resume_after_restart()
    H.workspace({ ['a.txt'] = 'a\n' })
    model({ plan_reply('Read a', read_a) })
    H.open('a.txt')
    vim.cmd('Agent chat')
    send('read the file a.txt')
    wait_text('### Plan: Read a')
    local id = chat().chat_id()
    local pid = require('agentd.client').pids[H.root]
    H.stop()
    H.wait(function() return #vim.lsp.get_clients({ name = 'agentd' }) == 0 end, 'the daemon to stop')
    vim.cmd('only')
    vim.cmd('Agent chat new')
    H.wait(function() return chat().chat_id() ~= id and transcript():find('new chat', 1, true) end, 'a new empty chat')
    H.truthy(require('agentd.client').pids[H.root] ~= pid, 'a new daemon')
    local asked = H.answer_select(function(items)
      for _, it in ipairs(items) do
        if it.chatId == id then
          return it
        end
      end
    end)
    vim.cmd('Agent chat list')
    H.wait(function() return chat().chat_id() == id end, 'the chat resumed')
    H.truthy(#asked[1].items >= 2, 'both chats listed: ' .. vim.inspect(asked[1].items))
    wait_text('### Plan: Read a', 'the resumed turn')
    H.truthy(transcript():find('read the file a.txt', 1, true), 'its request')
  end

  -- The same chat across front ends, from Neovim's side: a chat started
  -- here is continued at the terminal (agentd chat --resume, another
  -- process on the same state dir, while this daemon runs), and :Agent
  -- chat list shows the terminal's turn after Neovim's, run and all; the
  -- terminal's planner was told Neovim's turn.
  function C.chat_continued_at_the_terminal()
    H.workspace({ ['a.txt'] = 'a\n' })
    local url = model({ plan_reply('Read a', read_a), plan_reply('Read a at the terminal', read_a) })
    H.open('a.txt')
    vim.cmd('Agent chat')
    send('read the file a.txt')
    wait_text('### Plan: Read a')
    local id = chat().chat_id()
    local out, code = {}, nil
    local job = vim.fn.jobstart({ H.bin, 'chat', '--resume', id, '--workspace', H.root, '--state-dir', H.tmp .. '/state', '--explore', '-1', '--yes' }, {
      env = { AGENTD_MODEL = 'openai:fake', OPENAI_BASE_URL = url, OPENAI_API_KEY = 'test-key', NO_COLOR = '1' },
      on_stdout = function(_, d) vim.list_extend(out, d) end,
      on_stderr = function(_, d) vim.list_extend(out, d) end,
      on_exit = function(_, c) code = c end,
    })
    H.truthy(job > 0, 'agentd chat started')
    vim.fn.chansend(job, 'read a.txt from the terminal\n')
    vim.fn.chanclose(job, 'stdin')
    H.wait(function() return code ~= nil end, function() return 'agentd chat --resume to end:\n' .. table.concat(out, '\n') end, 30000)
    H.eq(0, code, 'agentd chat --resume:\n' .. table.concat(out, '\n'))
    local asked = H.answer_select(function(items)
      for _, it in ipairs(items) do
        if it.chatId == id then
          return it
        end
      end
    end)
    vim.cmd('Agent chat list')
    H.wait(function() return #asked == 1 end, 'the chat list')
    H.truthy(asked[1].opts.format_item(asked[1].items[1]):find('(2 turns,', 1, true), 'listed with both turns: ' .. asked[1].opts.format_item(asked[1].items[1]))
    H.wait(function() return turn_with(2, 'You', 'read a.txt from the terminal') end, function() return "the terminal's turn:\n" .. transcript() end)
    wait_text('### Plan: Read a at the terminal', "the terminal's plan card")
    wait_text(': completed**', "the terminal's run")
    H.truthy(turn_with(1, 'You', 'read the file a.txt'), "Neovim's turn stays first:\n" .. transcript())
    local reqs = requests(url)
    H.eq(2, #reqs, 'one planner request each')
    H.truthy(vim.json.encode(reqs[2]):find('read the file a.txt', 1, true), "the terminal's planner was told Neovim's turn")
  end

  -- <C-c> in the chat stops a question being answered ($/cancelRequest):
  -- the turn is kept with what was said so far, marked stopped.
  function C.chat_cancel_question()
    H.workspace({ ['a.txt'] = 'a\n' })
    model({ { text = 'It starts here and goes on for a long while.', fault = 'stall' } })
    H.open('a.txt')
    vim.cmd('Agent chat')
    send('? tell me everything')
    wait_text('It starts', 'the first piece')
    H.truthy(chat().busy(), 'still answering')
    vim.api.nvim_feedkeys(vim.keycode('<C-c>'), 'mx', false)
    wait_text('### agentd (stopped)', 'the stopped turn')
    H.truthy(turn_with(1, 'You asked', 'tell me everything'), 'the turn is kept:\n' .. transcript())
    H.eq(nil, chat().busy(), 'nothing runs any more')
  end

  -- #buffer, #file:path and #diagnostics reach plan/create as
  -- context.items ({uri}, and the diagnostics as a {title, text} item, the
  -- user's words unchanged); # completes the items and workspace paths; an
  -- unknown #file refuses the message with the daemon's reason.
  function C.chat_context_items()
    H.workspace({ ['a.txt'] = 'a\n', ['sub/b.txt'] = 'b\n' })
    model({ plan_reply('Read a', read_a) })
    local ab = H.open('a.txt')
    local ns = vim.api.nvim_create_namespace('chat-test')
    vim.diagnostic.set(ns, ab, { { lnum = 0, col = 0, severity = vim.diagnostic.severity.ERROR, message = 'a is not b', source = 'lint' } })
    local sent = {}
    local c = vim.lsp.get_clients({ name = 'agentd' })[1]
    local orig = c.request
    c.request = function(method, params, ...)
      sent[#sent + 1] = { method = method, params = params }
      return orig(method, params, ...)
    end
    local got = H.capture_notify()
    vim.cmd('Agent chat')
    local ctx = require('agentd.chat.context')
    local _, ib = chat().bufs()
    vim.api.nvim_buf_set_lines(ib, 0, -1, false, { 'look at #fi' })
    vim.api.nvim_win_set_cursor(0, { 1, 11 })
    H.eq(8, ctx.omnifunc(1, ''), 'the item starts at #')
    H.eq({ '#file:' }, vim.tbl_map(function(i) return i.word end, ctx.omnifunc(0, '#fi')), '#fi completes to #file:')
    local words = vim.tbl_map(function(i) return i.word end, ctx.omnifunc(0, '#file:sub'))
    H.eq({ '#file:sub/b.txt' }, words, 'workspace paths complete')
    H.eq(5, #ctx.omnifunc(0, '#'), 'every item after #')
    send('read #file:nope.txt')
    H.wait(function()
      for _, n in ipairs(got) do
        if n.msg:find('#file nope.txt: nope.txt: no such file in the workspace', 1, true) then
          return true
        end
      end
    end, 'the refusal naming the file: ' .. vim.inspect(got))
    send('fix #buffer using #file:sub/b.txt and #diagnostics')
    wait_text('### Plan: Read a')
    local p
    for _, s in ipairs(sent) do
      if s.method == 'agentd/plan/create' then
        p = s.params
      end
    end
    H.eq({ { uri = vim.uri_from_fname(H.root .. '/a.txt') }, { uri = vim.uri_from_fname(H.root .. '/sub/b.txt') },
      { title = 'Problems of a.txt', text = 'a.txt:1:1: error: a is not b (lint)' } }, p.context.items, 'the items')
    H.eq('fix #buffer using #file:sub/b.txt and #diagnostics', p.request, 'the words as written')
    H.eq(p.chatId, chat().chat_id(), 'a turn of the chat')
  end

  -- R on a turn revises its plan in words (agentd/plan/regenerate), and e
  -- opens it in the plan buffer.
  function C.chat_revise_and_edit_turn()
    H.workspace({ ['a.txt'] = 'a\n' })
    model({ plan_reply('Read a', read_a), plan_reply('Read a twice', {
      read_a[1], { id = 'again', description = 'read a again', tool = 'read_file', args = { path = 'a.txt' }, dependsOn = { 'read' } },
    }) })
    H.open('a.txt')
    vim.cmd('Agent chat')
    send('read the file a.txt')
    wait_text('### Plan: Read a')
    local asked
    vim.ui.input = function(opts, cb)
      asked = opts.prompt
      cb('read it twice')
    end
    press_on('^### Plan: Read a', 'R')
    H.truthy(asked, 'R asks what should change')
    wait_text('### Plan: Read a twice', 'the revised card')
    press_on('^### Plan: Read a twice', 'e')
    H.truthy(vim.b.agentd_plan, 'the plan buffer is shown')
    H.truthy(H.lines(0)[3] and H.lines(0)[3]:match('^again%s+read_file'), 'its steps: ' .. vim.inspect(H.lines(0)))
  end

  --- vim.ui.select that holds its callback (a picker left open).
  local function hold_select()
    local held = {}
    vim.ui.select = function(items, opts, cb)
      held[#held + 1] = { items = items, opts = opts, cb = cb }
    end
    return held
  end

  local function option(items, kind)
    for _, it in ipairs(items) do
      if it.kind == kind then
        return it
      end
    end
  end

  local say_hi = { { id = 'hello', description = 'say hi', tool = 'run_command', args = { command = 'echo hi > out.txt && echo said hi && echo line two' } } }

  --- The transcript's window and the line numbers of its lines matching pat.
  local function lines_matching(pat)
    local out = {}
    for i, l in ipairs(H.lines((chat().bufs()))) do
      if l:find(pat) then
        out[#out + 1] = i
      end
    end
    return out
  end

  -- An approval of a run started from the chat is asked in the chat under
  -- its turn, not in a picker: the block names the step, its tool, the
  -- command and the options with their keys; nothing runs while it waits;
  -- a on the block allows once. :Agent approve's picker, opened meanwhile,
  -- is dropped: its later choice answers nothing. The command's output is
  -- then under its step, folded.
  function C.chat_approval_inline_allow()
    local root = H.workspace({ ['a.txt'] = 'a\n' })
    model({ plan_reply('Say hi', say_hi) })
    H.open('a.txt')
    local held = hold_select()
    vim.cmd('Agent chat')
    send('say hi')
    wait_text('### Plan: Say hi')
    press_on('^### Plan: Say hi', 'r')
    wait_text('#### Approval needed', 'the approval block')
    local t = transcript()
    H.truthy(t:find('step hello (run_command), high risk', 1, true), 'the step, tool and risk:\n' .. t)
    H.truthy(t:find('command: `echo hi > out.txt && echo said hi && echo line two` in .', 1, true), 'the command:\n' .. t)
    H.truthy(t:find('a Allow once · A Always allow · x Reject · X Always reject', 1, true), 'the options and keys:\n' .. t)
    H.truthy(turn_with(1, 'You', 'say hi', t) < t:find('#### Approval needed', 1, true), 'under its turn')
    H.eq(0, #held, 'no picker was opened')
    local run_id = require('agentd').status().run_id
    H.wait(function() return require('agentd.state').step_status(run_id, 'hello') == 'waiting' end, 'the step to wait')
    H.eq(nil, H.read(root .. '/out.txt'), 'nothing ran yet')
    H.eq(1, #require('agentd.handlers').pending_approvals, ':Agent approve knows it')
    -- a off the block answers nothing.
    press_on('^## 1%. You', 'a')
    H.eq(nil, H.read(root .. '/out.txt'), 'a off the block allowed nothing')
    H.eq(1, #require('agentd.handlers').pending_approvals, 'a off the block answered nothing')
    vim.cmd('Agent approve')
    H.eq(1, #held, ':Agent approve opened the picker')
    press_on('^#### Approval needed', 'a')
    wait_text(': completed**', 'the run completed')
    H.eq('hi\n', H.read(root .. '/out.txt'), 'allowed: the command ran')
    H.truthy(not transcript():find('Approval needed', 1, true), 'the block is gone:\n' .. transcript())
    H.eq(0, #require('agentd.handlers').pending_approvals, 'nothing waits any more')
    held[1].cb(option(held[1].items, 'reject_always'))
    H.eq(0, #require('agentd.handlers').pending_approvals, 'the late choice asked nothing again')
    -- The output, folded under its step.
    wait_text('  output of step hello: 2 lines (za)', 'the output header under the step')
    local head = lines_matching('^  output of step hello')[1]
    local step = lines_matching('^%- step hello: completed')[1]
    H.eq(step + 1, head, 'right under its step line:\n' .. transcript())
    local _, win = press_on('^  output of step hello', '')
    H.truthy(vim.api.nvim_win_call(win, function() return vim.fn.foldclosed(head + 1) end) ~= -1, 'folded by default')
    vim.api.nvim_feedkeys('za', 'mx', false)
    H.eq(-1, vim.api.nvim_win_call(win, function() return vim.fn.foldclosed(head + 1) end), 'za shows it')
    H.truthy(transcript():find('    said hi\n    line two\n', 1, true), 'the lines:\n' .. transcript())
  end

  -- The same approval answered in :Agent approve's picker: the block in
  -- the chat goes (the other prompt closes), and a rejection runs nothing.
  function C.chat_approval_picker_closes_block()
    local root = H.workspace({ ['a.txt'] = 'a\n' })
    model({ plan_reply('Say hi', say_hi) })
    H.open('a.txt')
    local held = hold_select()
    vim.cmd('Agent chat')
    send('say hi')
    wait_text('### Plan: Say hi')
    press_on('^### Plan: Say hi', 'r')
    wait_text('#### Approval needed', 'the approval block')
    vim.cmd('Agent approve')
    H.eq(1, #held, 'the picker')
    H.eq(false, held[1].items[1].optionId, "a high-risk approval's first item is not an allow")
    held[1].cb(option(held[1].items, 'reject_once'))
    H.wait(function() return not transcript():find('Approval needed', 1, true) end, function() return 'the block to go:\n' .. transcript() end)
    H.wait_run()
    wait_text(': partial**', 'the run ended without the step')
    H.eq(nil, H.read(root .. '/out.txt'), 'rejected: nothing ran')
  end

  -- m in the transcript is :Agent model; the header line names the model
  -- in force, and the one chosen once it is set.
  function C.chat_model_key_and_header()
    H.workspace({ ['a.txt'] = 'a\n' })
    model({})
    H.open('a.txt')
    vim.cmd('Agent chat')
    local tb = chat().bufs()
    H.wait(function() return H.lines(tb)[1]:find('· model ', 1, true) end, function() return 'the model in the header: ' .. H.lines(tb)[1] end)
    H.truthy(H.lines(tb)[1]:find('fake', 1, true), 'the model set up: ' .. H.lines(tb)[1])
    local asked = H.answer_select(function(items)
      for _, it in ipairs(items) do
        if it.name == 'openai:gpt-4o-mini' then
          return it
        end
      end
    end)
    press_on('^# ', 'm')
    H.wait(function() return #asked == 1 end, 'the model picker')
    H.wait(function() return H.lines(tb)[1]:find('gpt-4o-mini', 1, true) end, function() return 'the chosen model in the header: ' .. H.lines(tb)[1] end)
    H.truthy(H.lines(tb)[1]:find('(m changes it)', 1, true), 'the key is named')
  end

  -- A command's output streams in under its step while the step still
  -- runs (agentd/run/didChange stepOutput), folded.
  function C.chat_command_output_streams()
    local root = H.workspace({ ['a.txt'] = 'a\n' })
    model({ plan_reply('Wait', { { id = 'wait', description = 'wait for go', tool = 'run_command',
      args = { command = 'echo first; while [ ! -f go ]; do sleep 0.05; done; echo second' } } }) })
    H.open('a.txt')
    hold_select()
    vim.cmd('Agent chat')
    send('wait')
    wait_text('### Plan: Wait')
    press_on('^### Plan: Wait', 'r')
    wait_text('#### Approval needed', 'the approval block')
    press_on('^#### Approval needed', 'a')
    wait_text('  output of step wait: 1 line (za)\n    first\n', 'the first line while the step runs')
    H.truthy(transcript():find('- step wait: running', 1, true), 'the step still runs:\n' .. transcript())
    local head = lines_matching('^  output of step wait')[1]
    local _, win = press_on('^  output of step wait', '')
    H.truthy(vim.api.nvim_win_call(win, function() return vim.fn.foldclosed(head + 1) end) ~= -1, 'folded')
    H.write(root .. '/go', '')
    wait_text('    first\n    second\n', 'the rest once the command goes on')
    wait_text(': completed**', 'the run completed')
  end

  local wait_for_go = { { id = 'wait', description = 'wait for go', tool = 'run_command',
    args = { command = 'echo first; while [ ! -f go ]; do sleep 0.05; done; echo second' } } }

  --- Turn 1 of a chat: a run whose command waits until the file "go" is
  --- made (allowed in the chat); returns once it runs.
  local function running_turn()
    send('wait')
    wait_text('### Plan: Wait')
    press_on('^### Plan: Wait', 'r')
    wait_text('#### Approval needed', 'the approval block')
    press_on('^#### Approval needed', 'a')
    wait_text('    first\n', 'the command running')
  end

  -- The queue is the core's (agentd/chat/queue): messages sent while a
  -- turn runs are queued there and drawn from chat/load's queued under the
  -- turn; e edits one's words (agentd/chat/queue/edit), d takes one out
  -- (agentd/chat/unqueue), a question is not queued (said why, kept in
  -- the input); the queue is kept with the chat (a new load has it); when
  -- the run ends the session plans the queued message as turn 2, its
  -- request as edited.
  function C.chat_queue_in_the_core()
    local root = H.workspace({ ['a.txt'] = 'a\n' })
    local url = model({ plan_reply('Wait', wait_for_go), plan_reply('Read a again', read_a) })
    H.open('a.txt')
    hold_select()
    local got = H.capture_notify()
    vim.cmd('Agent chat')
    running_turn()
    send('list the files')
    send('read a.txt twice')
    local _, ib = chat().bufs()
    H.eq({ '' }, H.lines(ib), 'the queued message left the input')
    wait_text('- queued: list the files\n- queued: read a.txt twice\n', 'both queued, in order')
    send('? what is going on?')
    H.eq({ '? what is going on?' }, H.lines(ib), 'a question is not queued: kept in the input')
    local said = false
    for _, n in ipairs(got) do
      said = said or n.msg:find('a question cannot be queued', 1, true) ~= nil
    end
    H.truthy(said, 'said why: ' .. vim.inspect(got))
    vim.ui.input = function(opts, cb)
      H.eq('read a.txt twice', opts.default, 'e offers the words')
      cb('read a.txt once more')
    end
    press_on('^%- queued: read a%.txt twice', 'e')
    wait_text('- queued: read a.txt once more\n', 'the edited words')
    press_on('^%- queued: list the files', 'd')
    H.truthy(not transcript():find('queued: list the files', 1, true), 'd took it out:\n' .. transcript())
    -- The queue is the chat's: loaded again, it is still there.
    local c = vim.lsp.get_clients({ name = 'agentd' })[1]
    local view = c.request_sync('agentd/chat/load', { chatId = chat().chat_id() }, 10000, 0).result
    H.eq({ 'read a.txt once more' }, vim.tbl_map(function(q) return q.request end, view.queued or {}), "chat/load's queued")
    H.eq(1, #requests(url), 'nothing planned while the run goes')
    H.write(root .. '/go', '')
    H.wait(function() return turn_with(2, 'You', 'read a.txt once more') end, function() return 'the queued message planned by the core as turn 2:\n' .. transcript() end, 30000)
    wait_text('### Plan: Read a again', "turn 2's plan card")
    H.truthy(not transcript():find('- queued:', 1, true), 'the queue is empty:\n' .. transcript())
    H.eq(2, #requests(url), 'one planner request each')
    H.truthy(vim.json.encode(requests(url)[2]):find('read a.txt once more', 1, true), 'the edited words were planned')
  end

  -- gs on a queued message sends it now (agentd/chat/queue when "now"):
  -- the running turn's run is stopped and the message planned next.
  function C.chat_queue_send_now()
    H.workspace({ ['a.txt'] = 'a\n' })
    model({ plan_reply('Wait', wait_for_go), plan_reply('Read a now', read_a) })
    H.open('a.txt')
    hold_select()
    vim.cmd('Agent chat')
    running_turn()
    send('read a.txt instead')
    wait_text('- queued: read a.txt instead', 'queued')
    press_on('^%- queued: read a%.txt instead', 'gs')
    wait_text('### Plan: Read a now', 'the message planned at once')
    H.truthy(turn_with(2, 'You', 'read a.txt instead'), 'as turn 2:\n' .. transcript())
    wait_text(': cancelled**', "turn 1's run stopped")
    H.truthy(not transcript():find('- queued:', 1, true), 'out of the queue:\n' .. transcript())
  end

  -- <C-g> in the input sends the message to the going turn as guidance
  -- (agentd/chat/queue when "guidance"): here the running turn's run has
  -- no agent step, so the daemon says why it could not take it and queues
  -- it as after; the chat says the daemon's reason and shows it queued.
  -- <C-c> then stops the run through agentd/chat/stop (no request of ours
  -- owns it); the queued message is planned by the core, its planner hangs,
  -- and <C-c> stops that planning too (agentd/chat/stop again): the turn
  -- stays, drawn as stopped.
  function C.chat_guidance_and_stop()
    H.workspace({ ['a.txt'] = 'a\n' })
    model({ plan_reply('Wait', wait_for_go), { fault = 'hang' } })
    H.open('a.txt')
    hold_select()
    local got = H.capture_notify()
    vim.cmd('Agent chat')
    running_turn()
    local _, ib = chat().bufs()
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_buf(w) == ib then
        vim.api.nvim_set_current_win(w)
      end
    end
    vim.api.nvim_buf_set_lines(ib, 0, -1, false, { 'keep it short' })
    vim.api.nvim_feedkeys(vim.keycode('<C-g>'), 'mx', false)
    local said
    H.wait(function()
      for _, n in ipairs(got) do
        if n.msg:find('Not delivered as guidance: ', 1, true) and n.msg:find('Queued instead', 1, true) then
          said = n.msg
        end
      end
      return said
    end, function() return "the daemon's reason: " .. vim.inspect(got) end)
    H.eq({ '' }, H.lines(ib), 'the message left the input')
    wait_text('- queued: keep it short', 'queued instead')
    press_on('^## 1%. You', '<C-c>')
    H.wait(function()
      for _, n in ipairs(got) do
        if n.msg:find('agentd: Stopped: the run run-', 1, true) then
          return true
        end
      end
    end, function() return 'said what was stopped: ' .. vim.inspect(got) end)
    wait_text(': cancelled**', "turn 1's run stopped")
    H.wait(function() return turn_with(2, 'You', 'keep it short') end, function() return 'the queued message planned by the core as turn 2:\n' .. transcript() end, 30000)
    wait_text('_making a plan… (<C-c> stops)_', 'turn 2 being planned')
    press_on('^## 2%. You', '<C-c>')
    wait_text('_planning stopped: no plan was made', 'the planning the core started, stopped')
    H.truthy(turn_with(2, 'You', 'keep it short'), 'the turn is kept:\n' .. transcript())
    H.eq(nil, chat().busy(), 'nothing runs any more')
  end

  -- Guidance the going turn can take: the run's agent step is waiting on
  -- its model, <C-g> gives it the words (delivered, said with what took
  -- them), the turn lists them under its request; <C-c> stops the run.
  function C.chat_guidance_delivered()
    H.workspace({ ['a.txt'] = 'a\n' })
    model({ plan_reply('Think', { { id = 'ag', kind = 'agent', description = 'think about a', prompt = 'think about a.txt', tools = { 'read_file' } } }), { fault = 'hang' } })
    H.open('a.txt')
    hold_select()
    local got = H.capture_notify()
    vim.cmd('Agent chat')
    send('think')
    wait_text('### Plan: Think')
    press_on('^### Plan: Think', 'r')
    wait_text(': running**', 'the run going')
    local _, ib = chat().bufs()
    for _, w in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_buf(w) == ib then
        vim.api.nvim_set_current_win(w)
      end
    end
    vim.api.nvim_buf_set_lines(ib, 0, -1, false, { 'look at the first line only' })
    vim.api.nvim_feedkeys(vim.keycode('<C-g>'), 'mx', false)
    H.wait(function()
      for _, n in ipairs(got) do
        if n.msg:find('agentd: Guidance delivered to the run run-', 1, true) then
          return true
        end
      end
    end, function() return 'said delivered: ' .. vim.inspect(got) end)
    wait_text('think\nguidance: look at the first line only\n', "the turn's guidance under its request")
    H.truthy(not transcript():find('- queued:', 1, true), 'not queued:\n' .. transcript())
    press_on('^## 1%. You', '<C-c>')
    wait_text(': cancelled**', 'the run stopped')
  end

  -- A turn's cost is on its heading beside its tokens when the daemon knows
  -- it; the guidance the user gave a turn is listed under its request.
  function C.chat_cost_and_guidance_drawn()
    local R = require('agentd.chat.render')
    local b = R.build({
      title = 'greet',
      turns = {
        { request = 'say hi', planId = 'p1', planTitle = 'Hi', planSteps = { 'w: write' }, tokens = { input = 1200, output = 300, cost = 0.004 }, guidance = { 'keep it short', 'use tabs' } },
        { request = 'say hey', question = true, answer = 'hey', tokens = { input = 10, output = 2 } },
      },
    }, { chat_id = 'chat-b' })
    local text = table.concat(b.lines, '\n')
    H.truthy(text:find('## 1. You  · tokens 1200 in, 300 out · $0.004\nsay hi\nguidance: keep it short\nguidance: use tabs\n', 1, true), 'the cost and the guidance:\n' .. text)
    H.truthy(text:find('## 2. You asked  · tokens 10 in, 2 out\n', 1, true), 'no cost when the daemon does not know it:\n' .. text)
    H.eq({ '$1.50', '$0.12', '$0.0123', '<$0.0001', '$0' }, { R.cost_words(1.5), R.cost_words(0.12345), R.cost_words(0.01234), R.cost_words(0.00001), R.cost_words(0) })
    local chat_mod = chat()
    H.eq('Stopped: the planning.', chat_mod.stopped_words({ 'planning' }))
    H.eq('Guidance delivered to the run run-1: its agent reads it before its next model call.', (chat_mod.guided_words({ delivered = true, deliveredTo = { 'run run-1' } })))
  end

  -- A plan turn is in the chat from the start of its planning: the
  -- planner's work (agentd/chat/stream activity) is listed under it as it
  -- comes, before the plan is made (here the planner reads a.txt, then
  -- waits for its read of .env to be allowed); <C-c> stops the planning
  -- and the turn stays, drawn as stopped.
  function C.chat_planning_activity_and_cancel()
    H.workspace({ ['a.txt'] = 'a\n', ['.env'] = 'SECRET=1\n' })
    model({
      { text = '', toolCalls = { { id = 'r1', name = 'read_file', args = vim.json.encode({ path = 'a.txt' }) } } },
      { text = '', toolCalls = { { id = 'r2', name = 'read_file', args = vim.json.encode({ path = '.env' }) } } },
    })
    H.open('a.txt')
    vim.cmd('Agent chat')
    send('read the file a.txt')
    wait_text('#### Approval needed', "the planner's read of .env waits")
    local t = transcript()
    H.truthy(turn_with(1, 'You', 'read the file a.txt', t) and t:find('_making a plan… (<C-c> stops)_\n  · mapping the repository\n', 1, true) and t:find('\n  · exploring (round 1 of 6): Read a.txt\n', 1, true),
      'the turn being planned, its activity under it:\n' .. t)
    H.truthy(t:find('Read a.txt', 1, true) < t:find('#### Approval needed', 1, true), 'the approval under the turn:\n' .. t)
    H.truthy(chat().busy(), 'still planning')
    press_on('^## 1%. You', '<C-c>')
    wait_text('_planning stopped: no plan was made', 'the stopped turn')
    H.truthy(turn_with(1, 'You', 'read the file a.txt'), 'the turn is kept:\n' .. transcript())
    H.wait(function() return not transcript():find('Approval needed', 1, true) end, function() return 'its approval block to go:\n' .. transcript() end)
    H.eq(nil, chat().busy(), 'nothing runs any more')
  end

  -- A plan that cannot be made (here the model has no reply) keeps the
  -- turn, drawn as failed with the daemon's why and what to do.
  function C.chat_planning_failed_kept()
    H.workspace({ ['a.txt'] = 'a\n' })
    model({})
    H.open('a.txt')
    vim.cmd('Agent chat')
    send('read the file a.txt')
    wait_text('_planning failed: no plan was made_', 'the failed turn')
    H.truthy(turn_with(1, 'You', 'read the file a.txt'), 'the turn is kept:\n' .. transcript())
    H.truthy(transcript():find('    the plan could not be made', 1, true), 'why:\n' .. transcript())
  end

  -- The planner's read of a sensitive file while it makes the chat's plan
  -- is asked in the chat too (runId "plan"), below the turn being made; x
  -- rejects it: the model is told it was not read and never gets the text.
  function C.chat_planner_approval_inline()
    H.workspace({ ['a.txt'] = 'a\n', ['.env'] = 'SECRET=hunter2\n' })
    local url = model({
      { text = '', toolCalls = { { id = 'r1', name = 'read_file', args = vim.json.encode({ path = '.env' }) } } },
      plan_reply('Read a', read_a),
    })
    H.open('a.txt')
    local held = hold_select()
    vim.cmd('Agent chat')
    send('read the settings')
    wait_text('#### Approval needed', 'the planner\'s approval block')
    H.truthy(transcript():find('step explore (read_file), medium risk, a sensitive file', 1, true), 'the read named:\n' .. transcript())
    H.truthy(transcript():find('making a plan', 1, true) < transcript():find('#### Approval needed', 1, true), 'under the turn being made')
    H.eq(0, #held, 'no picker')
    press_on('^#### Approval needed', 'x')
    wait_text('### Plan: Read a', 'the plan made without it')
    H.truthy(not transcript():find('Approval needed', 1, true), 'the block is gone')
    local body = vim.json.encode(requests(url))
    H.truthy(not body:find('hunter2', 1, true), 'the model never got the secret')
    H.truthy(body:find('not read', 1, true), 'the model was told: ' .. body:sub(1, 3000))
  end

  --- r on the plan card, then a on each approval block until the run
  --- completed.
  local function run_allowing(card)
    press_on(card, 'r')
    while true do
      H.wait(function()
        local t = transcript()
        return t:find(': completed**', 1, true) or t:find('#### Approval needed', 1, true)
      end, function() return 'the run to complete or ask:\n' .. transcript() end, 30000)
      if not transcript():find('#### Approval needed', 1, true) then
        return
      end
      press_on('^#### Approval needed', 'a')
      H.wait(function() return not transcript():find('#### Approval needed', 1, true) or transcript():find(': completed**', 1, true) end, 'the block to go')
    end
  end

  --- The buffer of the restore's dry run (filetype diff), once shown.
  local function preview_buf()
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_valid(b) and vim.api.nvim_buf_get_name(b):find('agentd://chat/.*/restore%-') then
        return b
      end
    end
  end

  local function item(items, pred)
    for _, it in ipairs(items) do
      if pred(it) then
        return it
      end
    end
    error('no such item in ' .. vim.inspect(items), 2)
  end

  --- Types a line at the end of the file's buffer and writes it, as the
  --- user does.
  local function type_line(root, rel, line)
    local b = vim.fn.bufnr(root .. '/' .. rel)
    H.truthy(b > 0, rel .. ' is open')
    vim.api.nvim_buf_call(b, function()
      vim.cmd('silent edit!')
      vim.api.nvim_buf_set_lines(b, -1, -1, false, { line })
      vim.cmd('silent write')
    end)
  end

  -- U on a turn restores to before it: it asks what (here both), shows the
  -- dry run's diff (nothing changed yet), then restores: the agent's line
  -- goes, the line the user typed after the run stays, and the turn is
  -- drawn rewound (dimmed, folded, naming gu). gU takes the restore back:
  -- the agent's line is back, the user's stays, the turn is told again.
  function C.chat_restore_keeps_user_lines()
    local root = H.workspace({ ['a.txt'] = 'one\ntwo\nthree\n' })
    model({ plan_reply('Loud two', { { id = 'w', description = 'make two loud', tool = 'write_file', args = { path = 'a.txt', content = 'one\nTWO\nthree\n' } } }) }, { review = 'after' })
    H.open('a.txt')
    local got = H.capture_notify()
    local held = hold_select()
    vim.cmd('Agent chat')
    send('make two loud')
    wait_text('### Plan: Loud two')
    -- The turn's tokens (the fake model reports 10 in, 5 out a request).
    H.wait(function() return transcript():find('## 1%. You  · tokens %d+ in, %d+ out') end, function() return 'the tokens on the heading:\n' .. transcript() end)
    run_allowing('^### Plan: Loud two')
    H.eq('one\nTWO\nthree\n', H.read(root .. '/a.txt'), 'the agent wrote its line')
    type_line(root, 'a.txt', 'mine')
    H.eq('one\nTWO\nthree\nmine\n', H.read(root .. '/a.txt'), 'the user typed a line')
    press_on('^## 1%. You', 'U')
    H.eq(1, #held, 'U asks what to restore')
    H.eq({ 'both', 'files', 'conversation' }, vim.tbl_map(function(it) return it.what end, held[1].items), 'files, conversation or both')
    held[1].cb(item(held[1].items, function(it) return it.what == 'both' end))
    H.wait(function() return #held == 2 end, 'the confirmation after the dry run')
    local pb = H.truthy(preview_buf(), 'the dry run is shown')
    H.eq('diff', vim.bo[pb].filetype, 'as a diff')
    local pv = H.text(pb)
    H.truthy(pv:find('\n%-TWO\n%+two\n') and pv:find('nothing has changed yet', 1, true), 'the diff of a.txt:\n' .. pv)
    H.truthy(pv:find('conversation: turn 1 rewound', 1, true), 'the turns rewound:\n' .. pv)
    H.eq('one\nTWO\nthree\nmine\n', H.read(root .. '/a.txt'), 'the dry run changed nothing')
    H.truthy(held[2].items[1].choice == 'go', 'no conflict: restore or cancel: ' .. vim.inspect(held[2].items))
    held[2].cb(held[2].items[1])
    H.eq('one\ntwo\nthree\nmine\n', H.read(root .. '/a.txt'), "the agent's line went, the user's stayed")
    H.eq(nil, preview_buf(), 'the preview is closed')
    wait_text('(rewound: not told to the model; gu brings it back)', 'the turn drawn rewound')
    local head = lines_matching('^## 1%. You')[1]
    local marks = vim.api.nvim_buf_get_extmarks((chat().bufs()), chat().ns, { head - 1, 0 }, { head - 1, -1 }, { details = true })
    H.truthy(#marks > 0 and marks[1][4].hl_group == 'AgentdChatRewound', 'its heading is dimmed: ' .. vim.inspect(marks))
    local card = lines_matching('^### Plan: Loud two')[1]
    local _, win = press_on('^## 1%. You', '')
    H.truthy(vim.api.nvim_win_call(win, function() return vim.fn.foldclosed(card) end) ~= -1, 'its body is folded')
    local said = false
    for _, n in ipairs(got) do
      said = said or (n.msg:find('restored to before turn 1', 1, true) and n.msg:find('gU', 1, true)) ~= nil
    end
    H.truthy(said, 'the restore said so and named its way back: ' .. vim.inspect(got))
    press_on('^# ', 'gU')
    H.eq('one\nTWO\nthree\nmine\n', H.read(root .. '/a.txt'), "undoing the restore brought the agent's line back, the user's stayed")
    H.wait(function() return not transcript():find('(rewound:', 1, true) end, function() return 'the turn told again:\n' .. transcript() end)
  end

  -- The restore's dry run shows a conflict (the user changed the agent's
  -- own line): the choices are keep my lines / overwrite / cancel; keep
  -- restores the rest and leaves that file as the user has it.
  function C.chat_restore_conflict_keep()
    local root = H.workspace({ ['a.txt'] = 'one\ntwo\n', ['b.txt'] = 'bee\n' })
    model({ plan_reply('Two files', {
      { id = 'a', description = 'loud a', tool = 'write_file', args = { path = 'a.txt', content = 'one\nTWO\n' } },
      { id = 'b', description = 'loud b', tool = 'write_file', args = { path = 'b.txt', content = 'BEE\n' }, dependsOn = { 'a' } },
    }) }, { review = 'after' })
    H.open('a.txt')
    local held = hold_select()
    vim.cmd('Agent chat')
    send('make them loud')
    wait_text('### Plan: Two files')
    run_allowing('^### Plan: Two files')
    H.write(root .. '/a.txt', 'one\nTWO, mine\n')
    press_on('^## 1%. You', 'U')
    held[1].cb(item(held[1].items, function(it) return it.what == 'files' end))
    H.wait(function() return #held == 2 end, 'the choices after the dry run')
    H.eq({ 'keep', 'overwrite', 'cancel' }, vim.tbl_map(function(it) return it.choice end, held[2].items), 'keep my lines / overwrite / cancel')
    local pv = H.text(H.truthy(preview_buf(), 'the dry run is shown'))
    H.truthy(pv:find('# conflict: a.txt', 1, true), 'the conflict named:\n' .. pv)
    held[2].cb(held[2].items[1])
    H.eq('one\nTWO, mine\n', H.read(root .. '/a.txt'), 'keep: a.txt as the user has it')
    H.eq('bee\n', H.read(root .. '/b.txt'), 'the rest restored')
  end

  -- E on a turn's message opens it in the input; sent edited, it branches
  -- the chat there (agentd/chat/fork): the buffer shows the branch (its
  -- header names the original and the turn), the files are offered back
  -- to before the turn (a dry run first), and the edited message is
  -- planned in the branch. gb on the header goes back to the original,
  -- which lists the branch (gb opens it); :Agent chat list marks it.
  function C.chat_branch_from_edited_message()
    local root = H.workspace({ ['a.txt'] = 'a\n' })
    model({
      plan_reply('Write b', { { id = 'w', description = 'write b', tool = 'write_file', args = { path = 'b.txt', content = 'bee\n' } } }),
      plan_reply('Write c', { { id = 'w', description = 'write c', tool = 'write_file', args = { path = 'c.txt', content = 'sea\n' } } }),
    }, { review = 'after' })
    H.open('a.txt')
    local held = hold_select()
    vim.cmd('Agent chat')
    send('write b.txt')
    wait_text('### Plan: Write b')
    run_allowing('^### Plan: Write b')
    H.eq('bee\n', H.read(root .. '/b.txt'), 'turn 1 wrote b.txt')
    local orig = chat().chat_id()
    press_on('^write b%.txt$', 'E')
    local _, ib = chat().bufs()
    H.eq(ib, vim.api.nvim_get_current_buf(), 'the input is focused')
    H.eq({ 'write b.txt' }, H.lines(ib), 'the message to edit')
    wait_text("Editing turn 1's message", 'the editing line')
    send('write c.txt instead')
    H.wait(function() return #held == 1 end, 'the offer to restore the files')
    H.truthy(chat().chat_id() ~= orig, 'the buffer shows the branch')
    held[1].cb(item(held[1].items, function(it) return it.files end))
    H.wait(function() return #held == 2 end, "the restore's confirmation")
    local pv = H.text(H.truthy(preview_buf(), 'the dry run is shown'))
    H.truthy(pv:find('+++ /dev/null', 1, true) or pv:find('deletes what they created: b.txt', 1, true), 'b.txt goes:\n' .. pv)
    held[2].cb(held[2].items[1])
    H.eq(nil, H.read(root .. '/b.txt'), 'the files are as before turn 1')
    wait_text('### Plan: Write c', 'the edited message planned in the branch')
    H.truthy(turn_with(1, 'You', 'write c.txt instead'), 'the branch has the edited message as its turn 1:\n' .. transcript())
    H.truthy(H.lines((chat().bufs()))[1]:find('branch of "write b.txt" at turn 1 (gb goes there)', 1, true), 'the header: ' .. H.lines((chat().bufs()))[1])
    local branch = chat().chat_id()
    press_on('^# ', 'gb')
    H.eq(orig, chat().chat_id(), 'gb went to the original')
    wait_text('### Plan: Write b', 'the original is unchanged')
    wait_text('↳ branch', 'the original lists its branch')
    press_on('↳ branch', 'gb')
    H.eq(branch, chat().chat_id(), 'gb on the branch line opens it')
    local asked = H.answer_select(function() return nil end)
    vim.cmd('Agent chat list')
    H.wait(function() return #asked == 1 end, 'the chat list')
    local shown = vim.tbl_map(asked[1].opts.format_item, asked[1].items)
    local marked = false
    for _, l in ipairs(shown) do
      marked = marked or l:find('branch of "write b.txt" at turn 1', 1, true) ~= nil
    end
    H.truthy(marked, 'the list marks the branch: ' .. vim.inspect(shown))
  end

  -- The turns the next request will condense are said before sending,
  -- under the last turn (agentd/chat/load's condensed).
  function C.chat_condensed_said_before_send()
    H.workspace({ ['a.txt'] = 'a\n' })
    model({ { text = string.rep(string.rep('long ', 260) .. '\n', 60) }, { text = 'short' }, { text = 'short again' } })
    H.open('a.txt')
    vim.cmd('Agent chat')
    send('? tell me all')
    wait_text('## 1. You asked')
    send('? and now')
    wait_text('## 2. You asked')
    send('? once more')
    wait_text('short again')
    wait_text('_turn 1 will be condensed for the model in your next message (kept whole here)_', 'the condensing said')
    H.truthy(transcript():find('## 1%. You asked[^\n]*  _%(condensed in the next request'), 'on its heading too:\n' .. transcript():sub(1, 400))
  end

  -- :help agentd-chat lists every key the chat maps (the transcript's and
  -- the input's, read from the buffers' own mappings) and every :Agent
  -- chat subcommand (read from the command's completion).
  function C.chat_help_lists_every_key_and_command()
    H.workspace({ ['a.txt'] = 'a\n' })
    H.setup()
    H.open('a.txt')
    vim.cmd('Agent chat')
    local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
    local doc = H.read(vim.fs.dirname(here) .. '/doc/agentd.txt')
    local section = H.truthy(doc:match('%*agentd%-chat%*\n(.*)$'), 'the agentd-chat section')
    -- The keys the help's tables name: the first columns of their lines.
    local named = {}
    for line in section:gmatch('[^\n]+') do
      local keys = line:match('^    (%S.-)%s%s%s+%S') or line:match('^    (%S+)$')
      if keys and #keys <= 12 then
        for k in keys:gmatch('%S+') do
          named[k:lower()] = true
        end
      end
    end
    local tb, ib = chat().bufs()
    local missing = {}
    for _, b in ipairs({ tb, ib }) do
      for _, mode in ipairs({ 'n', 'i' }) do
        for _, m in ipairs(vim.api.nvim_buf_get_keymap(b, mode)) do
          if (m.desc or ''):find('^agentd chat:') and not named[m.lhs:lower()] then
            missing[#missing + 1] = ('%s (%s mode): %s'):format(m.lhs, mode, m.desc)
          end
        end
      end
    end
    H.eq({}, missing, 'chat keys missing from :help agentd-chat')
    local subs = vim.fn.getcompletion('Agent chat ', 'cmdline')
    H.truthy(#subs >= 4, 'the subcommands: ' .. vim.inspect(subs))
    for _, sub in ipairs(subs) do
      H.truthy(section:find(':Agent chat ' .. sub, 1, true), ':Agent chat ' .. sub .. ' is not in :help agentd-chat')
    end
  end

  -- What a turn's model requests took (turn.tokens) is on its heading; a
  -- rewound turn is dimmed and its body folds under its heading; a branch
  -- is listed under the turn it starts from (drawn from chat/load alone).
  function C.chat_tokens_rewound_branches_drawn()
    local R = require('agentd.chat.render')
    local b = R.build({
      title = 'greet',
      forkedFrom = { chatId = 'chat-a', turn = 1 },
      branches = { { chatId = 'chat-c', turn = 0 } },
      turns = {
        { request = 'say hi', planId = 'p1', planTitle = 'Hi', planSteps = { 'w: write' }, tokens = { input = 120, output = 30 } },
        { request = 'say hey', question = true, answer = 'hey', rewound = true, rewindId = 'rw-1' },
      },
    }, { chat_id = 'chat-b', titles = { ['chat-a'] = 'greet', ['chat-c'] = 'greet' } })
    local text = table.concat(b.lines, '\n')
    H.truthy(b.lines[1]:find('branch of "greet" at turn 2 (gb goes there)', 1, true), 'the header: ' .. b.lines[1])
    H.truthy(text:find('## 1. You  · tokens 120 in, 30 out', 1, true), 'the tokens:\n' .. text)
    H.truthy(text:find('## 2. You asked  _(rewound: not told to the model; gu brings it back)_\nsay hey', 1, true), 'the rewound turn:\n' .. text)
    local head, ans
    for i, l in ipairs(b.lines) do
      if l:find('^## 2%.') then head = i end
      if l == 'hey' then ans = i end
    end
    H.truthy(b.dim[head] and b.dim[head + 1] and b.dim[ans], 'heading, request and answer dimmed')
    H.eq('0', b.folds[head + 1], 'the request stays in sight')
    H.eq('>1', b.folds[head + 2], 'the body folds')
    H.eq('1', b.folds[ans], 'the answer in the fold')
    local br
    for i, l in ipairs(b.lines) do
      if l:find('↳ branch', 1, true) then br = i end
    end
    H.truthy(br and b.meta[br].kind == 'branch' and b.meta[br].chatId == 'chat-c' and b.meta[br].turn == 1, 'the branch under turn 1: ' .. text)
    H.eq(nil, b.dim[1], 'the rest is not dimmed')
  end

  -- nvctx: the context a message names, as VS Code's chips send it
  -- (issue 37). As the user types, the sizes the daemon counts
  -- (agentd/context/size) are drawn above the input; an item that cannot
  -- be sent is drawn with the daemon's reason and blocks sending. #diff
  -- sends the workspace's git diff; the planner is told the items under
  -- "Context the user attached" and the chat records the words only.
  -- The # key of the input opens the completion with nothing inserted
  -- until the user picks: with Neovim's default completeopt the first
  -- item was inserted at once, and "#diff" typed on became "#bufferdiff"
  -- (walked in tmux). <C-p> goes back to the typed text; with a
  -- completeopt that inserts nothing by itself (noselect, noinsert) it is
  -- not added, since there it would pick the last item.
  function C.chat_context_hash_key()
    H.workspace({ ['a.txt'] = 'alpha\n' })
    model({})
    H.open('a.txt')
    vim.cmd('Agent chat')
    local _, ib = chat().bufs()
    local saved = vim.o.completeopt
    local function rhs()
      for _, m in ipairs(vim.api.nvim_buf_get_keymap(ib, 'i')) do
        if m.lhs == '#' then
          H.truthy(m.expr == 1 and m.callback, 'the # key is an expression mapping')
          return m.callback()
        end
      end
      error('no # mapping in the input')
    end
    for co, want in pairs({ ['menu,preview'] = '#<C-x><C-o><C-p>', ['menu,menuone,noselect'] = '#<C-x><C-o>', ['menuone,noinsert'] = '#<C-x><C-o>' }) do
      vim.o.completeopt = co
      H.eq(want, rhs(), 'the keys of # with completeopt=' .. co)
    end
    vim.o.completeopt = saved
  end

  function C.chat_context_sizes_and_diff()
    local root = H.workspace({ ['a.txt'] = 'alpha\n' })
    H.write(root .. '/a.txt', 'alpha changed by the user\n')
    local url = model({ plan_reply('Read a', read_a) })
    H.open('a.txt')
    vim.cmd('Agent chat')
    local ctx = require('agentd.chat.context')
    local _, ib = chat().bufs()
    local function typed(text)
      vim.api.nvim_buf_set_lines(ib, 0, -1, false, { text })
      vim.api.nvim_exec_autocmds('TextChanged', { buffer = ib })
    end
    local function sizes(pat, what)
      H.wait(function()
        return (vim.b[ib].agentd_context_sizes or ''):find(pat) ~= nil
      end, function()
        return what .. '; drawn: ' .. tostring(vim.b[ib].agentd_context_sizes)
      end, 30000)
    end
    H.truthy(vim.tbl_contains(vim.tbl_map(function(i) return i.word end, ctx.omnifunc(0, '#d')), '#diff'), '#d completes #diff')
    typed('fix #file:a.txt and #diff')
    sizes('^#file a%.txt %d+ tokens · #diff %d+ tokens$', 'the sizes of both items')
    local marks = vim.api.nvim_buf_get_extmarks(ib, ctx.ns, 0, -1, { details = true })
    H.eq(1, #marks, 'one sizes line')
    H.truthy(marks[1][4].virt_lines[1][1][1]:find('#diff', 1, true), 'drawn as virtual text: ' .. vim.inspect(marks[1][4]))
    typed('read #file:nope.txt')
    sizes('^#file nope%.txt: .*no such file in the workspace', "the daemon's reason for a missing file")
    local got = H.capture_notify()
    send('read #file:nope.txt')
    H.wait(function()
      for _, n in ipairs(got) do
        if n.msg:find('not sent: #file nope.txt:', 1, true) then
          return true
        end
      end
    end, function() return 'the refusal: ' .. vim.inspect(got) end)
    local none = requests(url)
    H.truthy(none == vim.NIL or #none == 0, 'nothing planned')
    send('fix #file:a.txt and #diff')
    wait_text('### Plan: Read a')
    sizes('^$', 'the sizes cleared with the input')
    H.eq({}, vim.api.nvim_buf_get_extmarks(ib, ctx.ns, 0, -1, {}), 'no sizes line once sent')
    local body = vim.json.encode(requests(url)[1])
    H.truthy(body:find('Context the user attached', 1, true), 'the items told the planner: ' .. body)
    H.truthy(body:find('+alpha changed by the user', 1, true), 'the git diff told the planner: ' .. body)
    local c = vim.lsp.get_clients({ name = 'agentd' })[1]
    local view = c.request_sync('agentd/chat/load', { chatId = chat().chat_id() }, 10000, 0).result
    H.eq('fix #file:a.txt and #diff', view.turns[1].request, 'the chat records the words only')
  end
end
