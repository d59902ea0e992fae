-- :checkhealth agentd
local M = {}

local function state_dir()
  local o = require('agentd.config').options
  if o.state_dir then
    return o.state_dir, 'the state_dir setting'
  end
  if vim.env.AGENTD_STATE_DIR and vim.env.AGENTD_STATE_DIR ~= '' then
    return vim.env.AGENTD_STATE_DIR, '$AGENTD_STATE_DIR'
  end
  local xdg = vim.env.XDG_STATE_HOME
  if xdg and xdg ~= '' then
    return xdg .. '/agentd', '$XDG_STATE_HOME/agentd'
  end
  return vim.fn.expand('~/.local/state/agentd'), '~/.local/state/agentd'
end

--- Writable means: it exists and a file can be made in it, or it can be
--- made (its nearest existing parent is writable).
local function writable(dir)
  if vim.fn.isdirectory(dir) == 1 then
    local probe = dir .. '/.agentd-health-' .. vim.fn.getpid()
    local f = io.open(probe, 'w')
    if f then
      f:close()
      os.remove(probe)
      return true, 'exists and is writable'
    end
    return false, 'exists but is not writable'
  end
  local parent = vim.fs.dirname(dir)
  while parent and not vim.uv.fs_stat(parent) do
    local up = vim.fs.dirname(parent)
    if up == parent then
      break
    end
    parent = up
  end
  if parent and vim.fn.isdirectory(parent) == 0 then
    return false, 'cannot be made: ' .. parent .. ' is not a directory'
  end
  if parent and vim.fn.filewritable(parent) == 2 then
    return true, 'does not exist yet; agentd will make it (' .. parent .. ' is writable)'
  end
  return false, 'does not exist and ' .. tostring(parent) .. ' is not writable'
end

--- Starts `agentd serve` alone and reads its initialize answer.
local function handshake(cmd)
  local body = vim.json.encode({
    jsonrpc = '2.0',
    id = 1,
    method = 'initialize',
    params = { processId = vim.NIL, rootUri = vim.uri_from_fname(vim.fn.getcwd()), capabilities = vim.empty_dict() },
  })
  local exit = vim.json.encode({ jsonrpc = '2.0', method = 'exit' })
  local input = ('Content-Length: %d\r\n\r\n%s'):format(#body, body)
  local full = cmd -- the whole command line (client.command())
  local out = ''
  local proc = vim.system(full, { stdin = true, stdout = function(_, data)
    out = out .. (data or '')
  end })
  proc:write(input)
  local ok = vim.wait(5000, function()
    return out:find('"result"') ~= nil or out:find('"error"') ~= nil
  end, 10)
  proc:write(('Content-Length: %d\r\n\r\n%s'):format(#exit, exit))
  proc:write(nil)
  pcall(function()
    proc:wait(2000)
  end)
  if not ok then
    return nil, 'no answer to initialize in 5 s'
  end
  local json = out:match('\r\n\r\n(.*)$')
  local dok, msg = pcall(vim.json.decode, json or '')
  if not dok then
    return nil, 'could not read the answer: ' .. tostring(msg)
  end
  return msg
end

function M.check()
  local h = vim.health
  local client = require('agentd.client')
  local config = require('agentd.config')

  h.start('agentd: Neovim')
  local v = vim.version()
  local vs = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.10') == 1 then
    h.ok('Neovim ' .. vs .. ' (0.10 or newer needed)')
  else
    h.error('Neovim ' .. vs .. ': agentd needs 0.10 or newer (vim.lsp.start, vim.system)')
  end

  h.start('agentd: binary')
  local cmd, err = client.command()
  if not cmd then
    h.error(err, {
      'lazy.nvim: :Lazy build agentd installs it into the plugin: with Go on PATH it builds from source, '
        .. 'else it downloads the release binary for this system',
      'no network, or a blocked host: set $AGENTD_RELEASE_URL to a reachable mirror or to a local folder holding the release '
        .. '(file:///path/to/folder), then :Lazy build agentd; or install Go (https://go.dev/dl/) and :Lazy build agentd',
      'from the checkout: make build (writes bin/agentd), then put it on $PATH or set cmd = { "/path/to/agentd", "serve" }',
    })
  else
    local r = vim.system({ cmd[1], 'version' }, { text = true }):wait(5000)
    local version = vim.trim((r.stdout or '') .. (r.stderr or ''))
    if r.code == 0 then
      h.ok(('%s: %s'):format(cmd[1], version))
    else
      h.error(('%s version failed (exit %s): %s'):format(cmd[1], tostring(r.code), version))
    end
    local ans, herr = handshake(cmd)
    if not ans then
      h.error('agentd serve: ' .. herr)
    elseif ans.error then
      h.error('agentd serve: initialize failed: ' .. (ans.error.message or ''))
    else
      local pv = vim.tbl_get(ans, 'result', 'capabilities', 'experimental', 'agentd', 'protocolVersion')
      if pv == client.PROTOCOL_VERSION then
        h.ok(('protocol version %d (the plugin speaks %d)'):format(pv, client.PROTOCOL_VERSION))
      else
        h.error(require('agentd.protocol').problem(pv, cmd[1]))
      end
    end
  end
  local ffile = require('agentd.install').failure_file()
  local okf, failed = pcall(vim.fn.readfile, ffile)
  if okf and #failed > 0 then
    h.warn(('the last :Lazy build agentd failed (kept in %s until a build succeeds):\n'):format(ffile) .. table.concat(failed, '\n'))
  end
  local running = vim.lsp.get_clients({ name = 'agentd' })
  if #running > 0 then
    for _, c in ipairs(running) do
      h.info(('running for %s (client %d)'):format(c.root_dir or '?', c.id))
    end
  else
    h.info('not running yet: ' .. (config.options.auto_start and 'it starts when you open a file in a workspace' or 'it starts on the first :Agent command'))
  end

  h.start('agentd: state')
  local dir, from = state_dir()
  local ok, why = writable(dir)
  if ok then
    h.ok(('state dir %s (%s): %s'):format(dir, from, why))
  else
    h.error(('state dir %s (%s): %s; set state_dir in setup() or $AGENTD_STATE_DIR'):format(dir, from, why))
  end

  h.start('agentd: model')
  local m = config.options.model
  -- The running daemon knows best (a model set with :Agent model, its
  -- profiles, the workspace's config); it never answers with the key.
  local c = client.get(client.root_of(0))
  local info = c and c.initialized and client.request_sync(c, 'agentd/model/get', vim.empty_dict(), 5000) or nil
  local missing = not info and config.model_missing()
  if info then
    local model = require('agentd.model')
    if not info.configured then
      h.warn((info.problem or 'no model is set') .. '. Set one with :Agent model. Plan files (:Agent open), tool steps, review, snapshots and undo all work without one.')
    elseif info.problem then
      h.error(model.describe(info) .. ': ' .. info.problem .. ' (:Agent model key gives the key)')
    else
      h.ok(model.describe(info))
    end
  elseif missing then
    h.warn(missing .. '. Plan files (:Agent open), tool steps, review, snapshots and undo all work without one; '
      .. ':Agent plan, regenerating a plan and llm/agent steps need one.')
  elseif type(m) == 'table' and m.model then
    local key = m.api_key and ('key from model.api_key, given to the daemon as $' .. config.key_env(m))
      or (m.provider == 'ollama' and 'no key (a local Ollama)')
      or ('key from $' .. config.key_env(m) .. ' in the environment Neovim started in')
    h.ok(('model %s:%s%s (from setup({ model = ... })); %s'):format(m.provider or 'openai', m.model, m.baseUrl and (' at ' .. m.baseUrl) or '', key))
  elseif vim.env.AGENTD_MODEL and vim.env.AGENTD_MODEL ~= '' then
    local provider = vim.env.AGENTD_MODEL:match('^([^:/]+)[:/]') or 'openai'
    local key = provider == 'ollama' and 'no key (a local Ollama)' or ('key from $' .. config.key_env({ provider = provider }))
    h.ok(('model %s (from $AGENTD_MODEL in the environment Neovim started in); %s'):format(vim.env.AGENTD_MODEL, key))
  else
    h.ok('model from ~/.config/agentd/config.json (the daemon reads it, with its key settings)')
  end
  h.info('Change the model while agentd runs with :Agent model, and give its key with :Agent model key (not shown, not saved; '
    .. 'the daemon keeps it until it stops). To keep them across restarts: '
    .. "setup({ model = { provider = 'openai', model = '<model>', api_key = function() ... end } }), "
    .. 'or start Neovim with $AGENTD_MODEL and $OPENAI_API_KEY / $ANTHROPIC_API_KEY (:help agentd-model)')
end

return M
