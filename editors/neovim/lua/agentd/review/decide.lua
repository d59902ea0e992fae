-- Decisions: accept and reject (agentd/changes/resolve) and re-propose
-- (agentd/changes/repropose), at the cursor, for a file, a step or every
-- open set, following the client recipe of docs/protocol.md.
local client = require('agentd.client')
local S = require('agentd.review.store')
local draw = require('agentd.review.draw')
local files = require('agentd.review.files')
local sync = require('agentd.review.sync')
local nav = require('agentd.review.nav')

local api = vim.api
local notify = S.notify
local is_open, buf_uri, files_for_uri = S.is_open, S.buf_uri, S.files_for_uri
local is_whole, whole_units, reload_unshown = files.is_whole, files.whole_units, files.reload_unshown
local hunk_at_cursor, file_of_hunk, draw_set = draw.hunk_at_cursor, draw.file_of_hunk, draw.draw_set

local M = {}
local model_driven = S.reason_to_model

--- Why a refusal means the change moved under the user (the client
--- recipe of docs/protocol.md): a hunk id the server no longer has
--- (-32602 on a hunkId), a set that is gone (-32003), a unit another
--- agentd process decided since (-32005). nil for any other error.
local function went_stale(e)
  if not e then
    return nil
  end
  if e.code == -32602 and type(e.data) == 'table' and tostring(e.data.field or ''):match('hunkId$') then
    return 'its hunk changed since it was drawn'
  elseif e.code == -32003 then
    return 'it is gone from the server'
  elseif e.code == -32005 then
    return 'it was decided in another agentd process since'
  end
end

--- Sends decisions (grouped by change set, oldest set first) and applies
--- the answers. A decision the server refuses because the change moved
--- under the user is not guessed again: the set is fetched and redrawn,
--- and the user is told to decide again. Returns the list of results.
local function resolve(groups, action, reason)
  local c = client.current()
  if not c then
    return nil
  end
  if vim.b.agentd_unit then
    -- Decided from a preview: it has done its work.
    pcall(api.nvim_win_close, 0, true)
  end
  local results = {}
  local touched = {}
  local redrawn = {}
  for _, change_id in ipairs(groups.order) do
    local decisions = groups[change_id]
    local params = { changeId = change_id, decisions = decisions }
    if reason and reason ~= '' then
      params.reason = reason
    end
    local res, err, e = client.request_sync(c, 'agentd/changes/resolve', params)
    local why = err and went_stale(e)
    if why then
      sync.refetch(c, change_id, e.code == -32003)
      redrawn[#redrawn + 1] = ('agentd: the change was redrawn as the server has it now (%s): decide again'):format(why)
    elseif err then
      notify('agentd: ' .. action .. ' failed: ' .. err, vim.log.levels.ERROR, { whole = true })
    else
      results[#results + 1] = res
      -- The answer to the key just pressed: every file, in full (one
      -- line each), not the first one cut to the command line.
      local lines = {}
      for _, cf in ipairs(res.conflicts or {}) do
        lines[#lines + 1] = ('agentd: %s: %s'):format(vim.fn.fnamemodify(vim.uri_to_fname(cf.uri), ':~:.'), cf.message)
      end
      if #lines > 0 then
        notify(table.concat(lines, '\n'), vim.log.levels.WARN, { whole = true })
      end
      if not S.sets[change_id] then
        -- A set decided before the plugin drew it: now it holds it too.
        sync.refetch(c, change_id)
      else
        sync.take_server_view(c, change_id)
      end
      local cs = S.sets[change_id]
      if cs then
        touched[#touched + 1] = cs
        -- The files the decisions covered (a decision without uri: every
        -- file of the set).
        local seen = {}
        for _, d in ipairs(decisions) do
          for _, f in ipairs(d.uri and { { uri = d.uri } } or cs.files or {}) do
            if not seen[f.uri] then
              seen[f.uri] = true
              reload_unshown({ uri = f.uri })
            end
          end
        end
      end
    end
  end
  for _, cs in ipairs(touched) do
    draw_set(cs)
  end
  nav.refresh_qf()
  vim.cmd.redrawstatus({ bang = true, mods = { emsg_silent = true } })
  if #redrawn > 0 then
    notify(table.concat(redrawn, '\n'), vim.log.levels.WARN, { whole = true })
  end
  return results
end

-- The chat's change summary decides a file of a turn the same way.
M.resolve = resolve

local function add(groups, change_id, d)
  if not groups[change_id] then
    groups[change_id] = {}
    groups.order[#groups.order + 1] = change_id
  end
  table.insert(groups[change_id], d)
end

--- The sets the server holds with a unit still to decide (pending or
--- stale, by its counts), oldest first, that keep(set) accepts: the
--- server's list, not the plugin's, so a set not drawn yet or decided
--- elsewhere counts as the server has it. nil and a message on error.
local function open_sets(keep)
  local list, err = client.request_sync(client.current(), 'agentd/changes/list', vim.empty_dict())
  if not list then
    return nil, err
  end
  local out = {}
  for _, s in ipairs(list) do
    if s.counts and S.open_units(s.counts) > 0 and keep(s) then
      out[#out + 1] = s
    end
  end
  return out
end

--- Decisions for a scope at the cursor: 'hunk' (the unit the user sees at
--- the cursor, named by its id), 'file', a plan step or 'all'. A file,
--- a step or everything is decided as the client recipe says: one
--- decision per open change set, without a hunk id (with the file's uri
--- for a file), so the server decides which units are still open ("accept
--- all never overrides a rejection, reject all never reverts an
--- acceptance").
local function collect(scope, action)
  local groups = { order = {}, model = {} }
  local bufnr = api.nvim_get_current_buf()
  local function whole_sets(sets, d, where)
    for _, s in ipairs(sets) do
      add(groups, s.id, vim.tbl_extend('force', d, { action = action }))
      groups.model[s.id] = s.reasonToModel == true
    end
    if #groups.order == 0 then
      return nil, 'nothing pending ' .. where
    end
    return groups
  end
  -- A preview window decides the unit it shows.
  local unit = vim.b[bufnr].agentd_unit
  if unit then
    local cs = S.sets[unit.change_id]
    for _, f in ipairs(cs and cs.files or {}) do
      if f.uri == unit.uri then
        if unit.hunk_id and not is_whole(f) then
          for _, h in ipairs(f.hunks or {}) do
            if h.id == unit.hunk_id and is_open(h.status) then
              add(groups, cs.id, { uri = f.uri, hunkId = h.id, action = action })
            end
          end
        elseif is_open(f.status) then
          add(groups, cs.id, { uri = f.uri, action = action })
        end
      end
    end
    if #groups.order == 0 then
      return nil, 'nothing pending in this preview'
    end
    return groups
  end
  -- In the plan buffer, the keys decide the changes of the step on the
  -- cursor's line.
  local plan_id = vim.b[bufnr].agentd_plan
  if plan_id and scope ~= 'all' then
    local step = require('agentd.plan').cursor_step_id(bufnr)
    if not step then
      return nil, 'no step on this line'
    end
    local run_plan = require('agentd.plan').run_plan
    local sets, err = open_sets(function(s)
      return s.stepId == step and (not s.runId or run_plan[s.runId] == nil or run_plan[s.runId] == plan_id)
    end)
    if not sets then
      return nil, err
    end
    return whole_sets(sets, {}, 'for step ' .. step)
  end
  local uri = buf_uri(bufnr)
  if scope == 'hunk' then
    local h = hunk_at_cursor(bufnr)
    if not h then
      local w = uri and whole_units(uri)[1]
      if w then
        add(groups, w.set.id, { uri = w.file.uri, action = action })
        return groups
      end
      return nil, 'no hunk at the cursor (:Agent next finds the next one)'
    end
    if h.status == 'stale' and action == 'accept' then
      return nil, 'this hunk is stale: the file was edited where it applies, so it cannot be accepted. :Agent repropose recomputes it against your text, or reject it.'
    end
    local f = file_of_hunk(S.sets[h.change_id], h.id)
    if f and is_whole(f) then
      add(groups, h.change_id, { uri = uri, action = action })
    else
      add(groups, h.change_id, { uri = uri, hunkId = h.id, action = action })
    end
    return groups
  end
  if scope == 'file' then
    if not uri then
      return nil, 'this buffer is not a file'
    end
    local sets, err = open_sets(function(s)
      for _, f in ipairs(s.files or {}) do
        if f.uri == uri and f.counts and S.open_units(f.counts) > 0 then
          return true
        end
      end
      return false
    end)
    if not sets then
      return nil, err
    end
    return whole_sets(sets, { uri = uri }, 'in this file')
  elseif scope == 'all' then
    local sets, err = open_sets(function()
      return true
    end)
    if not sets then
      return nil, err
    end
    return whole_sets(sets, {}, 'anywhere')
  end
  return nil, ("scope must be 'hunk', 'file' or 'all', not %s"):format(vim.inspect(scope))
end

function M.accept(scope)
  local groups, err = collect(scope or 'hunk', 'accept')
  if not groups then
    notify('agentd: ' .. err, vim.log.levels.WARN)
    return nil
  end
  return resolve(groups, 'accept')
end

function M.reject(scope, reason)
  scope = scope or 'hunk'
  local groups, err = collect(scope, 'reject')
  if not groups then
    notify('agentd: ' .. err, vim.log.levels.WARN)
    return nil
  end
  if reason == nil and scope ~= 'hunk' then
    for _, id in ipairs(groups.order) do
      if groups.model[id] or model_driven(id) then
        reason = vim.fn.input('agentd: why reject? (sent to the model; empty for no reason) ')
        break
      end
    end
  end
  return resolve(groups, 'reject', reason)
end

--- :Agent repropose: the stale (or, with a scope, all undecided) changes
--- recomputed by the server against the file's current text
--- (agentd/changes/repropose); the new set replaces the old one.
function M.repropose(scope)
  scope = scope or 'hunk'
  local c = client.current()
  if not c then
    return nil
  end
  local bufnr = api.nvim_get_current_buf()
  local uri = buf_uri(bufnr)
  local asks = {}
  if scope == 'hunk' then
    local h = hunk_at_cursor(bufnr)
    if h then
      asks[1] = { changeId = h.change_id, uri = uri, hunkId = h.id }
    else
      local w = uri and whole_units(uri)[1]
      if w then
        asks[1] = { changeId = w.set.id, uri = uri }
      end
    end
    if not asks[1] then
      notify('agentd: no change at the cursor to re-propose', vim.log.levels.WARN)
      return nil
    end
  elseif scope == 'file' then
    for _, sf in ipairs(uri and files_for_uri(uri) or {}) do
      -- A file with an open unit, by the wire's counts (a partial file
      -- may have none left: the server has nothing to re-propose there).
      if S.open_units(S.file_counts(sf.file)) > 0 then
        asks[#asks + 1] = { changeId = sf.set.id, uri = uri }
      end
    end
  elseif scope == 'all' then
    for _, id in ipairs(S.order) do
      if S.open_units(S.set_counts(S.sets[id])) > 0 then
        asks[#asks + 1] = { changeId = id }
      end
    end
  else
    notify(("agentd: scope must be 'hunk', 'file' or 'all', not %s"):format(vim.inspect(scope)), vim.log.levels.ERROR)
    return nil
  end
  if #asks == 0 then
    notify('agentd: nothing to re-propose ' .. (scope == 'file' and 'in this file' or 'anywhere'), vim.log.levels.WARN)
    return nil
  end
  local out = {}
  for _, p in ipairs(asks) do
    local cs, err, e = client.request_sync(c, 'agentd/changes/repropose', p)
    local why = not cs and went_stale(e)
    if why then
      -- As for a decision: redrawn, never guessed.
      sync.refetch(c, p.changeId, e.code == -32003)
      notify(('agentd: the change was redrawn as the server has it now (%s): re-propose again'):format(why), vim.log.levels.WARN)
    elseif not cs then
      notify('agentd: re-propose failed: ' .. err, vim.log.levels.ERROR)
    else
      sync.put(cs)
      out[#out + 1] = cs
    end
  end
  return out
end


return M
