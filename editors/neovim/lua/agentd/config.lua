-- The options of require('agentd').setup() and their defaults (doc/agentd.txt
-- lists the same table; tests/doc_test checks they agree).
local M = {}
local function notify(msg, level)
  return require('agentd.notify').notify(msg, level)
end

M.defaults = {
  -- The agentd binary: a path, or a list whose first item is the binary and
  -- the rest extra arguments put before `serve`. nil: `agentd` on PATH.
  cmd = nil,
  -- How changes are reviewed: 'before' (nothing is written until accepted)
  -- or 'after' (written at once; rejecting takes a hunk out again).
  review = 'before',
  -- ApprovalPolicy sent to the server (docs/protocol.md); nil: the server's
  -- defaults (writes are reviewed, delete/command/git ask).
  approval = nil,
  -- Model for plans and llm/agent steps: { provider = 'openai', model = '...',
  -- baseUrl = '...', api_key = '...' or function() return '...' end,
  -- api_key_env = 'OPENAI_API_KEY' }. The key is put in the daemon's
  -- environment (never sent over the wire). nil: the daemon's own settings
  -- ($AGENTD_MODEL with $OPENAI_API_KEY / $ANTHROPIC_API_KEY,
  -- ~/.config/agentd/config.json).
  model = nil,
  -- Where the server keeps snapshots and state; nil: the server's default.
  state_dir = nil,
  -- true lets agentd work in a workspace that is /, your home directory or
  -- a folder holding it (refused by default: agentd walks and snapshots
  -- everything below the workspace, and a plan could change any project in
  -- it). Better: open the project's own folder.
  allow_broad_workspace = false,
  -- Files that mark a workspace root (vim.fs.root); the cwd when none.
  root_markers = { '.git' },
  -- Start the server (and attach) when a file inside a workspace is opened.
  -- false: on the first :Agent command.
  auto_start = true,
  -- Step status signs in the plan buffer; false to draw none.
  signs = {
    pending = '·',
    ready = '○',
    running = '▶',
    waiting = '?',
    retrying = '↻',
    completed = '✓',
    failed = '✗',
    skipped = '-',
    blocked = '⊘',
    cancelled = '✗',
  },
  -- Review keymaps, buffer-local, set only in buffers that have hunks to
  -- review (and in the plan buffer). Any can be false.
  keymaps = {
    accept = 'ga',
    reject = 'gr',
    accept_file = 'gA',
    reject_file = 'gR',
    next_hunk = ']h',
    prev_hunk = '[h',
    preview = 'gh',
  },
  -- Keys of the plan buffer. Any can be false.
  plan_keymaps = {
    skip = 'x',
    edit = 'e',
    move_down = 'J',
    move_up = 'K',
    remove = 'dd',
    add = 'o',
    run = 'r',
    regenerate = 'R',
  },
  -- The hint drawn beside each pending hunk; false for none.
  hunk_hint = true,
  -- vim.notify step results (failures are always notified).
  notify_steps = true,
  -- Run options passed to agentd/run/start (mode, maxParallel, ...); review
  -- comes from `review` above.
  run = {},
}

M.options = vim.deepcopy(M.defaults)

function M.set(opts)
  M.configured = true
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  -- A keymaps table replaces per key, and false disables a key.
  for _, k in ipairs({ 'keymaps', 'plan_keymaps' }) do
    if opts and opts[k] == false then
      M.options[k] = {}
    end
  end
  if opts and opts.signs == false then
    M.options.signs = false
  end
  if M.options.review ~= 'before' and M.options.review ~= 'after' then
    notify(
      ("agentd: setup: review must be 'before' or 'after', not %s; using 'before'"):format(vim.inspect(M.options.review)),
      vim.log.levels.WARN
    )
    M.options.review = 'before'
  end
  return M.options
end

--- The environment variable the daemon reads the model's key from.
function M.key_env(m)
  if m.api_key_env and m.api_key_env ~= '' then
    return m.api_key_env
  end
  return (m.provider == 'anthropic') and 'ANTHROPIC_API_KEY' or 'OPENAI_API_KEY'
end

--- What is missing before a model can be used, as the plugin can tell
--- from its options and the environment the daemon inherits: nil when a
--- model is named and its key is there (or not needed), else a message
--- saying what to set. (The daemon has the last word: its errors say the
--- same when the plugin could not tell.)
function M.model_missing()
  local m = M.options.model
  local env = vim.env
  local name, provider, base
  if type(m) == 'table' and m.model and m.model ~= '' then
    name, provider, base = m.model, m.provider or 'openai', m.baseUrl
  elseif env.AGENTD_MODEL and env.AGENTD_MODEL ~= '' then
    name = env.AGENTD_MODEL
    provider = name:match('^([^:/]+)[:/]') or 'openai'
  else
    local cfg = (env.XDG_CONFIG_HOME and env.XDG_CONFIG_HOME ~= '' and env.XDG_CONFIG_HOME or vim.fn.expand('~/.config')) .. '/agentd/config.json'
    local ok, data = pcall(vim.fn.readfile, cfg)
    local okj, decoded = pcall(vim.json.decode, ok and table.concat(data, '\n') or '')
    if okj and type(decoded) == 'table' and type(decoded.model) == 'string' and decoded.model ~= '' then
      return nil -- the daemon's own config names one (and its profiles)
    end
    return "no model is set. Set one in setup({ model = { provider = 'openai', model = '<model>', api_key = ... } }), "
      .. 'or $AGENTD_MODEL=openai:<model> with $OPENAI_API_KEY (anthropic:<model> with $ANTHROPIC_API_KEY, '
      .. 'ollama:<model> for a local Ollama), or {"model": ...} in ~/.config/agentd/config.json (:help agentd-model)'
  end
  if provider == 'ollama' then
    return nil
  end
  base = base or (provider == 'anthropic' and env.ANTHROPIC_BASE_URL or env.OPENAI_BASE_URL)
  if base and base ~= '' then
    return nil -- a local or self-hosted server may need no key
  end
  local var = type(m) == 'table' and M.key_env(m) or (provider == 'anthropic' and 'ANTHROPIC_API_KEY' or 'OPENAI_API_KEY')
  local has_key = (type(m) == 'table' and m.api_key ~= nil) or (env[var] and env[var] ~= '')
  if not has_key then
    return ('model %s needs an API key: set model.api_key in setup() (a string or a function returning one) or $%s (:help agentd-model)'):format(name, var)
  end
  return nil
end

--- The highlight groups (default = true: a colorscheme can set them).
function M.highlights()
  local set = function(name, link)
    vim.api.nvim_set_hl(0, name, { link = link, default = true })
  end
  set('AgentdAdd', 'DiffAdd')
  set('AgentdAddText', 'DiffText')
  set('AgentdDelete', 'DiffDelete')
  set('AgentdDeleteText', 'DiffText')
  set('AgentdStale', 'DiagnosticVirtualTextWarn')
  set('AgentdHint', 'Comment')
end

return M
