-- Which hunks a buffer shows and where: drawn where the server says,
-- then anchored by extmarks that follow the user's typing until the
-- server's next agentd/changes/didChange redraws them. Hidden buffers are
-- drawn when they are shown.
local client = require('agentd.client')
local S = require('agentd.review.store')
local hunk = require('agentd.review.hunk')
local files = require('agentd.review.files')
local keys = require('agentd.review.keys')

local api = vim.api
local ns, ns_anchor = S.ns, S.ns_anchor
local anchors, mapped, later, want_maps = S.anchors, S.mapped, S.later, S.want_maps
local key, is_open, buf_uri, files_for_uri = S.key, S.is_open, S.buf_uri, S.files_for_uri
local loaded_by_uri, displayed = S.loaded_by_uri, S.displayed
local notify = S.notify
local hunk_start, anchor_pos, draw_hunk = S.hunk_start, hunk.anchor_pos, hunk.draw_hunk
local is_whole, whole_units = files.is_whole, files.whole_units
local set_keymaps = keys.set_keymaps

local M = {}

local function undraw(bufnr, a)
  for _, id in ipairs(a.marks or {}) do
    api.nvim_buf_del_extmark(bufnr, ns, id)
  end
  api.nvim_buf_del_extmark(bufnr, ns_anchor, a.id)
end

--- Draws the open hunks of a buffer. Only what changed is redrawn: a hunk
--- already drawn keeps its extmarks (they moved with the typing), unless
--- its status changed or, with trust_server, the server puts it elsewhere.
function M.draw(bufnr, trust_server)
  local l = later[bufnr]
  later[bufnr] = nil
  if l and l.trust then
    trust_server = true
  end
  if not api.nvim_buf_is_loaded(bufnr) or vim.bo[bufnr].buftype ~= '' then
    return -- not a file: the plan buffer and previews keep their keys
  end
  local uri = buf_uri(bufnr)
  if not uri then
    return
  end
  hunk.begin(client.get())
  local old = anchors[bufnr] or {}
  local want, order = {}, {}
  for _, sf in ipairs(files_for_uri(uri)) do
    local shown_as_file = is_whole(sf.file) and sf.file.op ~= 'modify'
    for _, h in ipairs(shown_as_file and {} or sf.file.hunks or {}) do
      if is_open(h.status) and (not is_whole(sf.file) or is_open(sf.file.status)) then
        local k = key(sf.set.id, h.id)
        if not want[k] then
          want[k] = { set = sf.set, file = sf.file, hunk = h, k = k }
          order[#order + 1] = k
        end
      end
    end
  end
  local new = {}
  for k, a in pairs(old) do
    local w = want[k]
    local r = anchor_pos(bufnr, a.id)
    local keep = w ~= nil and r ~= nil and w.hunk.status == a.status
    if w and r then
      w.row = r - a.first
      if trust_server then
        local srow = hunk_start(w.set, w.hunk)
        if srow ~= w.row then
          keep, w.row = false, srow
        end
      end
    end
    if keep then
      new[k] = a
      w.done = true
    else
      undraw(bufnr, a)
    end
  end
  for _, k in ipairs(order) do
    local w = want[k]
    if not w.done then
      local row = w.row or hunk_start(w.set, w.hunk)
      local ok, id, first, has_lines, marks = pcall(draw_hunk, bufnr, w.set, w.file, w.hunk, row)
      if ok then
        new[k] = { id = id, marks = marks, status = w.hunk.status, change_id = w.set.id, hunk_id = w.hunk.id, first = first, lines = has_lines, uri = uri }
      else
        notify('agentd: could not draw hunk ' .. w.hunk.id .. ': ' .. tostring(id), vim.log.levels.DEBUG)
      end
    end
  end
  local wholes = files.draw_whole(bufnr, uri)
  anchors[bufnr] = new
  -- Keymaps matter in the buffer the user is in: others get theirs when
  -- entered (BufEnter), not one call per key and buffer here.
  local on = next(new) ~= nil or #wholes > 0
  if bufnr == api.nvim_get_current_buf() then
    want_maps[bufnr] = nil
    set_keymaps(bufnr, on)
  elseif on ~= (mapped[bufnr] == 'all') then
    want_maps[bufnr] = on
  end
end

--- Draws the loaded buffers of these URIs: at once those shown in a
--- window or with hunks drawn already (kept right: a resolved hunk's marks
--- go), the others when they are next shown (BufWinEnter) or asked about
--- (hunks()).
local function draw_uris(uris, trust)
  local bufs, shown = loaded_by_uri(), displayed()
  for _, u in ipairs(uris) do
    local b = bufs[u]
    if b then
      if shown[b] or (anchors[b] and next(anchors[b]) and not later[b]) or mapped[b] then
        M.draw(b, trust)
      else
        local l = later[b] or {}
        l.trust = l.trust or trust or false
        later[b] = l
      end
    end
  end
end

local function draw_set(cs)
  local seen, uris = {}, {}
  for _, f in ipairs(cs.files or {}) do
    if not seen[f.uri] then
      seen[f.uri] = true
      uris[#uris + 1] = f.uri
    end
  end
  draw_uris(uris)
end

--- Draws a buffer waiting to be drawn when it is shown in a window.
function M.on_win_enter(bufnr)
  if later[bufnr] then
    M.draw(bufnr)
  end
end

--- The buffer's drawn pending or stale hunks where they are now (1-based
--- lines): the units decided hunk by hunk.
local function drawn_hunks(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  if later[bufnr] or (not anchors[bufnr] and #S.order > 0) then
    M.draw(bufnr) -- hidden, or opened a moment ago: draw now
  end
  local out = {}
  for _, a in pairs(anchors[bufnr] or {}) do
    local row, end_row = anchor_pos(bufnr, a.id)
    local status = a.status
    if row and status and is_open(status) then
      out[#out + 1] = {
        id = a.hunk_id,
        change_id = a.change_id,
        status = status,
        lnum = row + 1,
        end_lnum = a.lines and end_row + 1 or row + 1,
      }
    end
  end
  table.sort(out, function(x, y)
    return x.lnum < y.lnum or (x.lnum == y.lnum and x.id < y.id)
  end)
  return out
end

--- What is to be decided in the buffer: its hunks (drawn_hunks) and, first,
--- the pending or stale creation, deletion or move of its file (a whole
--- unit: `whole = true`, `op`, id its URI, on line 1; a deletion or a move
--- spans the buffer). A whole modify (a binary or mode-only change) lists
--- its hunks when it has some.
function M.hunks(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  local out = drawn_hunks(bufnr)
  local uri = api.nvim_buf_is_valid(bufnr) and buf_uri(bufnr)
  if not uri then
    return out
  end
  local wholes = {}
  for _, sf in ipairs(whole_units(uri)) do
    local f = sf.file
    if f.op ~= 'modify' or #(f.hunks or {}) == 0 then
      local last = (f.op == 'create') and 1 or math.max(1, api.nvim_buf_line_count(bufnr))
      wholes[#wholes + 1] = { id = f.uri, change_id = sf.set.id, status = f.status, lnum = 1, end_lnum = last, whole = true, op = f.op }
    end
  end
  return vim.list_extend(wholes, out)
end

local function hunk_at_cursor(bufnr)
  local lnum = api.nvim_win_get_cursor(0)[1]
  local best
  for _, h in ipairs(drawn_hunks(bufnr)) do
    if lnum >= h.lnum and lnum <= h.end_lnum then
      return h
    end
    -- A hunk drawn as virtual lines only (nothing in the buffer) belongs
    -- to the line it hangs on.
    if not best and h.lnum == lnum then
      best = h
    end
  end
  return best
end

--- The file of a change set that holds hunk_id.
local function file_of_hunk(cs, hunk_id)
  for _, f in ipairs(cs and cs.files or {}) do
    for _, h in ipairs(f.hunks or {}) do
      if h.id == hunk_id then
        return f
      end
    end
  end
end

M.draw_uris, M.draw_set, M.drawn_hunks, M.hunk_at_cursor, M.file_of_hunk = draw_uris, draw_set, drawn_hunks, hunk_at_cursor, file_of_hunk

return M
