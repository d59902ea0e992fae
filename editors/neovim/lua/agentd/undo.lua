-- :Agent undo and :Agent undo-restore. Undo is the daemon's (a revert of
-- what the agent wrote, recorded in the workspace's ledger); this module
-- asks it, offers the choices when the undo conflicts with the user's edits
-- (keep them, overwrite them, see the diff, cancel) and reloads the buffers
-- of the files it reverted. Every command it prints names the run (or the
-- undo) it means, so typed as shown it does what it says.
local M = {}

local client = require('agentd.client')

local function notify(msg, level, opts)
  return require('agentd.notify').notify(msg, level, opts)
end

--- The file a wire path names: a file:// URI, an absolute path, or a path
--- relative to the workspace root.
local function fname(root, p)
  if p:match('^file://') then
    return vim.uri_to_fname(p)
  end
  if p:sub(1, 1) == '/' or p:match('^%a:[/\\]') then
    return p
  end
  return root .. '/' .. p
end

local function shown(root, p)
  return vim.fn.fnamemodify(fname(root, p), ':~:.')
end

--- One shape for every answer: the revert's result (`applied`, `reverted`,
--- `conflicts[{path, uri, reason, diff}]`, `kept`, `overwritten`,
--- `undoId`) as it is, and an older daemon's restore-shaped one
--- (`restore.restored`, `conflicts[{uri, message}]`: applied, with the
--- conflicting files left alone) mapped onto it.
local function normalize(res)
  if res.applied ~= nil then
    for _, k in ipairs({ 'reverted', 'created', 'deleted', 'conflicts', 'overwritten', 'leftAlone', 'kept' }) do
      res[k] = type(res[k]) == 'table' and res[k] or {}
    end
    local wb = type(res.wayBack) == 'table' and res.wayBack or nil
    if wb and wb.method == 'agentd/undo/restore' and type(wb.params) == 'table' and wb.params.id then
      res.backId = wb.params.id
    else
      res.backId = res.undoId
    end
    return res
  end
  local r = res.restore or res
  local out = {
    runId = res.runId,
    applied = true,
    reverted = r.restored or {},
    created = r.created or {},
    deleted = r.deleted or {},
    conflicts = {},
    overwritten = {},
    leftAlone = {},
    kept = {},
    leftovers = res.leftovers,
    old = true,
  }
  for _, cf in ipairs(r.conflicts or {}) do
    out.conflicts[#out.conflicts + 1] = { path = cf.uri or cf.path, reason = cf.message or cf.reason }
  end
  for _, la in ipairs(r.leftAlone or {}) do
    out.leftAlone[#out.leftAlone + 1] = { path = la.uri or la.path, message = la.message }
  end
  return out
end

--- Reloads the clean buffers of the files the undo changed on disk; returns
--- the names of those whose buffer holds unsaved edits (left as they are).
local function reload(root, res)
  local dirty, seen, n = {}, {}, 0
  for _, list in ipairs({ res.reverted, res.created, res.deleted, res.overwritten }) do
    for _, p in ipairs(list) do
      local path = fname(root, p)
      local b = seen[path] and -1 or vim.fn.bufnr(path)
      if not seen[path] then
        seen[path], n = true, n + 1
      end
      if b > 0 and vim.api.nvim_buf_is_loaded(b) then
        local disk = vim.uv.fs_stat(path) and table.concat(vim.fn.readfile(path, 'b'), '\n') or nil
        local text = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n') .. (vim.bo[b].eol and '\n' or '')
        if disk ~= text then
          if vim.bo[b].modified then
            dirty[#dirty + 1] = shown(root, p)
          else
            vim.api.nvim_buf_call(b, function()
              vim.cmd('silent edit!')
            end)
          end
        end
      end
    end
  end
  return dirty, n
end

M.normalize = normalize
M.reload = reload

local function names(root, list, key)
  local t = {}
  for _, x in ipairs(list) do
    t[#t + 1] = shown(root, type(x) == 'table' and (x[key or 'path'] or x.uri) or x)
  end
  return table.concat(t, ', ')
end

--- What the command line looks like for `what` ('run' or 'restore') of
--- `id` with a choice ('keep', 'overwrite' or nil).
local function cmdline(what, id, choice)
  local sub = what == 'run' and 'undo' or 'undo-restore'
  if choice == 'overwrite' then
    return (':Agent %s! %s'):format(sub, id or '')
  end
  return vim.trim((':Agent %s %s %s'):format(sub, id or '', choice or ''))
end
M.cmdline = cmdline

--- The request for `what` of `id` (nil: the newest) with params.
local function request(what, id, params)
  local p = vim.deepcopy(params or {})
  if id and id ~= '' then
    p[what == 'run' and 'runId' or 'id'] = id
  end
  if next(p) == nil then
    p = vim.empty_dict()
  end
  return client.request_sync(nil, what == 'run' and 'agentd/undo/run' or 'agentd/undo/restore', p)
end

--- The subject of the messages: "run ID" or "the undo ID".
local function subject(what, id)
  if what == 'run' then
    id = id or '?'
    return id:match('^run%-') and id or ('run ' .. id)
  end
  return id and ('restore ' .. id) or 'the last restore'
end

--- Tells what an applied undo did and reloads the buffers.
local function report(root, what, res)
  local dirty, n = reload(root, res)
  local head = what == 'run' and ('undid %s'):format(subject('run', res.runId)) or 'undid the last restore'
  if what == 'restore' and type(res.undid) == 'string' and res.undid ~= '' then
    head = 'undid ' .. subject('restore', res.undid)
  end
  local parts = { ('agentd: %s: %d file%s'):format(head, n, n == 1 and '' or 's') }
  local level = vim.log.levels.INFO
  if #res.conflicts > 0 or #res.kept > 0 then
    level = vim.log.levels.WARN
    local t, named = {}, {}
    for _, cf in ipairs(res.conflicts) do
      local f = shown(root, cf.path or cf.uri)
      named[f] = true
      t[#t + 1] = f .. ((cf.reason and cf.reason ~= '') and (' (' .. cf.reason .. ')') or '')
    end
    for _, p in ipairs(res.kept) do
      if not named[shown(root, p)] then
        t[#t + 1] = shown(root, p)
      end
    end
    parts[#parts + 1] = 'kept as you have them: ' .. table.concat(t, '; ')
  end
  if #res.overwritten > 0 then
    parts[#parts + 1] = 'overwritten: ' .. names(root, res.overwritten) .. ' (a safety snapshot keeps your version)'
  end
  if #res.leftAlone > 0 then
    level = vim.log.levels.WARN
    local t = {}
    for _, la in ipairs(res.leftAlone) do
      t[#t + 1] = shown(root, la.path or la.uri) .. ': ' .. (la.message or '')
    end
    parts[#parts + 1] = 'left alone: ' .. table.concat(t, '; ')
  end
  if #dirty > 0 then
    level = vim.log.levels.WARN
    parts[#parts + 1] = ('%s: your unsaved edits are kept in the buffer; the file on disk was undone (:e! loads it, :w keeps yours)'):format(table.concat(dirty, ', '))
  end
  if n > 0 or #res.overwritten > 0 then
    if res.backId and res.backId ~= '' and not res.old then
      parts[#parts + 1] = ('%s puts it back'):format(cmdline('restore', res.backId))
    elseif what == 'run' then
      parts[#parts + 1] = ':Agent undo-restore puts it back'
    end
  end
  notify(table.concat(parts, '; '), level)
  if type(res.leftovers) == 'table' and res.leftovers.text then
    -- What the undo could not take back, in the server's words.
    notify('agentd: ' .. res.leftovers.text, vim.log.levels.WARN)
  end
end

--- The conflicts as a diff in a split: for each file, the file now against
--- what overwriting it would write. Diffs come from a dry run when the
--- refusal carried none.
local function show_diff(root, what, id, conflicts)
  local missing = false
  for _, cf in ipairs(conflicts) do
    if not cf.diff or cf.diff == '' then
      missing = true
    end
  end
  if missing then
    local dry = request(what, id, { dryRun = true })
    if dry and dry.conflicts and #dry.conflicts > 0 then
      conflicts = dry.conflicts
    end
  end
  local lines = {
    ('# undo of %s: these files have your edits on the lines it would take back.'):format(subject(what, id)),
    '# Each diff goes from the file now (-) to what overwriting it writes (+). Nothing has changed yet.',
    ('#   %s   undo the rest, keep these files as they are'):format(cmdline(what, id, 'keep')),
    ('#   %s   overwrite them (a safety snapshot keeps them; :Agent undo-restore brings them back)'):format(cmdline(what, id, 'overwrite')),
  }
  for _, cf in ipairs(conflicts) do
    lines[#lines + 1] = ''
    if cf.diff and cf.diff ~= '' then
      vim.list_extend(lines, vim.split(cf.diff:gsub('\n$', ''), '\n'))
    else
      lines[#lines + 1] = ('# %s: %s (no diff)'):format(shown(root, cf.path or cf.uri), cf.reason or '')
    end
  end
  local b = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  vim.bo[b].filetype = 'diff'
  vim.bo[b].modifiable = false
  vim.bo[b].bufhidden = 'wipe'
  vim.cmd('belowright split')
  vim.api.nvim_win_set_buf(0, b)
  pcall(vim.api.nvim_buf_set_name, b, ('agentd://undo/%s/conflicts'):format(id or 'last'))
  return b
end

--- The way out after a refused undo, as commands that do what they say.
local function hint(root, what, id, conflicts)
  local files = names(root, conflicts)
  return table.concat({
    ('agentd: nothing undone: the undo of %s conflicts with your edits in %s (you changed lines it would take back).'):format(subject(what, id), files),
    ('  undo the rest and keep %s as you have it: %s'):format(files, cmdline(what, id, 'keep')),
    ('  overwrite %s (a safety snapshot keeps it; :Agent undo-restore brings it back): %s'):format(files, cmdline(what, id, 'overwrite')),
  }, '\n')
end

local choices = {
  { choice = 'keep' },
  { choice = 'overwrite' },
  { choice = 'diff' },
  { choice = 'cancel' },
}

--- Runs `what` ('run' or 'restore') of id (nil: the newest) with opts
--- { on_conflict = 'keep'|'overwrite', dry_run = true, ask = false }.
--- A conflicting undo changes nothing; then, unless opts.ask is false or a
--- choice was given, vim.ui.select offers keep, overwrite, the diff, or
--- cancel. Returns the (normalized) result of the first request.
function M.undo(what, id, opts)
  opts = opts or {}
  local c = client.current()
  if not c then
    return nil
  end
  local root = c.root_dir or client.root_of(0)
  local on_conflict = opts.on_conflict or opts.onConflict or ((opts.overwrite and 'overwrite') or nil)
  local params = {}
  if on_conflict and on_conflict ~= '' then
    params.onConflict = on_conflict
  end
  if opts.dry_run or opts.dryRun then
    params.dryRun = true
  end
  local raw, err = request(what, id, params)
  if not raw then
    notify(('agentd: %s: %s'):format(what == 'run' and 'undo' or 'undo-restore', err), vim.log.levels.WARN)
    return nil, err
  end
  local res = normalize(raw)
  -- The run (or undo) this was: every later request and hint names it.
  local target = id
  if what == 'run' and res.runId and res.runId ~= '' then
    target = res.runId
  elseif what == 'restore' and type(res.undid) == 'string' and res.undid ~= '' then
    target = res.undid
  end
  if params.dryRun then
    return res, raw
  end
  if res.applied or #res.conflicts == 0 then
    report(root, what, res)
    return res, raw
  end
  -- Refused: nothing was written. The user decides.
  if opts.ask == false then
    notify(hint(root, what, target, res.conflicts), vim.log.levels.WARN, { whole = true })
    return res, raw
  end
  local files = names(root, res.conflicts)
  local text = {
    keep = ('Undo the rest of %s, keep %s as you have it'):format(subject(what, target), files),
    overwrite = ('Overwrite %s too (a safety snapshot keeps it; :Agent undo-restore brings it back)'):format(files),
    diff = 'Show the conflicts as a diff (nothing changes)',
    cancel = 'Cancel (nothing changes)',
  }
  vim.ui.select(choices, {
    prompt = ('agentd: the undo of %s conflicts with your edits in %s'):format(subject(what, target), files),
    kind = 'agentd.undo_conflict',
    format_item = function(it)
      return text[it.choice]
    end,
  }, function(it)
    local choice = it and it.choice or 'cancel'
    if choice == 'keep' or choice == 'overwrite' then
      M.undo(what, target, { on_conflict = choice, ask = false })
    elseif choice == 'diff' then
      show_diff(root, what, target, res.conflicts)
      notify(('agentd: nothing undone yet; %s or %s'):format(cmdline(what, target, 'keep'), cmdline(what, target, 'overwrite')), vim.log.levels.INFO)
    else
      notify(hint(root, what, target, res.conflicts), vim.log.levels.WARN, { whole = true })
    end
  end)
  return res, raw
end

--- :Agent undo [RUN] [keep|overwrite] and :Agent undo-restore [ID]
--- [keep|overwrite]; bang means overwrite.
function M.command(what, args, bang)
  local id, choice
  for _, w in ipairs(args) do
    if w == 'keep' or w == 'overwrite' then
      choice = w
    elseif not id then
      id = w
    else
      notify(('agentd: :Agent %s [id] [keep|overwrite]: unexpected %q'):format(what == 'run' and 'undo' or 'undo-restore', w), vim.log.levels.ERROR)
      return
    end
  end
  if bang then
    if choice == 'keep' then
      notify('agentd: ! means overwrite; it cannot go with keep', vim.log.levels.ERROR)
      return
    end
    choice = 'overwrite'
  end
  return M.undo(what, id, { on_conflict = choice })
end

return M
