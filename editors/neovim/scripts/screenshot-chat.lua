-- Neovim side of `screenshot.sh ... chat`: :Agent chat on the demo
-- workspace against the project's fake model (tests/fakemodel), driven as
-- a user does: turn 1 edits greet.go and runs a check (its approvals
-- answered in the chat, the command's output folded under its step, the
-- change left to review), turn 2's command waits for its approval in the
-- chat, and a third message is queued behind it. Started inside tmux by screenshot.sh.
local api = vim.api
vim.cmd('runtime! plugin/agentd.lua')
local function die(msg)
  io.stderr:write('screenshot-chat.lua: ' .. msg .. '\n')
  vim.cmd('cquit 1')
end
local function wait(cond, what)
  if not vim.wait(60000, cond, 20) then
    die('timed out waiting for ' .. what)
  end
end

local function plan(title, steps)
  return { text = vim.json.encode({ title = title, steps = steps }) }
end
local replies = {
  plan('Greet with a full stop', {
    { id = 'stop', description = 'end the greeting with a full stop', tool = 'edit_file', args = { path = 'greet/greet.go', edits = {
      { oldText = '\treturn "Hello, " + name + "!"', newText = '\treturn "Hello, " + name + "."' },
    } } },
    { id = 'vet', description = 'vet and format check', tool = 'run_command', dependsOn = { 'stop' },
      args = { command = 'go vet ./... && gofmt -l . && echo "vet: no problems" && echo "gofmt: every file formatted"' } },
  }),
  plan('Run the tests', {
    { id = 'test', description = 'run the tests', tool = 'run_command', args = { command = 'go test ./...' } },
  }),
}
local file = vim.fn.tempname() .. '.json'
vim.fn.writefile({ vim.json.encode(replies) }, file)
local url
vim.fn.jobstart({ os.getenv('FAKEMODEL_BIN'), file }, {
  on_stdout = function(_, data)
    for _, l in ipairs(data) do
      url = url or (l:match('^http') and l) or nil
    end
  end,
})
wait(function() return url ~= nil end, 'the fake model')
vim.env.OPENAI_API_KEY = 'shot-key'

vim.o.termguicolors = true
vim.o.laststatus = 3
vim.cmd('syntax on')
vim.o.signcolumn = 'yes'
vim.o.statusline = " %f %m%= %{v:lua.require'agentd'.statusline()} "
require('agentd').setup({
  cmd = { os.getenv('AGENTD_BIN'), 'serve' },
  state_dir = os.getenv('AGENTD_SHOT_STATE'),
  notify_steps = false,
  review = 'after',
  model = { provider = 'openai', model = 'fake', baseUrl = url },
})
vim.cmd.edit('greet/greet.go')
local src = api.nvim_get_current_buf()
wait(function()
  local c = vim.lsp.get_clients({ bufnr = src, name = 'agentd' })[1]
  return c ~= nil and c.initialized
end, 'the agentd client')

local chat = require('agentd.chat')
vim.cmd('Agent chat')
local tb, ib = chat.bufs()
local function text()
  return table.concat(api.nvim_buf_get_lines(tb, 0, -1, false), '\n')
end
local function twin()
  for _, w in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_buf(w) == tb then
      return w
    end
  end
end
local function on(pat)
  for i, l in ipairs(api.nvim_buf_get_lines(tb, 0, -1, false)) do
    if l:find(pat) then
      api.nvim_set_current_win(twin())
      api.nvim_win_set_cursor(0, { i, 0 })
      return i
    end
  end
  die('no line ' .. pat .. ' in:\n' .. text())
end
local function send(msg)
  api.nvim_buf_set_lines(ib, 0, -1, false, { msg })
  chat.send_input()
end

send('end the greeting with a full stop, then check #buffer')
wait(function() return text():find('### Plan: Greet with a full stop', 1, true) end, 'turn 1 plan')
on('^### Plan: Greet')
chat.run_turn()
-- Every approval of turn 1 answered in the chat, as `a` on its block.
wait(function()
  if text():find('#### Approval needed', 1, true) then
    on('^#### Approval needed')
    chat.answer_approval('allow_once')
  end
  return text():find(': completed**', 1, true) ~= nil
end, 'turn 1 run')
wait(function() return text():find('output of step vet', 1, true) end, 'the output of step vet')
send('now run the tests')
wait(function() return text():find('### Plan: Run the tests', 1, true) end, 'turn 2 plan')
on('^### Plan: Run the tests')
chat.run_turn()
wait(function() return text():find('#### Approval needed', 1, true) and text():find(': running**', 1, true) end, "turn 2's approval")
-- A message written while turn 2 waits: queued in the daemon, planned when
-- the turn ends.
send('then add a test for the full stop')
wait(function() return text():find('- queued: then add a test', 1, true) end, 'the queued message')
-- The source window shows the change at its hunk; the cursor rests on
-- the approval block.
vim.cmd('wincmd t')
local a = require('agentd')
wait(function() return #a.hunks(src) >= 1 end, 'the hunk of greet.go')
api.nvim_win_set_cursor(0, { a.hunks(src)[1].lnum, 0 })
on('^#### Approval needed')
vim.cmd('redraw!')
-- Once the terminal's UI is attached (screenshot.sh): the source narrower
-- than the transcript.
function _G.shot_attached()
  local cur = api.nvim_get_current_win()
  vim.cmd('wincmd t')
  vim.cmd('vertical resize 64')
  api.nvim_set_current_win(cur)
  vim.fn.winrestview({ topline = 1 })
  vim.cmd('redraw!')
  return 0
end
vim.fn.writefile({ 'ready' }, os.getenv('AGENTD_SHOT_READY'))
