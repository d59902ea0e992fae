-- Runs one test case in this Neovim: nvim -l one.lua NAME. Exit 0 = pass.
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
package.path = here .. '/?.lua;' .. package.path
-- -u NONE loads no plugins: load ours as a plugin manager would.
vim.opt.rtp:prepend(vim.fs.dirname(here))
vim.cmd('runtime! plugin/agentd.lua')
local name = _G.arg[1]
local cases = require('cases')
local f = cases[name]
if not f then
  io.stderr:write('no test case ' .. tostring(name) .. '\n')
  os.exit(2)
end
local ok, err = xpcall(f, debug.traceback)
require('helpers').stop()
if ok then
  io.stdout:write('\nok   ' .. name .. '\n')
  os.exit(0)
end
io.stdout:write('\nFAIL ' .. name .. '\n' .. tostring(err) .. '\n')
os.exit(1)
