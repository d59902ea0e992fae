-- Hosting `agentd serve` through Neovim's own LSP client: one client per
-- workspace root, reused across buffers.
local config = require('agentd.config')

local M = {}
local function notify(msg, level)
  return require('agentd.notify').notify(msg, level)
end

M.PROTOCOL_VERSION = require('agentd.protocol').VERSION

local warned_missing = false
local warned_old_cmd = false

--- The argv that starts the daemon, as vim.lsp and lspconfig take it:
--- { 'agentd', 'serve', ... }. The old forms (a string, or a list without
--- `serve`: the binary and arguments put before `serve`) still work, with a
--- deprecation note once. Returns nil and a message saying how to fix it
--- when the binary is missing.
---@return string[]|nil, string|nil
function M.command()
  local cmd = config.options.cmd
  local list
  if type(cmd) == 'string' then
    list = { cmd, 'serve' }
  elseif type(cmd) == 'table' and cmd[1] then
    list = vim.deepcopy(cmd)
    if not vim.tbl_contains(list, 'serve') then
      table.insert(list, 'serve')
    else
      cmd = nil -- the current form: nothing to say
    end
  else
    -- The binary build.lua installed in the repository first, then PATH.
    local install = require('agentd.install')
    local own = install.binary(install.repo_root())
    list = { vim.fn.executable(own) == 1 and own or 'agentd', 'serve' }
    cmd = nil
  end
  if cmd ~= nil and not warned_old_cmd then
    warned_old_cmd = true
    require('agentd.notify').notify(
      ("agentd: setup({ cmd = %s }) is deprecated: cmd is now the whole command line, as in vim.lsp and lspconfig: cmd = %s"):format(
        vim.inspect(cmd, { newline = ' ', indent = '' }),
        vim.inspect(list, { newline = ' ', indent = '' })
      ),
      vim.log.levels.WARN
    )
  end
  local bin = vim.fn.exepath(list[1])
  if bin == '' then
    local what = config.options.cmd and ("'" .. list[1] .. "' (the cmd setting)") or "'agentd' on PATH"
    return nil,
      ("agentd: cannot find the agentd binary: %s is not an executable. Set require('agentd').setup({ cmd = { '/path/to/agentd', 'serve' } }) or put agentd on PATH; "
        .. 'get it from a release archive or `make install` (`make build` writes bin/agentd) in the agentd checkout (:help agentd-install).'):format(
        what
      )
  end
  list[1] = bin
  return list
end

--- Says that the binary is missing: every time a command needs it, and
--- once for the files opened (auto_start) so that opening files stays quiet.
function M.report_missing(msg, quiet)
  if quiet and warned_missing then
    return
  end
  warned_missing = true
  require('agentd.notify').notify(msg, vim.log.levels.ERROR)
end

function M._reset_warning()
  warned_missing = false
  warned_old_cmd = false
end

--- The workspace root of a buffer (or of the cwd).
function M.root_of(bufnr)
  bufnr = bufnr or 0
  local name = vim.api.nvim_buf_get_name(bufnr)
  local root
  if name ~= '' and not name:match('^%a+://') then
    root = vim.fs.root(bufnr, config.options.root_markers)
  end
  if not root then
    root = vim.fs.root(vim.fn.getcwd(), config.options.root_markers) or vim.fn.getcwd()
  end
  return vim.fs.normalize(root)
end

local function init_options()
  local o = config.options
  local init = {
    review = o.review,
    -- inlineChanges: changeProposed carries the change set (no round trip).
    clientFeatures = { approvalRequest = true, changeReview = true, inlineChanges = true },
  }
  if o.state_dir then
    init.stateDir = o.state_dir
  end
  if o.allow_broad_workspace then
    init.allowBroadWorkspace = true
  end
  if type(o.model) == 'table' then
    -- The key goes in the daemon's environment, never on the wire.
    init.model = { provider = o.model.provider, model = o.model.model, baseUrl = o.model.baseUrl }
  end
  return init
end

--- Whether a buffer is one the server should see (a file, not a scratch).
local function is_file_buffer(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return false
  end
  if vim.bo[bufnr].buftype ~= '' then
    return false
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  return name ~= '' and not name:match('^%a+://')
end

local function under(path, root)
  return path == root or vim.startswith(path, root .. '/')
end

--- Whether a file buffer is shown to the server now. An empty buffer of a
--- file that does not exist yet (a create the user opened before accepting
--- it, or a new file not written yet) is not: its emptiness would stand for
--- the file and hide the proposal. It is attached once the file is on disk
--- (BufReadPost, BufWritePost), or once the user types into it: then it is
--- the user's text for that file, and the server must know it (a creation
--- proposed there is then a conflict to decide, the server's rule, never
--- written under the user's text).
local function attachable(bufnr)
  if not is_file_buffer(bufnr) then
    return false
  end
  if vim.uv.fs_stat(vim.api.nvim_buf_get_name(bufnr)) ~= nil then
    return true
  end
  return vim.api.nvim_buf_is_loaded(bufnr)
    and (vim.api.nvim_buf_line_count(bufnr) > 1 or (vim.api.nvim_buf_get_lines(bufnr, 0, 1, false)[1] or '') ~= '')
end
M.attachable = attachable

local watching = {} -- [bufnr] = true: an empty new file's buffer, attached once typed into

--- Attaches the buffer of a new file once the user types into it.
local function watch_new(bufnr)
  if watching[bufnr] or not is_file_buffer(bufnr) then
    return
  end
  watching[bufnr] = true
  vim.api.nvim_create_autocmd({ 'TextChanged', 'TextChangedI', 'BufWipeout' }, {
    buffer = bufnr,
    callback = function(ev)
      if ev.event == 'BufWipeout' then
        watching[bufnr] = nil
        return true
      end
      if attachable(bufnr) then
        watching[bufnr] = nil
        M.on_buf(bufnr)
        return true
      end
    end,
  })
end

-- The daemon's log lines (log/slog's text format on stderr) go to Neovim's
-- LSP log at their own level: Neovim logs a server's stderr as errors.
local log_levels = { DEBUG = 'debug', INFO = 'info', WARN = 'warn', ERROR = 'error' }
M.pids = {} -- [root] = the daemon's process id
M.last_errors = {} -- [root] = the daemon's last error lines (shown when it dies)

local function log_stderr(root, chunk)
  local log = require('vim.lsp.log')
  for line in chunk:gmatch('[^\n]+') do
    local lvl = log_levels[line:match('level=(%u+)') or ''] or 'error'
    log[lvl]('agentd', line)
    if lvl == 'error' then
      local t = M.last_errors[root] or {}
      t[#t + 1] = line
      if #t > 5 then
        table.remove(t, 1)
      end
      M.last_errors[root] = t
    end
  end
end

-- Neovim's own JSON-RPC client over the daemon's stdio, started here so
-- that its stderr is logged at each line's level. It needs two functions
-- vim.lsp.rpc keeps to itself; on a Neovim without them the daemon starts
-- through vim.lsp.rpc.start (stderr then logged as errors).
local function rpc_parts()
  local rpc = vim.lsp.rpc
  local want = { new_client = true, public_client = true, merge_dispatchers = true }
  local got = {}
  for i = 1, 64 do
    local name, val = debug.getupvalue(rpc.connect, i)
    if not name then
      break
    end
    if want[name] and type(val) == 'function' then
      got[name] = val
    end
  end
  if got.new_client and got.public_client and got.merge_dispatchers and rpc.create_read_loop then
    return got
  end
end

local function transport(argv, root, env)
  return function(dispatchers)
    local parts = rpc_parts()
    if not parts then
      return vim.lsp.rpc.start(argv, dispatchers, { env = env })
    end
    dispatchers = parts.merge_dispatchers(dispatchers)
    local proc
    local refused = false
    local c = parts.new_client(dispatchers, {
      write = function(msg)
        proc:write(msg)
      end,
      -- A refused daemon counts as stopped from the refusal on, not from
      -- its exit: a buffer opened in between starts a new daemon instead
      -- of joining the one going away.
      is_closing = function()
        return refused or proc == nil or proc:is_closing()
      end,
      terminate = function()
        proc:kill(15)
      end,
    })
    -- A refused initialize (a workspace that is your home directory, a
    -- state dir inside the workspace: the daemon's rules) is said as the
    -- daemon words it and the daemon stopped; passed on, Neovim's client
    -- would raise it as a Lua error with a traceback.
    local answered = false
    local stdout = vim.lsp.rpc.create_read_loop(function(body)
      if not answered then
        local ok, msg = pcall(vim.json.decode, body)
        if ok and type(msg) == 'table' and msg.id ~= nil and msg.method == nil then
          answered = true
          if type(msg.error) == 'table' then
            refused = true
            vim.schedule(function()
              -- Said whole: the fix is at its end, and no prompt can be
              -- waiting on a daemon that never started.
              -- A refused workspace is said in the daemon's sentence, which
              -- names it, without the wire's field prefix (as VS Code says it).
              local m = tostring(msg.error.message)
              local own = m:match('^invalid params: rootUri: (.*)$')
              require('agentd.notify').notify(
                own and ('agentd: ' .. own) or ('agentd: cannot open %s: %s'):format(root, m),
                vim.log.levels.ERROR,
                { whole = true }
              )
            end)
            -- Closing its input lets the daemon exit 0, so Neovim adds no
            -- "quit with exit code" warning to the refusal; one that has
            -- not exited after 2 s is stopped.
            proc:write(nil)
            vim.defer_fn(function()
              if not proc:is_closing() then
                proc:kill(15)
              end
            end, 2000)
            return
          end
        end
      end
      c:handle_body(body)
    end, nil, function(err)
      c:on_error(vim.lsp.rpc.client_errors.READ_ERROR, err)
    end)
    proc = vim.system(argv, {
      stdin = true,
      stdout = stdout,
      stderr = function(_, chunk)
        if chunk then
          log_stderr(root, chunk)
        end
      end,
      env = env,
      detach = vim.fn.has('win32') == 0,
    }, function(obj)
      dispatchers.on_exit(obj.code, obj.signal)
    end)
    M.pids[root] = proc.pid
    return parts.public_client(c)
  end
end

--- The environment the daemon starts with: the model's key from the
--- model.api_key option (a string or a function returning one), under the
--- variable the provider reads. nil when there is nothing to add.
local function daemon_env()
  local m = config.options.model
  if type(m) ~= 'table' or m.api_key == nil then
    return nil
  end
  local key = m.api_key
  if type(key) == 'function' then
    local ok, v = pcall(key)
    if not ok or type(v) ~= 'string' then
      notify('agentd: model.api_key: the function failed or returned no string: ' .. tostring(v), vim.log.levels.ERROR)
      return nil
    end
    key = v
  end
  if type(key) ~= 'string' or key == '' then
    return nil
  end
  return { [config.key_env(m)] = key }
end

--- Starts (or reuses) the client for the workspace of bufnr and attaches the
--- buffer when it is a file. Returns the client, or nil when the binary is
--- missing: said every time (quiet: once, for files opened at startup).
---@return vim.lsp.Client|nil
function M.ensure(bufnr, quiet)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local root = M.root_of(bufnr)
  local existing = M.get(root)
  if existing then
    if not attachable(bufnr) then
      watch_new(bufnr)
    elseif not vim.lsp.buf_is_attached(bufnr, existing.id) then
      local path = vim.fs.normalize(vim.api.nvim_buf_get_name(bufnr))
      if under(path, root) then
        vim.lsp.buf_attach_client(bufnr, existing.id)
      end
    end
    return existing
  end
  local cmd, err = M.command()
  if not cmd then
    M.report_missing(err, quiet)
    return nil
  end
  local handlers = require('agentd.handlers')
  -- Positions in bytes, Neovim's own unit, when the server agrees (it
  -- does): no conversion of each edit and each highlighted word.
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.general = caps.general or {}
  caps.general.positionEncodings = { 'utf-8', 'utf-16' }
  M.last_errors[root] = nil
  local id = vim.lsp.start({
    name = 'agentd',
    cmd = transport(cmd, root, daemon_env()),
    capabilities = caps,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = init_options(),
    handlers = handlers.table(),
    -- Send each edit at once, so the server rebases hunks under the user's
    -- typing and never mistakes an edit it applied for one the user made.
    flags = { debounce_text_changes = 0 },
    -- A daemon of another protocol version is stopped, saying which and the fix.
    on_init = function(c, result)
      if require('agentd.protocol').on_init(c, result) then
        return
      end
      M.send_approval(c)
    end,
    on_exit = function(code, signal, client_id)
      vim.schedule(function()
        require('agentd.state').on_exit(client_id, code, signal, root)
      end)
    end,
  }, {
    bufnr = attachable(bufnr) and bufnr or nil,
    attach = attachable(bufnr),
    reuse_client = function(client, conf)
      return client.name == 'agentd' and client.root_dir == conf.root_dir and not client.is_stopped()
    end,
  })
  if not id then
    return nil
  end
  local client = vim.lsp.get_client_by_id(id)
  if not attachable(bufnr) then
    watch_new(bufnr)
  end
  -- Attach the other open buffers of this workspace.
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if b ~= bufnr and vim.api.nvim_buf_is_loaded(b) and attachable(b) then
      local path = vim.fs.normalize(vim.api.nvim_buf_get_name(b))
      if under(path, root) then
        vim.lsp.buf_attach_client(b, id)
      end
    end
  end
  return client
end

--- The approval option reaches the daemon through agentd/policy/set (the
--- policy is the workspace's, shared by every front end): when the client
--- starts and whenever setup() changes it.
function M.send_approval(c)
  local ap = config.options.approval
  if type(ap) ~= 'table' or not c then
    return
  end
  c.request('agentd/policy/set', ap, function(err)
    if err then
      notify('agentd: the approval option was refused: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
  end)
end

--- The running client for a root, if any.
function M.get(root)
  for _, c in ipairs(vim.lsp.get_clients({ name = 'agentd' })) do
    if (not root or c.root_dir == root) and not c.is_stopped() then
      return c
    end
  end
end

--- The client for the current buffer's workspace, started if needed.
function M.current()
  return M.ensure(vim.api.nvim_get_current_buf())
end

--- Waits until the client has initialized (for synchronous API calls).
local function wait_ready(client)
  if client.initialized then
    return true
  end
  return vim.wait(10000, function()
    return client.initialized or client.is_stopped()
  end, 10) and client.initialized
end

--- A request that waits for its answer. Returns result, err (err is a
--- string a person can read, or nil).
---@return any, string|nil, table|nil
function M.request_sync(client, method, params, timeout)
  client = client or M.current()
  if not client then
    return nil, 'agentd is not running'
  end
  if not wait_ready(client) then
    return nil, 'agentd did not start (see :checkhealth agentd)'
  end
  local done, res, rerr = false, nil, nil
  local ok, id = client.request(method, params or vim.empty_dict(), function(err, result)
    done, res, rerr = true, result, err
  end)
  if not ok then
    return nil, 'agentd has stopped'
  end
  local finished = vim.wait(timeout or 60000, function()
    return done
  end, 5)
  if not finished then
    client.cancel_request(id)
    return nil, method .. ': no answer in time'
  end
  if rerr then
    return nil, rerr.message or vim.inspect(rerr), rerr
  end
  return res, nil
end

--- An asynchronous request; cb(err_message, result, err_table).
function M.request(client, method, params, cb)
  client = client or M.current()
  if not client then
    return
  end
  client.request(method, params or vim.empty_dict(), function(err, result)
    if cb then
      cb(err and (err.message or vim.inspect(err)) or nil, result, err)
    end
  end)
end

--- Attaches file buffers of running workspaces, and starts the server for a
--- file when auto_start is on.
function M.on_buf(bufnr)
  if not is_file_buffer(bufnr) then
    return
  end
  local root = M.root_of(bufnr)
  if M.get(root) or config.options.auto_start then
    M.ensure(bufnr, true)
  end
end

return M
