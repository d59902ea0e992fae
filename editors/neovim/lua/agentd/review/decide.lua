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
  for _, change_id in ipairs(groups.order) do
    local decisions = groups[change_id]
    local params = { changeId = change_id, decisions = decisions }
    if reason and reason ~= '' then
      params.reason = reason
    end
    local res, err, e = client.request_sync(c, 'agentd/changes/resolve', params)
    if err and e and e.code == -32602 and type(e.data) == 'table' and tostring(e.data.field or ''):match('hunkId$') and not groups.retried then
      -- The server rebased the hunk under the latest typing (new id) before
      -- its notification reached us: take the server's view and try again.
      local fresh = client.request_sync(c, 'agentd/changes/get', { changeId = change_id })
      if fresh then
        sync.on_did_change({ changeId = change_id, status = fresh.status, files = fresh.files })
      end
      return nil, 'retry'
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
      sync.take_server_view(c, change_id)
      local cs = S.sets[change_id]
      if cs then
        touched[#touched + 1] = cs
        local seen = {}
        for _, d in ipairs(decisions) do
          if d.uri and not seen[d.uri] then
            seen[d.uri] = true
            reload_unshown({ uri = d.uri })
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
  return results
end

local function add(groups, change_id, d)
  if not groups[change_id] then
    groups[change_id] = {}
    groups.order[#groups.order + 1] = change_id
  end
  table.insert(groups[change_id], d)
end

--- Decisions for a scope at the cursor: 'hunk', 'file' or 'all'. Only
--- open (pending or stale) units are named, so "reject all" never takes
--- out what was already accepted.
local function collect(scope, action)
  local groups = { order = {} }
  local bufnr = api.nvim_get_current_buf()
  local skipped = 0
  local function each_file(sf)
    local f = sf.file
    if is_whole(f) then
      if f.status == 'pending' or (f.status == 'stale' and action == 'reject') then
        add(groups, sf.set.id, { uri = f.uri, action = action })
      elseif f.status == 'stale' then
        skipped = skipped + 1
      end
      return
    end
    for _, h in ipairs(f.hunks or {}) do
      if h.status == 'pending' or (h.status == 'stale' and action == 'reject') then
        add(groups, sf.set.id, { uri = f.uri, hunkId = h.id, action = action })
      elseif h.status == 'stale' then
        skipped = skipped + 1
      end
    end
  end
  local function finish(where)
    if skipped > 0 then
      notify(('agentd: %d stale change%s left out: they no longer apply (:Agent repropose recomputes them)'):format(skipped, skipped == 1 and '' or 's'), vim.log.levels.WARN)
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
        else
          each_file({ set = cs, file = f })
        end
      end
    end
    return finish('in this preview')
  end
  -- In the plan buffer, the keys decide the changes of the step on the
  -- cursor's line.
  local plan_id = vim.b[bufnr].agentd_plan
  if plan_id and scope ~= 'all' then
    local step = require('agentd.plan').cursor_step_id(bufnr)
    if not step then
      return nil, 'no step on this line'
    end
    for _, id in ipairs(S.order) do
      local cs = S.sets[id]
      if cs.stepId == step and (not cs.runId or require('agentd.plan').run_plan[cs.runId] == nil or require('agentd.plan').run_plan[cs.runId] == plan_id) then
        for _, f in ipairs(cs.files or {}) do
          each_file({ set = cs, file = f })
        end
      end
    end
    return finish('for step ' .. step)
  end
  local uri = buf_uri(bufnr)
  if scope == 'hunk' then
    local h = hunk_at_cursor(bufnr)
    if not h then
      local w = uri and whole_units(uri)[1]
      if w then
        each_file(w)
        return finish('in this file')
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
    for _, sf in ipairs(files_for_uri(uri)) do
      each_file(sf)
    end
    return finish('in this file')
  elseif scope == 'all' then
    for _, id in ipairs(S.order) do
      for _, f in ipairs(S.sets[id].files or {}) do
        each_file({ set = S.sets[id], file = f })
      end
    end
    return finish('anywhere')
  end
  return nil, ("scope must be 'hunk', 'file' or 'all', not %s"):format(vim.inspect(scope))
end

function M.accept(scope)
  local groups, err = collect(scope or 'hunk', 'accept')
  if not groups then
    notify('agentd: ' .. err, vim.log.levels.WARN)
    return nil
  end
  local res, again = resolve(groups, 'accept')
  if again == 'retry' then
    groups, err = collect(scope or 'hunk', 'accept')
    if not groups then
      notify('agentd: ' .. err, vim.log.levels.WARN)
      return nil
    end
    groups.retried = true
    res = resolve(groups, 'accept')
  end
  return res
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
      if model_driven(id) then
        reason = vim.fn.input('agentd: why reject? (sent to the model; empty for no reason) ')
        break
      end
    end
  end
  local res, again = resolve(groups, 'reject', reason)
  if again == 'retry' then
    groups, err = collect(scope, 'reject')
    if not groups then
      notify('agentd: ' .. err, vim.log.levels.WARN)
      return nil
    end
    groups.retried = true
    res = resolve(groups, 'reject', reason)
  end
  return res
end


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
    local cs, err = client.request_sync(c, 'agentd/changes/repropose', p)
    if not cs then
      notify('agentd: re-propose failed: ' .. err, vim.log.levels.ERROR)
    else
      sync.put(cs)
      out[#out + 1] = cs
    end
  end
  return out
end


return M
