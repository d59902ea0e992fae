-- :Agent model: which model the daemon uses, and its API key, set while it
-- runs (agentd/model/get and agentd/model/set, docs/protocol.md "Model").
-- The key is read with inputsecret() (not echoed, not put in any history,
-- so not in shada either), sent once over the daemon's stdin with the LSP
-- log held at WARN (its debug level logs every request's params), and
-- kept by the daemon in memory until it stops: never by the plugin.
local M = {}
local function notify(msg, level)
  return require('agentd.notify').notify(msg, level)
end

-- Models offered by completion beside the daemon's profiles (any other
-- provider:model can be typed).
M.known = {
  'openai:gpt-4o',
  'openai:gpt-4o-mini',
  'openai:gpt-4.1',
  'openai:gpt-4.1-mini',
  'openai:o3-mini',
  'anthropic:claude-sonnet-4-20250514',
  'anthropic:claude-opus-4-20250514',
  'anthropic:claude-3-5-haiku-latest',
  'ollama:qwen2.5-coder',
  'ollama:llama3.2',
}

local client = function()
  return require('agentd.client')
end

--- Sends a request whose params may hold the key: the LSP log (whose
--- debug and trace levels write every request's params to lsp.log) is held
--- at WARN while the message is written.
local function request_secret(c, method, params)
  local log = vim.lsp.log
  local before = log.get_level()
  if before < vim.log.levels.WARN then
    log.set_level(vim.log.levels.WARN)
  end
  local done, res, rerr = false, nil, nil
  local ok, sent = pcall(c.request, method, params, function(err, result)
    done, res, rerr = true, result, err
  end)
  if before < vim.log.levels.WARN then
    log.set_level(before)
  end
  if not ok or not sent then
    return nil, 'agentd has stopped'
  end
  vim.wait(30000, function()
    return done
  end, 5)
  if not done then
    return nil, method .. ': no answer in time'
  end
  if rerr then
    return nil, rerr.message or vim.inspect(rerr)
  end
  return res
end

--- The running client, started if needed and initialized; nil (said why)
--- otherwise.
local function ready()
  local c = client().current()
  if not c then
    return nil
  end
  local ok = vim.wait(10000, function()
    return c.initialized or c.is_stopped()
  end, 10)
  if not ok or not c.initialized then
    notify('agentd: the daemon did not start (see :checkhealth agentd)', vim.log.levels.ERROR)
    return nil
  end
  return c
end

--- Where the model was chosen, in words (ModelInfo.source).
function M.source_words(info)
  local src = info.source
  if src == 'command' then
    return ':Agent model (kept by the daemon until it stops)'
  elseif src == 'editor' then
    return "setup({ model = ... })"
  elseif src == 'env' then
    return '$AGENTD_MODEL'
  elseif src == 'workspace' or src == 'user' then
    return (info.profile and ('profile ' .. info.profile .. ' in ') or '') .. (info.from or src)
  end
  return info.from or '?'
end

--- Where the key comes from, in words; nil when none is set.
function M.key_words(info)
  local k = info.key or {}
  if not k.set then
    return nil
  end
  if k.source == 'command' then
    return 'typed in :Agent model key (kept by the daemon until it stops)'
  end
  local m = require('agentd.config').options.model
  if type(m) == 'table' and m.api_key ~= nil and require('agentd.config').key_env(m) == k.env then
    return ('from setup({ model = { api_key = ... } }), given to the daemon as $%s'):format(k.env)
  end
  return ('$%s in the environment Neovim started in'):format(k.env)
end

--- One line saying the model in force (never the key).
function M.describe(info)
  if not info.configured then
    return 'no model is set'
  end
  local at = info.name and (' (%s:%s%s)'):format(info.provider or '?', info.name, info.baseUrl and (' at ' .. info.baseUrl) or '') or ''
  local key = M.key_words(info)
  return ('model %s%s from %s; %s'):format(info.model, at, M.source_words(info),
    key and ('API key ' .. key) or ((info.key or {}).needed and 'no API key' or 'no API key needed'))
end

local function set(c, params)
  local info, err = request_secret(c, 'agentd/model/set', params)
  if not info then
    notify('agentd: :Agent model: ' .. err, vim.log.levels.ERROR)
    return nil
  end
  -- The chat's header line names the model in force.
  if package.loaded['agentd.chat'] then
    require('agentd.chat').on_model(info)
  end
  return info
end

--- Asks for the key (not echoed, not in history) and gives it to the
--- daemon for the model in force.
function M.ask_key(c, info)
  c = c or ready()
  if not c then
    return
  end
  local env = info and info.key and info.key.env
  local ok, key = pcall(vim.fn.inputsecret, ('agentd: API key%s (not shown, not saved): '):format(env and (' for $' .. env) or ''))
  -- inputsecret() leaves what it asked on the command line; clear it.
  vim.cmd('redraw')
  if not ok or type(key) ~= 'string' or key == '' then
    notify('agentd: no key given; nothing changed', vim.log.levels.INFO)
    return
  end
  local res = set(c, { apiKey = key })
  key = nil -- luacheck: ignore (drop the reference)
  if res then
    notify('agentd: ' .. M.describe(res), vim.log.levels.INFO)
  end
  return res
end

local function after_set(c, info)
  if not info then
    return
  end
  notify('agentd: ' .. M.describe(info), vim.log.levels.INFO)
  if info.key and info.key.needed and not info.key.set then
    M.ask_key(c, info)
  end
end

--- Parses "provider:model" (or "provider/model"); a name without a known
--- provider is sent as is (a profile).
local function choice(name)
  local p, m = name:match('^(%a+)[:/](.+)$')
  if p and (p == 'openai' or p == 'anthropic' or p == 'ollama') then
    return { provider = p, model = m }
  end
  return { model = name }
end

--- :Agent model [name|key|reset]
function M.command(args)
  local c = ready()
  if not c then
    return
  end
  local sub = args[1]
  if sub == 'key' then
    local info = client().request_sync(c, 'agentd/model/get', vim.empty_dict(), 5000)
    M.ask_key(c, info)
    return
  end
  if sub == 'reset' then
    after_set(c, set(c, { reset = true }))
    return
  end
  if sub then
    local params = choice(sub)
    if args[2] and args[2]:match('^https?://') then
      params.baseUrl = args[2]
    end
    after_set(c, set(c, params))
    return
  end
  local info, err = client().request_sync(c, 'agentd/model/get', vim.empty_dict(), 5000)
  if not info then
    notify('agentd: :Agent model: ' .. err, vim.log.levels.ERROR)
    return
  end
  local items = {}
  for _, p in ipairs(info.profiles or {}) do
    items[#items + 1] = { name = p.name, label = ('%s  (profile: %s:%s%s)'):format(p.name, p.provider, p.model, p.baseUrl and (' at ' .. p.baseUrl) or '') }
  end
  for _, k in ipairs(M.known) do
    items[#items + 1] = { name = k, label = k }
  end
  items[#items + 1] = { other = true, label = 'another model… (provider:model)' }
  items[#items + 1] = { key = true, label = 'set the API key…' }
  vim.ui.select(items, {
    prompt = 'agentd: ' .. M.describe(info) .. '. Model:',
    kind = 'agentd.model',
    format_item = function(it)
      return (it.name and it.name == info.model) and (it.label .. '  ← in use') or it.label
    end,
  }, function(it)
    if not it then
      return
    end
    if it.key then
      M.ask_key(c, info)
    elseif it.other then
      vim.ui.input({ prompt = 'agentd: model (openai:<model>, anthropic:<model>, ollama:<model>): ' }, function(name)
        if name and vim.trim(name) ~= '' then
          after_set(c, set(c, choice(vim.trim(name))))
        end
      end)
    else
      after_set(c, set(c, choice(it.name)))
    end
  end)
end

--- What is missing before a model can be used, as the plugin tells from
--- setup() and the environment (config.model_missing), unless the running
--- daemon has a usable model all the same (set with :Agent model, or a
--- profile it reads). nil when nothing is missing.
function M.missing()
  local missing = require('agentd.config').model_missing()
  if not missing then
    return nil
  end
  local c = client().get(client().root_of(0))
  if c and c.initialized then
    local info = client().request_sync(c, 'agentd/model/get', vim.empty_dict(), 5000)
    if info and info.configured and not info.problem then
      return nil
    end
  end
  return missing .. '; or, while agentd runs, :Agent model (and :Agent model key)'
end

--- Completion of :Agent model: key, reset, the daemon's profiles (when it
--- runs), the providers and the known models.
function M.complete()
  local cands = { 'key', 'reset' }
  local c = client().get(client().root_of(0))
  if c and c.initialized then
    local info = client().request_sync(c, 'agentd/model/get', vim.empty_dict(), 2000)
    for _, p in ipairs(info and info.profiles or {}) do
      cands[#cands + 1] = p.name
    end
  end
  for _, p in ipairs({ 'openai:', 'anthropic:', 'ollama:' }) do
    cands[#cands + 1] = p
  end
  vim.list_extend(cands, M.known)
  return cands
end

return M
