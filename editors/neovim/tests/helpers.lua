-- Test helpers: real temporary git workspaces, the real daemon, waiting.
local H = {}

H.bin = assert(os.getenv('AGENTD_BIN'), 'AGENTD_BIN must name the built agentd binary')
-- The Neovim to start for interactive children (the test runner's wrapper).
H.nvim = os.getenv('NVIM_BIN') or vim.v.progpath
H.tmp = vim.fn.tempname()
vim.fn.mkdir(H.tmp, 'p')

function H.sh(cmd, cwd)
  local r = vim.system(cmd, { cwd = cwd, text = true }):wait(30000)
  if r.code ~= 0 then
    error(('%s failed (%s): %s%s'):format(table.concat(cmd, ' '), tostring(r.code), r.stdout or '', r.stderr or ''), 2)
  end
  return r.stdout
end

function H.write(path, text)
  vim.fn.mkdir(vim.fs.dirname(path), 'p')
  local f = assert(io.open(path, 'wb'))
  f:write(text)
  f:close()
end

function H.read(path)
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

--- A git workspace with files { ['a.txt'] = 'text' }, committed.
function H.workspace(files)
  local root = H.tmp .. '/ws'
  vim.fn.mkdir(root, 'p')
  root = vim.fs.normalize(vim.uv.fs_realpath(root))
  H.sh({ 'git', 'init', '-q' }, root)
  H.sh({ 'git', 'config', 'user.email', 't@example.com' }, root)
  H.sh({ 'git', 'config', 'user.name', 'test' }, root)
  for p, t in pairs(files) do
    H.write(root .. '/' .. p, t)
  end
  H.sh({ 'git', 'add', '-A' }, root)
  H.sh({ 'git', 'commit', '-qm', 'init' }, root)
  vim.cmd.cd(root)
  H.root = root
  return root
end

--- setup() with the built binary and a private state dir.
function H.setup(opts)
  local o = vim.tbl_deep_extend('force', { cmd = { H.bin, 'serve' }, state_dir = H.tmp .. '/state', notify_steps = false }, opts or {})
  return require('agentd').setup(o)
end

--- Waits until cond() holds; what (a string, or a function giving one when
--- the wait has timed out, so it tells the state at the end) names it.
function H.wait(cond, what, ms)
  local ok = vim.wait(ms or 15000, cond, 10)
  if not ok then
    error('timed out waiting for ' .. (type(what) == 'function' and what() or what), 2)
  end
end

function H.eq(want, got, what)
  if not vim.deep_equal(want, got) then
    error(('%s:\n  want %s\n  got  %s'):format(what or 'values differ', vim.inspect(want), vim.inspect(got)), 2)
  end
end

function H.truthy(v, what)
  if not v then
    error(what or 'expected a true value', 2)
  end
  return v
end

--- Opens a workspace file and waits until the agentd client is attached and
--- initialized.
function H.open(rel)
  vim.cmd.edit(vim.fn.fnameescape(H.root .. '/' .. rel))
  local b = vim.api.nvim_get_current_buf()
  H.wait(function()
    local c = vim.lsp.get_clients({ bufnr = b, name = 'agentd' })[1]
    return c ~= nil and c.initialized
  end, 'the agentd client to attach to ' .. rel)
  return b
end

--- Writes a plan file outside the workspace and returns its path.
function H.plan(tbl)
  local p = H.tmp .. '/plans/' .. (tbl.title or 'plan'):gsub('%W', '_') .. '.json'
  H.write(p, vim.json.encode(tbl))
  return p
end

function H.lines(b)
  return vim.api.nvim_buf_get_lines(b or 0, 0, -1, false)
end

function H.text(b)
  return table.concat(H.lines(b), '\n') .. '\n'
end

--- Waits until the buffer has n open hunks drawn.
function H.wait_hunks(b, n, what)
  H.wait(function()
    return #require('agentd').hunks(b) == n
  end, what or (n .. ' hunks in buffer ' .. b))
  return require('agentd').hunks(b)
end

--- Waits for the current run to end.
function H.wait_run(states)
  states = states or { completed = true, failed = true, partial = true, cancelled = true }
  H.wait(function()
    local s = require('agentd').status()
    return states[s.status] == true
  end, 'the run to finish', 30000)
  return require('agentd').status()
end

--- vim.notify calls recorded: { {msg, level} }.
function H.capture_notify()
  local got = {}
  vim.notify = function(msg, level)
    got[#got + 1] = { msg = msg, level = level }
  end
  return got
end

--- Answers vim.ui.select with the item chosen by pick(items, opts).
function H.answer_select(pick)
  local asked = {}
  vim.ui.select = function(items, opts, cb)
    asked[#asked + 1] = { items = items, opts = opts }
    local choice = pick(items, opts)
    vim.schedule(function()
      cb(choice)
    end)
  end
  return asked
end

function H.stop()
  for _, o in ipairs(H.children or {}) do
    o.stop()
  end
  for _, c in ipairs(vim.lsp.get_clients({ name = 'agentd' })) do
    c.stop(true)
  end
end

--- A second, interactive Neovim (headless, listening on a socket) with the
--- plugin, driven over RPC the way a terminal drives it: keys go through
--- nvim_input, so they take the real input path. Returns an object with
--- :input(keys), :lua(code, ...) and :stop().
function H.child()
  local sock = H.tmp .. '/child-' .. math.random(1e9) .. '.sock'
  local plugin = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
  local job = vim.fn.jobstart({ H.nvim, '--headless', '-u', 'NONE', '-i', 'NONE', '--listen', sock,
    '--cmd', 'set rtp^=' .. plugin, '--cmd', 'runtime! plugin/agentd.lua' }, {
    cwd = H.root,
    env = { VIMRUNTIME = vim.env.VIMRUNTIME },
  })
  H.wait(function()
    return vim.uv.fs_stat(sock) ~= nil
  end, 'the child Neovim to listen')
  local ch = vim.fn.sockconnect('pipe', sock, { rpc = true })
  local o = { sock = sock }
  function o.lua(code, ...)
    return vim.rpcrequest(ch, 'nvim_exec_lua', code, { ... })
  end
  function o.input(keys)
    return vim.rpcrequest(ch, 'nvim_input', keys)
  end
  function o.stop()
    pcall(vim.rpcrequest, ch, 'nvim_exec_lua', 'for _, c in ipairs(vim.lsp.get_clients()) do c.stop(true) end', {})
    pcall(vim.rpcnotify, ch, 'nvim_command', 'qa!')
    vim.wait(1000, function() return vim.fn.jobwait({ job }, 0)[1] ~= -1 end, 20)
    pcall(vim.fn.jobstop, job)
  end
  H.children = H.children or {}
  table.insert(H.children, o)
  return o
end

--- Starts the project's fake model (tests/fakemodel) with scripted replies
--- and returns its base URL. It stops when this Neovim exits.
function H.fakemodel(replies)
  local bin = os.getenv('FAKEMODEL_BIN')
  if not bin or bin == '' or vim.fn.executable(bin) == 0 then
    error('FAKEMODEL_BIN must name the built fake model (make test-neovim builds it)', 2)
  end
  local file = H.tmp .. '/replies.json'
  H.write(file, vim.json.encode(replies))
  local url
  local job = vim.fn.jobstart({ bin, file }, {
    on_stdout = function(_, data)
      for _, l in ipairs(data) do
        if l:match('^http') then
          url = l
        end
      end
    end,
  })
  H.children = H.children or {}
  table.insert(H.children, { stop = function() pcall(vim.fn.jobstop, job) end })
  H.wait(function() return url ~= nil end, 'the fake model to listen')
  return url
end

return H
