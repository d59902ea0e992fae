-- The plugin's change sets kept as the server's: stored when proposed,
-- replaced from agentd/changes/didChange and after each decision
-- (agentd/changes/get), buffers read again when another process wrote
-- their files, forgotten when the daemon stops.
local config = require('agentd.config')
local client = require('agentd.client')
local S = require('agentd.review.store')
local draw = require('agentd.review.draw')
local nav = require('agentd.review.nav')

local api = vim.api
local ns, ns_anchor, ns_whole = S.ns, S.ns_anchor, S.ns_whole
local anchors, mapped, later, want_maps, saved_maps = S.anchors, S.mapped, S.later, S.want_maps, S.saved_maps
local notify = S.notify
local draw_set, draw_uris = draw.draw_set, draw.draw_uris

local M = {}

--- Stores a change set (with texts) and draws it.
function M.put(cs)
  if not S.sets[cs.id] then
    S.order[#S.order + 1] = cs.id
  end
  S.sets[cs.id] = cs
  draw_set(cs)
  nav.refresh_qf()
  vim.cmd.redrawstatus({ bang = true, mods = { emsg_silent = true } })
end

--- A step proposed a change set (changeProposed, which carries the set:
--- clientFeatures.inlineChanges): store and draw it, and say so.
function M.proposed(cs)
  M.put(cs)
  if config.options.notify_steps then
    local n = S.set_counts(cs).total
    notify(('agentd: step %s proposes %d change%s in %d file%s (:Agent review)'):format(cs.stepId or '?', n, n == 1 and '' or 's', #cs.files, #cs.files == 1 and '' or 's'), vim.log.levels.INFO)
  end
end

--- Fetches a change set from the server and draws it (asynchronous).
function M.fetch(change_id, c)
  client.request(c, 'agentd/changes/get', { changeId = change_id }, function(err, cs)
    if err then
      notify('agentd: could not get change ' .. change_id .. ': ' .. err, vim.log.levels.WARN)
      return
    end
    M.put(cs)
  end)
end

--- agentd/changes/didChange: the server rebased hunks under the user's
--- typing (new ids and ranges) or made them stale, or another agentd
--- process (agentd review at a terminal) decided some. The notice lists
--- the files that changed; its status and counts are the whole set's.
function M.on_did_change(p)
  local cs = S.sets[p.changeId]
  if not cs then
    M.fetch(p.changeId)
    return
  end
  cs.status = p.status or cs.status
  cs.counts = p.counts
  local uris = {}
  for _, nf in ipairs(p.files or {}) do
    local replaced = false
    for i, f in ipairs(cs.files) do
      if f.uri == nf.uri then
        cs.files[i] = nf
        replaced = true
      end
    end
    if not replaced then
      table.insert(cs.files, nf)
    end
    uris[#uris + 1] = nf.uri
  end
  draw_uris(uris, true)
  nav.refresh_qf()
  -- The notice may come with no keystroke to redraw the statusline.
  vim.cmd.redrawstatus({ bang = true, mods = { emsg_silent = true } })
  if p.version == nil then
    M.reload_from_disk(uris)
  end
end

--- A notice without `version` describes the files on disk, which another
--- agentd process may have written (agentd review at a terminal): their
--- buffers are checked against the disk now rather than at the next focus
--- change, as Neovim does for any outside change (:checktime, which
--- reloads an unmodified buffer with 'autoread' and never asks then). A
--- modified buffer, or one without 'autoread', is left to the user.
function M.reload_from_disk(uris)
  vim.schedule(function()
    for _, uri in ipairs(uris) do
      local b = vim.fn.bufnr(vim.uri_to_fname(uri))
      if b > 0 and vim.api.nvim_buf_is_loaded(b) and not vim.bo[b].modified then
        local autoread = vim.api.nvim_buf_call(b, function()
          return vim.o.autoread
        end)
        if autoread then
          vim.cmd.checktime({ args = { tostring(b) }, mods = { emsg_silent = true } })
        end
      end
    end
  end)
end

--- Called after the agent's edit landed in buffers (workspace/applyEdit).
function M.after_agent_edit(_) end

--- Takes the server's view of a change set after a decision: the statuses
--- of its files and hunks (and any file whose hunks changed) come from
--- agentd/changes/get, so the plugin's list is always the server's (no
--- phantom hunk, no unit the plugin believes open while the server
--- decided it). Drawn hunks keep their anchors, which followed the
--- user's typing.
local function sync(c, change_id)
  local fresh = client.request_sync(c, 'agentd/changes/get', { changeId = change_id })
  local cs = S.sets[change_id]
  if not fresh or not cs then
    return
  end
  cs.status = fresh.status or cs.status
  cs.counts, cs.reasonToModel = fresh.counts, fresh.reasonToModel
  local by_uri = {}
  for _, f in ipairs(cs.files) do
    by_uri[f.uri] = f
  end
  local files = {}
  for _, nf in ipairs(fresh.files or {}) do
    local f = by_uri[nf.uri]
    local same = f ~= nil and #(f.hunks or {}) == #(nf.hunks or {})
    if same then
      for i, h in ipairs(f.hunks or {}) do
        if h.id ~= nf.hunks[i].id then
          same = false
        end
      end
    end
    if same then
      f.status, f.whole, f.counts, f.op = nf.status, nf.whole, nf.counts, nf.op
      for i, h in ipairs(f.hunks or {}) do
        -- A decision moves where the others start now (`at`).
        h.status, h.at = nf.hunks[i].status, nf.hunks[i].at
      end
      files[#files + 1] = f
    else
      files[#files + 1] = nf
    end
  end
  cs.files = files
end

--- Takes the server's whole view of a change set after a decision it
--- refused because the change moved under the user (the client recipe of
--- docs/protocol.md): the set fetched again (agentd/changes/get) and
--- redrawn where the server says its hunks are; a set the server no longer
--- has (gone: -32003, or get finds none) is checked against
--- agentd/changes/list and dropped when it is not listed. Synchronous.
function M.refetch(c, change_id, gone)
  local fresh, _, e = nil, nil, nil
  if not gone then
    fresh, _, e = client.request_sync(c, 'agentd/changes/get', { changeId = change_id })
  end
  local uris, seen = {}, {}
  local function note(cs)
    for _, f in ipairs(cs and cs.files or {}) do
      if not seen[f.uri] then
        seen[f.uri] = true
        uris[#uris + 1] = f.uri
      end
    end
  end
  if fresh then
    note(S.sets[change_id])
    note(fresh)
    if not S.sets[change_id] then
      S.order[#S.order + 1] = change_id
    end
    S.sets[change_id] = fresh
  elseif gone or (e and e.code == -32003) then
    local list = client.request_sync(c, 'agentd/changes/list', vim.empty_dict())
    local listed = {}
    for _, s in ipairs(list or {}) do
      listed[s.id] = true
    end
    for i = #S.order, 1, -1 do
      local id = S.order[i]
      if list and not listed[id] then
        note(S.sets[id])
        S.sets[id] = nil
        table.remove(S.order, i)
      end
    end
  end
  draw_uris(uris, true)
  nav.refresh_qf()
  vim.cmd.redrawstatus({ bang = true, mods = { emsg_silent = true } })
end

--- The daemon of root stopped: its change sets are gone from the editor
--- (they stay in the workspace's state; :Agent review reloads them).
function M.clear_root(root)
  local keep = {}
  for _, id in ipairs(S.order) do
    local cs = S.sets[id]
    local inside = false
    for _, f in ipairs(cs.files or {}) do
      local p = vim.fs.normalize(vim.uri_to_fname(f.uri))
      if not root or p == root or vim.startswith(p, root .. '/') then
        inside = true
      end
    end
    if inside then
      S.sets[id] = nil
    else
      keep[#keep + 1] = id
    end
  end
  -- In place: the public module hands out this very table.
  for i = #S.order, 1, -1 do
    S.order[i] = nil
  end
  vim.list_extend(S.order, keep)
  for b in pairs(anchors) do
    if api.nvim_buf_is_valid(b) then
      draw.draw(b)
    end
  end
  for _, b in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(b) and #api.nvim_buf_get_extmarks(b, ns_whole, 0, -1, { limit = 1 }) > 0 then
      draw.draw(b)
    end
  end
  nav.refresh_qf()
end

--- Forgets a buffer's anchors when it is wiped or reloaded.
function M.forget(bufnr)
  if anchors[bufnr] and api.nvim_buf_is_valid(bufnr) then
    api.nvim_buf_clear_namespace(bufnr, ns, 0, -1)
    api.nvim_buf_clear_namespace(bufnr, ns_anchor, 0, -1)
  end
  anchors[bufnr] = nil
  mapped[bufnr] = nil
  later[bufnr] = nil
  want_maps[bufnr] = nil
  saved_maps[bufnr] = nil
end

M.take_server_view = sync

return M
