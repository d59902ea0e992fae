-- The options of require('agentd').setup() and their defaults (doc/agentd.txt
-- lists the same table; tests/doc_test checks they agree).
local M = {}

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
  -- baseUrl = '...' }. nil: the server's environment (AGENTD_MODEL).
  model = nil,
  -- Where the server keeps snapshots and state; nil: the server's default.
  state_dir = nil,
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
  -- Review keymaps, set in buffers that have hunks. Any can be false.
  keymaps = {
    accept = 'ga',
    reject = 'gr',
    accept_file = 'gA',
    reject_file = 'gR',
    next_hunk = ']h',
    prev_hunk = '[h',
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
    vim.notify(
      ("agentd: setup: review must be 'before' or 'after', not %s; using 'before'"):format(vim.inspect(M.options.review)),
      vim.log.levels.WARN
    )
    M.options.review = 'before'
  end
  return M.options
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
