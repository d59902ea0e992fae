-- CodeCompanion.nvim as a test client of `agentd acp` (issue 37): headless
-- Neovim >= 0.11 loads the pinned CodeCompanion (scripts/codecompanion.sh)
-- with an ACP adapter whose command is the built agentd, set up as the
-- project README tells users to, on a fresh git workspace, against the
-- project's fake model (tests/fakemodel). Everything goes through
-- CodeCompanion's chat: the message is typed into its buffer and sent with
-- its send key, approvals are answered with the keys its chat shows, a turn
-- is stopped with its stop key, and /undo is typed as CodeCompanion's ACP
-- command (\undo). Four turns:
--   1. a plan writes notes.txt; the change set's approval is shown in the
--      chat with its diff and answered Accept: the file is written;
--   2. a plan writes rejected.txt; answered Reject: nothing is written;
--   3. a plan whose llm step streams, then stalls; stopped with CodeCompanion's
--      stop key: agentd cancels the run (its journal says so);
--   4. the user adds a line to notes.txt, then `\undo RUN1` (turn 1's run id,
--      read from the chat) takes turn 1's line back and keeps the user's.
-- Each wait is for a state (the chat's text, the file, the journal), never
-- for time. Run by tests/codecompanion.sh; env: CC_DIR, AGENTD_BIN,
-- FAKEMODEL_BIN, TEST_TMP, PLENARY_DIR.
local tmp = assert(os.getenv('TEST_TMP'), 'TEST_TMP: a scratch folder')
local agentd = assert(os.getenv('AGENTD_BIN'), 'AGENTD_BIN: the built agentd')
local fakemodel = assert(os.getenv('FAKEMODEL_BIN'), 'FAKEMODEL_BIN: the built tests/fakemodel')
local cc_dir = assert(os.getenv('CC_DIR'), 'CC_DIR: the unpacked CodeCompanion.nvim')
local plenary_dir = assert(os.getenv('PLENARY_DIR'), 'PLENARY_DIR: plenary.nvim, which CodeCompanion needs')

-- CodeCompanion asks `if coroutine.running()` to know whether it runs in a
-- coroutine of its own (acp/init.lua send_rpc_request): Lua 5.1's answer
-- in the main thread is nil, as upstream Neovim's LuaJIT gives it. Debian
-- testing's LuaJIT (openresty 2.1, built with Lua 5.2 compatibility)
-- answers the main thread and true, and CodeCompanion then yields across a
-- C call on every message a user sends. Lua 5.1's answer is restored here;
-- callers that ask for the second value (Neovim's own) get nil for main.
do
  local running = coroutine.running
  coroutine.running = function()
    local co, main = running()
    if main then
      return nil
    end
    return co
  end
end

local step = 'start'
local chat -- CodeCompanion's chat object
local log_file = tmp .. '/agentd.log'

local function fail(msg)
  error(msg, 0)
end

local function eq(want, got, what)
  if not vim.deep_equal(want, got) then
    fail(('%s:\n  want %s\n  got  %s'):format(what, vim.inspect(want), vim.inspect(got)))
  end
end

local function truthy(v, what)
  if not v then
    fail(what)
  end
  return v
end

local function read(path)
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

local function write(path, text)
  vim.fn.mkdir(vim.fs.dirname(path), 'p')
  local f = assert(io.open(path, 'wb'))
  f:write(text)
  f:close()
end

local function sh(cmd, cwd)
  local r = vim.system(cmd, { cwd = cwd, text = true }):wait()
  if r.code ~= 0 then
    fail(table.concat(cmd, ' ') .. ' failed: ' .. (r.stderr or ''))
  end
  return r.stdout
end

-- The chat buffer's text, as the user sees it.
local function transcript()
  return table.concat(vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), '\n')
end

-- Waits until cond() holds (a state, never a time: the bound only turns a
-- hang into a failure that names what was awaited and the chat so far).
local function wait(cond, what)
  if not vim.wait(60000, cond, 20) then
    fail('timed out waiting for ' .. (type(what) == 'function' and what() or what) .. '; the chat shows:\n' .. (chat and transcript() or '(no chat)'))
  end
end

-- Counts the plain occurrences of s in the chat.
local function count(s)
  local n, from = 0, 1
  local text = transcript()
  while true do
    local i = text:find(s, from, true)
    if not i then
      return n
    end
    n, from = n + 1, i + #s
  end
end

local function wait_count(s, n, what)
  wait(function() return count(s) >= n end, what .. ' (the chat showing "' .. s .. '" ' .. n .. ' times)')
end

-- Keys pressed in the chat's window, as the user presses them.
local function press(keys)
  local win = vim.fn.bufwinid(chat.bufnr)
  truthy(win ~= -1, 'the chat is shown in a window')
  -- From the event loop, as typed keys are: this script's own code may be
  -- a coroutine (-l), and CodeCompanion's keymaps yield when they find one.
  local done = false
  vim.schedule(function()
    vim.api.nvim_set_current_win(win)
    vim.api.nvim_feedkeys(vim.keycode(keys), 'mx', false)
    done = true
  end)
  wait(function() return done end, 'the keys ' .. keys .. ' to be handled')
end

-- Types a message under the chat's last "Me" header and sends it with
-- CodeCompanion's send key (<CR> in normal mode).
local function send(text)
  wait(function() return chat.current_request == nil end, 'the chat to be ready for input')
  local n = vim.api.nvim_buf_line_count(chat.bufnr)
  vim.api.nvim_buf_set_lines(chat.bufnr, n, n, false, vim.split(text, '\n'))
  press('<Esc>G')
  press('<CR>')
  wait(function() return chat.current_request ~= nil or count(text) > 0 end, 'the message to be sent')
end

-- The workspace's runs, as agentd's journal lists them.
local function runs(ws)
  local out = sh({ agentd, 'runs', '--json', '--workspace', ws, '--state-dir', tmp .. '/state' })
  return vim.json.decode(out)
end

local function main()
  -- A git workspace with a committed file.
  local ws = tmp .. '/ws'
  vim.fn.mkdir(ws, 'p')
  ws = vim.uv.fs_realpath(ws)
  local notes = ws .. '/notes.txt'
  local before = 'alpha\nbeta\ngamma\ndelta\nepsilon\n'
  write(notes, before)
  sh({ 'git', 'init', '-q' }, ws)
  sh({ 'git', '-c', 'user.email=t@example.com', '-c', 'user.name=test', 'add', '-A' }, ws)
  sh({ 'git', '-c', 'user.email=t@example.com', '-c', 'user.name=test', 'commit', '-qm', 'init' }, ws)
  vim.cmd.cd(ws)

  -- The fake model: the three turns' plans, then the llm step's reply,
  -- which streams its first piece and stalls until cancelled.
  step = 'the fake model'
  local function plan(title, steps)
    return { text = vim.json.encode({ title = title, steps = steps }) }
  end
  local after1 = 'alpha\nbeta changed by the agent\ngamma\ndelta\nepsilon\n'
  write(tmp .. '/replies.json', vim.json.encode({
    plan('Change beta', { { id = 'edit', description = 'Change beta', tool = 'write_file', args = { path = 'notes.txt', content = after1 } } }),
    plan('Write a file', { { id = 'new', description = 'Write rejected.txt', tool = 'write_file', args = { path = 'rejected.txt', content = 'no\n' } } }),
    plan('Think long', { { id = 'think', description = 'Think about the notes', kind = 'llm', prompt = 'Think about notes.txt' } }),
    { text = 'It starts here and goes on for a long while.', fault = 'stall' },
  }))
  local url
  local fake = vim.system({ fakemodel, tmp .. '/replies.json' }, {
    stdin = true,
    stdout = function(_, data)
      local u = data and data:match('(http%S+)')
      if u then
        url = u
      end
    end,
  })
  wait(function() return url ~= nil end, 'the fake model to listen')

  -- agentd acp's environment: the fake model, a private state and config.
  vim.env.AGENTD_MODEL = 'openai:fake-model'
  vim.env.OPENAI_BASE_URL = url
  vim.env.OPENAI_API_KEY = 'test-key'
  vim.env.AGENTD_STATE_DIR = tmp .. '/state'
  vim.env.XDG_CONFIG_HOME = tmp .. '/config'

  -- CodeCompanion, set up as the README shows (an ACP adapter extending
  -- "opencode"), with the built agentd as its command.
  step = 'CodeCompanion setup'
  vim.opt.rtp:prepend(plenary_dir)
  vim.opt.rtp:prepend(cc_dir)
  require('codecompanion').setup({
    adapters = {
      acp = {
        agentd = function()
          return require('codecompanion.adapters').extend('opencode', {
            name = 'agentd',
            formatted_name = 'agentd',
            commands = { default = { agentd, 'acp', '--log-file', log_file, '--log-level', 'debug' } },
          })
        end,
      },
    },
    interactions = { chat = { adapter = 'agentd' } },
    opts = { log_level = 'DEBUG' },
  })
  chat = truthy(require('codecompanion').chat(), 'CodeCompanion opened a chat')
  wait(function() return chat.acp_connection ~= nil and chat.acp_connection:is_ready() end, 'CodeCompanion to connect to agentd acp')

  -- Turn 1: a write, approved in the chat (g2, Accept).
  step = 'turn 1 (approve)'
  send('Change beta in notes.txt')
  wait_count('Please select an option:', 1, 'the approval of turn 1')
  local text = transcript()
  truthy(text:find('Proposed edits for `notes.txt`', 1, true), 'the approval names notes.txt:\n' .. text)
  truthy(text:find('+beta changed by the agent', 1, true), 'the approval shows the diff:\n' .. text)
  truthy(text:find('`g2` - Accept', 1, true) and text:find('`g3` - Reject', 1, true), 'the approval offers Accept and Reject:\n' .. text)
  eq(before, read(notes), 'notes.txt before the approval')
  press('g2')
  wait(function() return read(notes) == after1 end, 'notes.txt to be written')
  wait_count('**completed** — 1 of 1 steps completed', 1, 'turn 1 to end')
  local run1 = truthy(transcript():match('Run (%S+): %*%*completed%*%* — 1 of 1 steps completed'), 'turn 1 names its run:\n' .. transcript())
  truthy(transcript():find('You selected: Accept', 1, true), 'the chat shows the choice:\n' .. transcript())

  -- Turn 2: a write, rejected in the chat (g3, Reject).
  step = 'turn 2 (reject)'
  send('Write rejected.txt')
  wait_count('Please select an option:', 2, 'the approval of turn 2')
  truthy(transcript():find('Proposed edits for `rejected.txt`', 1, true), 'the approval names rejected.txt:\n' .. transcript())
  press('g3')
  wait_count('You selected: Reject', 1, 'the rejection to be shown')
  wait(function()
    local r = runs(ws)
    return #r >= 2 and r[1].status ~= 'running'
  end, 'turn 2\'s run to end')
  wait(function() return chat.current_request == nil end, 'turn 2 to end in the chat')
  eq(nil, read(ws .. '/rejected.txt'), 'rejected.txt after the rejection')
  eq(after1, read(notes), 'notes.txt after turn 2')
  truthy(transcript():find('**partial** — 0 of 1 steps completed, 1 skipped.', 1, true), 'the chat says the step was skipped:\n' .. transcript())

  -- Turn 3: stopped while its llm step streams (q, CodeCompanion's stop).
  step = 'turn 3 (cancel)'
  send('Think about the notes')
  wait_count('It starts here', 1, 'the llm step\'s first words')
  truthy(chat.current_request ~= nil, 'turn 3 still runs')
  local conn = chat.acp_connection
  local prompt_id = truthy(conn._active_prompt and conn._active_prompt._request_id, 'turn 3\'s session/prompt is in flight')
  press('q')
  wait(function() return chat.current_request == nil end, 'the chat to stop')
  eq(after1, read(notes), 'notes.txt after the cancel')
  -- CodeCompanion hands the chat back at once and sends session/cancel; the
  -- prompt's answer comes when agentd has ended the run. The user's next
  -- message goes at once, as a user's would: agentd holds it until the
  -- cancelled prompt has answered, then runs it (docs/acp.md); it was
  -- refused with -32010 before.

  -- Turn 4: the user's own line, then \undo of turn 1's run.
  step = 'turn 4 (undo)'
  local user = 'alpha\nbeta changed by the agent\ngamma\ndelta\nepsilon\nthe user\'s own line\n'
  write(notes, user)
  wait(function()
    return #require('codecompanion.interactions.chat.acp.commands').get_commands_for_buffer(chat.bufnr) > 0
  end, 'agentd\'s slash commands to reach CodeCompanion')
  send('\\undo ' .. run1)
  wait(function() return read(notes) == before .. 'the user\'s own line\n' end,
    function() return 'the undo to take back turn 1\'s line and keep the user\'s; notes.txt:\n' .. (read(notes) or '(missing)') end)
  wait_count('Undo this with `/undo-restore', 1, 'the undo\'s report')
  text = transcript()
  truthy(text:find('run ' .. run1, 1, true), 'the undo names turn 1\'s run ' .. run1 .. ':\n' .. text)
  -- CodeCompanion sends a stopped turn's words again with the next
  -- message; agentd runs the command and says the words went to no model.
  truthy(text:find('Not sent: /undo runs alone', 1, true) and text:find('> Think about the notes', 1, true),
    'the chat says the stopped turn\'s words went to no model:\n' .. text)
  local answer = truthy(conn.pending_responses[prompt_id], 'agentd answered the cancelled session/prompt before turn 4')
  eq({ stopReason = 'cancelled' }, { stopReason = answer[1] and answer[1].stopReason, error = answer[2] }, 'the answer to the cancelled prompt')
  local run3
  for _, r in ipairs(runs(ws)) do
    if r.status == 'cancelled' then
      run3 = r.runId
    end
  end
  truthy(run3, 'agentd\'s journal shows turn 3\'s run cancelled: ' .. vim.inspect(runs(ws)))
  local undone = {}
  for _, r in ipairs(runs(ws)) do
    undone[r.runId] = r.undone and r.undone.how or false
  end
  eq({ [run1] = 'undo', [run3] = false }, { [run1] = undone[run1], [run3] = undone[run3] }, 'the journal: turn 1\'s run undone, turn 3\'s not')
  wait(function() return chat.current_request == nil end, 'turn 4 to end in the chat')

  fake:kill(15)
  io.stdout:write('ok   codecompanion\n')
  io.stdout:flush()
end

local ok, err = xpcall(main, debug.traceback)
if not ok then
  io.stderr:write('FAIL codecompanion at ' .. step .. ': ' .. tostring(err) .. '\n')
  local log = read(log_file)
  if log then
    local lines = vim.split(log, '\n')
    io.stderr:write('--- agentd acp log (last 40 lines):\n' .. table.concat(vim.list_slice(lines, math.max(1, #lines - 40)), '\n') .. '\n')
  end
  os.exit(1)
end
os.exit(0)
