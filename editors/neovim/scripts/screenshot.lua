-- Neovim side of screenshot.sh: the plugin reviewing a real run in a real
-- terminal. Started inside tmux by screenshot.sh.
local plan = os.getenv('AGENTD_SHOT_PLAN')
vim.o.termguicolors = true
vim.o.number = true
vim.o.signcolumn = 'yes'
vim.o.laststatus = 2
vim.o.statusline = " %f %m%= %{v:lua.require'agentd'.statusline()} "
require('agentd').setup({ cmd = os.getenv('AGENTD_BIN'), state_dir = os.getenv('AGENTD_SHOT_STATE'), notify_steps = false })
vim.cmd.edit('greet/greet.go')
local b = vim.api.nvim_get_current_buf()
vim.wait(10000, function()
  local c = vim.lsp.get_clients({ bufnr = b, name = 'agentd' })[1]
  return c ~= nil and c.initialized
end, 20)
local a = require('agentd')
local pid = a.open_plan(plan)
vim.cmd.buffer(b)
a.run({ plan_id = pid })
vim.wait(10000, function() return #a.hunks(b) >= 1 end, 20)
vim.api.nvim_win_set_cursor(0, { a.hunks(b)[1].lnum, 0 })
vim.cmd('redraw!')
vim.fn.writefile({ 'ready' }, os.getenv('AGENTD_SHOT_READY'))
