-- Both halves of the protocol-version check against a stand-in daemon
-- (tests/fake_old_daemon.js): the client refuses a daemon of protocol 1 or
-- of none, naming both versions and the fix, and :checkhealth agentd names
-- the binary's version. Run: nvim --headless -u NONE -l tests/protocol.lua
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
vim.opt.rtp:prepend(vim.fn.fnamemodify(here, ':h'))
local harness = dofile(here .. '/check.lua')
local check = harness.check

local protocol = require('agentd.protocol')
check('protocol 2 is accepted', protocol.problem(2, 'x') == nil)
local msg = protocol.problem(1, '/bin/agentd') or ''
check('protocol 1 is refused with both versions and the fix',
  msg:find('speaks protocol 2, but /bin/agentd speaks protocol 1', 1, true) and msg:find('update agentd', 1, true), msg)

-- A real client against a daemon that says protocol 1, then one that says nothing.
local node = vim.fn.exepath('node')
assert(node ~= '', 'node is needed for the stand-in daemon')
for _, v in ipairs({ '1', '' }) do
  vim.env.FAKE_PROTOCOL = v
  local notes = {}
  local orig = vim.notify
  vim.notify = function(m, level)
    table.insert(notes, { m = m, level = level })
  end
  local ws = vim.fn.tempname()
  vim.fn.mkdir(ws, 'p')
  require('agentd').setup({ cmd = { node, here .. '/fake_old_daemon.js', 'serve' }, auto_start = false })
  vim.cmd('cd ' .. ws)
  local client = require('agentd.client').ensure(vim.api.nvim_get_current_buf())
  local stopped = vim.wait(10000, function()
    return client == nil or client.is_stopped() and #notes > 0
  end, 20)
  vim.notify = orig
  local text = notes[1] and notes[1].m or ''
  local want = v == '1' and 'speaks protocol 1' or 'speaks no protocol version'
  check(('a daemon of protocol %q is stopped with a message'):format(v),
    stopped and client ~= nil and text:find(want, 1, true) and text:find('the plugin speaks protocol 2', 1, true), text)
end

-- :checkhealth names the mismatch.
vim.env.FAKE_PROTOCOL = '1'
local health = {}
local h = vim.health
vim.health = setmetatable({
  error = function(m) table.insert(health, 'ERROR ' .. m) end,
}, { __index = function(_, k) return function(m) table.insert(health, k .. ' ' .. tostring(m)) end end })
pcall(require('agentd.health').check)
vim.health = h
local all = table.concat(health, '\n')
check(':checkhealth agentd names the binary protocol mismatch', all:find('ERROR agentd: the plugin speaks protocol 2, but', 1, true) ~= nil, all)

harness.done()
