-- Hosting `agentd serve` through Neovim's own LSP client: one client per
-- workspace root, reused across buffers.
local config = require('agentd.config')

local M = {}

M.PROTOCOL_VERSION = require('agentd.protocol').VERSION

local warned_missing = false

--- The agentd binary and the extra arguments before `serve`, or nil and a
--- message saying how to fix it.
---@return string[]|nil, string|nil
function M.command()
  local cmd = config.options.cmd
  local list
  if type(cmd) == 'string' then
    list = { cmd }
  elseif type(cmd) == 'table' and cmd[1] then
    list = vim.deepcopy(cmd)
  else
    -- The binary build.lua installed in the repository first, then PATH.
    local install = require('agentd.install')
    local own = install.binary(install.repo_root())
    list = { vim.fn.executable(own) == 1 and own or 'agentd' }
  end
  local bin = vim.fn.exepath(list[1])
  if bin == '' then
    local what = cmd and ("'" .. list[1] .. "' (the cmd setting)") or "'agentd' on PATH"
    return nil,
      ('agentd: cannot find the agentd binary: %s is not an executable. Build it with `make build` '
        .. "in the agentd checkout (it writes bin/agentd), then put it on PATH or set require('agentd').setup({ cmd = '/path/to/bin/agentd' })."):format(
        what
      )
  end
  list[1] = bin
  return list
end

--- Says once (per session) that the binary is missing.
function M.report_missing(msg)
  if warned_missing then
    return
  end
  warned_missing = true
  vim.notify(msg, vim.log.levels.ERROR)
end

function M._reset_warning()
  warned_missing = false
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
  if o.model then
    init.model = o.model
  end
  if o.approval then
    init.approval = o.approval
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

--- Starts (or reuses) the client for the workspace of bufnr and attaches the
--- buffer when it is a file. Returns the client, or nil when the binary is
--- missing (said once).
---@return vim.lsp.Client|nil
function M.ensure(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local root = M.root_of(bufnr)
  local existing = M.get(root)
  if existing then
    if is_file_buffer(bufnr) and not vim.lsp.buf_is_attached(bufnr, existing.id) then
      local path = vim.fs.normalize(vim.api.nvim_buf_get_name(bufnr))
      if under(path, root) then
        vim.lsp.buf_attach_client(bufnr, existing.id)
      end
    end
    return existing
  end
  local cmd, err = M.command()
  if not cmd then
    M.report_missing(err)
    return nil
  end
  table.insert(cmd, 'serve')
  local handlers = require('agentd.handlers')
  -- Positions in bytes, Neovim's own unit, when the server agrees (it
  -- does): no conversion of each edit and each highlighted word.
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.general = caps.general or {}
  caps.general.positionEncodings = { 'utf-8', 'utf-16' }
  local id = vim.lsp.start({
    name = 'agentd',
    cmd = cmd,
    capabilities = caps,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = init_options(),
    handlers = handlers.table(),
    -- Send each edit at once, so the server rebases hunks under the user's
    -- typing and never mistakes an edit it applied for one the user made.
    flags = { debounce_text_changes = 0 },
    -- A daemon of another protocol version is stopped, saying which and the fix.
    on_init = require('agentd.protocol').on_init,
    on_exit = function(code, signal, client_id)
      vim.schedule(function()
        require('agentd.state').on_exit(client_id, code, signal)
      end)
    end,
  }, {
    bufnr = is_file_buffer(bufnr) and bufnr or nil,
    attach = is_file_buffer(bufnr),
    reuse_client = function(client, conf)
      return client.name == 'agentd' and client.root_dir == conf.root_dir
    end,
  })
  if not id then
    return nil
  end
  local client = vim.lsp.get_client_by_id(id)
  -- Attach the other open buffers of this workspace.
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if b ~= bufnr and vim.api.nvim_buf_is_loaded(b) and is_file_buffer(b) then
      local path = vim.fs.normalize(vim.api.nvim_buf_get_name(b))
      if under(path, root) then
        vim.lsp.buf_attach_client(b, id)
      end
    end
  end
  return client
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
    M.ensure(bufnr)
  end
end

return M
