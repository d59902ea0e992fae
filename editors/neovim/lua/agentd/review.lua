-- Inline review: change sets drawn with extmarks in the real buffer, per
-- hunk accept/reject, the quickfix list, and hunk navigation.
--
-- Positions: a hunk is drawn where the server says it is, then anchored by
-- an extmark so it follows the user's typing until the server's next
-- agentd/changes/didChange (the truth) redraws it.
local config = require('agentd.config')
local client = require('agentd.client')

local M = {}
local function notify(msg, level, opts)
  return require('agentd.notify').notify(msg, level, opts)
end

local api = vim.api
local ns = api.nvim_create_namespace('agentd.review') -- decorations
local ns_anchor = api.nvim_create_namespace('agentd.review.anchor') -- positions (and hints)
M.ns, M.ns_anchor = ns, ns_anchor

M.sets = {} -- [changeId] = ChangeSet (with texts)
M.order = {} -- change ids, oldest first
-- [bufnr] = { [key] = { id = extmark id, change_id, hunk_id, stale } }
local anchors = {}
local mapped = {} -- [bufnr] = true when review keymaps are set
local QF_TITLE = 'agentd review'

local function key(change_id, hunk_id)
  return change_id .. '\0' .. hunk_id
end

local function is_open(status)
  return status == 'pending' or status == 'stale'
end

--- The lines of a hunk's text, for display: a CRLF file's line ends
--- without its carriage return (the buffer, 'fileformat' dos, shows none;
--- a drawn one would be a ^M).
local function split_lines(text)
  local lines = {}
  if not text or text == '' then
    return lines
  end
  local pos, n = 1, #text
  while pos <= n do
    local e = text:find('\n', pos, true)
    if not e then
      lines[#lines + 1] = text:sub(pos)
      break
    end
    local l = text:sub(pos, e - 1)
    if l:sub(-1) == '\r' then
      l = l:sub(1, -2)
    end
    lines[#lines + 1] = l
    pos = e + 1
  end
  return lines
end

M.setup_highlights = config.highlights

--- Files of every known change set for a buffer's URI, in arrival order:
--- { {set = ChangeSet, file = file} }.
local function files_for_uri(uri)
  local out = {}
  for _, id in ipairs(M.order) do
    local cs = M.sets[id]
    if cs then
      for _, f in ipairs(cs.files or {}) do
        if f.uri == uri then
          out[#out + 1] = { set = cs, file = f }
        end
      end
    end
  end
  return out
end

local uri_cache = {} -- buffer name -> URI

local function buf_uri(bufnr)
  local name = api.nvim_buf_get_name(bufnr)
  if name == '' then
    return nil
  end
  local u = uri_cache[name]
  if not u then
    u = vim.uri_from_fname(vim.fs.normalize(name))
    uri_cache[name] = u
  end
  return u
end

--- The loaded buffers by URI (one pass over the buffer list).
local function loaded_by_uri()
  local out = {}
  for _, b in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(b) then
      local u = buf_uri(b)
      if u then
        out[u] = b
      end
    end
  end
  return out
end

--- The buffers shown in a window, on any tab page.
local function displayed()
  local out = {}
  for _, w in ipairs(api.nvim_list_wins()) do
    out[api.nvim_win_get_buf(w)] = true
  end
  return out
end

-- Buffers whose hunks are to be drawn when they are next displayed (or
-- asked about): [bufnr] = { trust = bool }. Drawing waits for a window, as
-- no one sees the extmarks of a hidden buffer; the review data is here.
local later = {}

--- Whether a file is decided as one unit (the server's `whole`: a create,
--- delete, move or binary file). Its hunks, if listed, are for display; its
--- unit id is its path relative to the workspace, and a decision names it
--- by uri.
local function is_whole(f)
  return f.whole == true
end
M.is_whole = is_whole

--- The whole-file units still open for uri.
local function whole_units(uri)
  local out = {}
  for _, sf in ipairs(files_for_uri(uri)) do
    local f = sf.file
    if is_whole(f) and is_open(f.status) then
      out[#out + 1] = sf
    end
  end
  return out
end

--- The proposed text of a whole file (a create's content), from the hunks
--- listed for display.
local function proposed_lines(f)
  local lines = {}
  for _, h in ipairs(f.hunks or {}) do
    vim.list_extend(lines, split_lines(h.newText))
  end
  return lines
end
M.proposed_lines = proposed_lines

--- Where a hunk starts in the buffer when it has no anchor yet (0-based):
--- the server's `at`, where the hunk starts in the file as it is now
--- (decisions do not move the other hunks' ranges; the server says where
--- they are). A server without `at` gets the range of the side the buffer
--- shows.
local function hunk_start(cs, h)
  if h.at then
    return h.at.line
  end
  return (cs.review == 'after' and h.newRange or h.oldRange).start.line
end
M.hunk_start = hunk_start

local columns = 80 -- vim.o.columns, read once per draw: virtual lines are
-- padded to it so their background spans the window

local function pad(chunks, hl)
  local w = 0
  for _, c in ipairs(chunks) do
    local t = c[1]
    w = w + (t:find('[%c\128-\255]') and api.nvim_strwidth(t) or #t)
  end
  local cols = columns
  if w < cols then
    chunks[#chunks + 1] = { string.rep(' ', cols - w), hl }
  end
  return chunks
end

-- Whether the server counts characters in bytes (utf-8, negotiated at
-- initialize: client.offset_encoding); read once per draw.
local utf8 = false

-- A position's character (in the negotiated encoding) -> byte index in
-- line (clamped).
local function byte_of(line, idx)
  if idx <= 0 then
    return 0
  end
  if utf8 then
    return idx < #line and idx or #line
  end
  local ok, b = pcall(vim.str_byteindex, line, idx, true)
  if not ok then
    return #line
  end
  return b
end

--- Virtual lines for `lines`, with word ranges (rel line -> {{s,e}}) marked.
local function virt(lines, words, base_hl, word_hl)
  local out = {}
  for i, l in ipairs(lines) do
    local chunks = {}
    local spans = words[i - 1]
    if spans then
      table.sort(spans, function(a, b)
        return a[1] < b[1]
      end)
      local pos = 0
      for _, sp in ipairs(spans) do
        local s, e = byte_of(l, sp[1]), byte_of(l, sp[2])
        if s > pos then
          chunks[#chunks + 1] = { l:sub(pos + 1, s), base_hl }
        end
        if e > s then
          chunks[#chunks + 1] = { l:sub(s + 1, e), { base_hl, word_hl } }
        end
        pos = math.max(pos, e)
      end
      if pos < #l then
        chunks[#chunks + 1] = { l:sub(pos + 1), base_hl }
      end
    else
      chunks[1] = { l, base_hl }
    end
    out[#out + 1] = pad(chunks, base_hl)
  end
  return out
end

local function words_of(h, kind, start_line)
  local out = {}
  for _, w in ipairs(h.wordDiff or {}) do
    if w.kind == kind then
      local rel = w.range.start.line - start_line
      out[rel] = out[rel] or {}
      table.insert(out[rel], { w.range.start.character, w.range['end'].character })
    end
  end
  return out
end

local function hint_text(h, cs)
  if h.status == 'stale' then
    local r = config.options.keymaps.reject
    return ('stale: the file was edited where this hunk applies; :Agent repropose recomputes it%s'):format(r and (', ' .. r .. ' drops it') or '')
  end
  if config.options.hunk_hint == false then
    return nil
  end
  local km = config.options.keymaps
  local parts = {}
  if km.accept then
    parts[#parts + 1] = km.accept .. ' accept'
  end
  if km.reject then
    parts[#parts + 1] = km.reject .. ' reject'
  end
  if #parts == 0 then
    return nil
  end
  return table.concat(parts, '  ') .. ('  (%s)'):format(cs.stepId or cs.id)
end

--- The changed lines of a hunk (the server's hunks carry context lines):
--- { {sa, ca, sb, cb} } as vim.diff indices, old (a) against new (b).
local function sub_hunks(h)
  if h._subs then
    return h._subs
  end
  local ok, idx = pcall(vim.diff, h.oldText or '', h.newText or '', { result_type = 'indices', algorithm = 'histogram' })
  if not ok or type(idx) ~= 'table' then
    idx = {}
  end
  h._subs = idx
  return idx
end

--- The changed region of a hunk on the buffer's side, as offsets from the
--- hunk's first line: first, last, and whether any buffer line changes.
local function region(h, before)
  local first, last, lines = nil, nil, false
  for _, d in ipairs(sub_hunks(h)) do
    local s, c = d[1], d[2]
    if not before then
      s, c = d[3], d[4]
    end
    local f, l
    if c > 0 then
      f, l, lines = s - 1, s + c - 2, true
    else
      -- Nothing on the buffer's side: the line the other side hangs on.
      f = before and math.max(s - 1, 0) or s
      l = f
    end
    first = first and math.min(first, f) or f
    last = last and math.max(last, l) or l
  end
  return first or 0, last or 0, lines
end

--- Draws one hunk whose first line is buffer row `row` (0-based): the
--- buffer's side of each change highlighted, the other side as virtual
--- lines, changed words from the server's wordDiff. Returns the anchor's
--- extmark id and the region's first offset.
local function draw_hunk(bufnr, cs, f, h, row)
  local marks = {}
  local function mark(r, c, opts)
    marks[#marks + 1] = api.nvim_buf_set_extmark(bufnr, ns, r, c, opts)
  end
  local count = api.nvim_buf_line_count(bufnr)
  local stale = h.status == 'stale'
  local before = cs.review ~= 'after'
  local old_lines, new_lines = split_lines(h.oldText), split_lines(h.newText)
  -- The buffer's lines of the hunk, read once.
  local block, block_start = nil, math.max(0, math.min(row, count - 1))
  local function line_at(r)
    if not block then
      block = api.nvim_buf_get_lines(bufnr, block_start, block_start + #(before and old_lines or new_lines) + 1, false)
    end
    return block[r - block_start + 1] or api.nvim_buf_get_lines(bufnr, r, r + 1, false)[1] or ''
  end
  local buf_hl, buf_word_hl, buf_kind, virt_src, virt_hl, virt_word_hl, virt_kind
  if before then
    buf_hl, buf_word_hl, buf_kind = 'AgentdDelete', 'AgentdDeleteText', 'delete'
    virt_src, virt_hl, virt_word_hl, virt_kind = new_lines, 'AgentdAdd', 'AgentdAddText', 'insert'
  else
    buf_hl, buf_word_hl, buf_kind = 'AgentdAdd', 'AgentdAddText', 'insert'
    virt_src, virt_hl, virt_word_hl, virt_kind = old_lines, 'AgentdDelete', 'AgentdDeleteText', 'delete'
  end
  if stale then
    buf_hl, virt_hl = 'AgentdStale', 'AgentdStale'
  end
  local buf_start = before and h.oldRange.start.line or h.newRange.start.line
  local virt_start = before and h.newRange.start.line or h.oldRange.start.line
  local buf_words = stale and {} or words_of(h, buf_kind, buf_start)
  local all_virt_words = stale and {} or words_of(h, virt_kind, virt_start)
  local function clamp_row(r)
    return math.max(0, math.min(r, count - 1))
  end
  for _, d in ipairs(sub_hunks(h)) do
    local bs, bc, vs, vc = d[1], d[2], d[3], d[4]
    if not before then
      bs, bc, vs, vc = d[3], d[4], d[1], d[2]
    end
    if bc > 0 then
      local r0 = row + bs - 1
      local r1 = r0 + bc - 1
      if r0 < count then
        local last = math.min(r1, count - 1)
        mark(r0, 0, {
          end_row = last + 1 <= count - 1 and last + 1 or last,
          end_col = last + 1 <= count - 1 and 0 or #line_at(last),
          hl_group = buf_hl,
          hl_eol = true,
          priority = 90,
          strict = false,
        })
        for rel = bs - 1, bs + bc - 2 do
          local spans = buf_words[rel]
          local r = row + rel
          if spans and r < count then
            local line = line_at(r)
            for _, sp in ipairs(spans) do
              local s, e = byte_of(line, sp[1]), byte_of(line, sp[2])
              if e > s then
                mark(r, s, { end_col = e, hl_group = buf_word_hl, priority = 95, strict = false })
              end
            end
          end
        end
      end
    end
    if vc > 0 then
      local lines, words = {}, {}
      for i = vs, vs + vc - 1 do
        lines[#lines + 1] = virt_src[i]
        words[#lines - 1] = all_virt_words[i - 1]
      end
      local opts = { virt_lines = virt(lines, words, virt_hl, virt_word_hl) }
      local at
      if before then
        -- What will be added: below the lines it replaces, or below the
        -- line it follows.
        if bc > 0 then
          at = row + bs + bc - 2
        elseif bs > 0 then
          at = row + bs - 1
        else
          at, opts.virt_lines_above = row, true
        end
      else
        -- What was deleted: above the lines that replaced it.
        at, opts.virt_lines_above = row + bs - 1, true
        if bc == 0 then
          at = row + bs
        end
        if at > count - 1 then
          at, opts.virt_lines_above = count - 1, false
        end
      end
      mark(clamp_row(at), 0, opts)
    end
  end
  -- The anchor: the changed region on the buffer's side.
  local first, last, has_lines = region(h, before)
  local r0, r1 = clamp_row(row + first), clamp_row(row + last)
  local anchor_opts = { right_gravity = false }
  if has_lines then
    anchor_opts.end_row = r1
    anchor_opts.end_col = #line_at(r1)
    anchor_opts.end_right_gravity = true
  end
  -- The hint rides on the anchor (one extmark fewer per hunk).
  local hint = hint_text(h, cs)
  if hint then
    anchor_opts.virt_text = { { '  ' .. hint, stale and 'AgentdStale' or 'AgentdHint' } }
    anchor_opts.virt_text_pos = 'eol'
    anchor_opts.hl_mode = 'combine'
  end
  local id = api.nvim_buf_set_extmark(bufnr, ns_anchor, r0, 0, anchor_opts)
  return id, first, has_lines, marks
end

local function anchor_pos(bufnr, id)
  local m = api.nvim_buf_get_extmark_by_id(bufnr, ns_anchor, id, { details = true })
  if not m or not m[1] then
    return nil
  end
  local row, d = m[1], m[3] or {}
  local end_row = d.end_row or row
  return row, end_row
end

local function accept_hunk()
  M.accept('hunk')
end
local function reject_hunk()
  M.reject('hunk')
end
local function accept_file()
  M.accept('file')
end
local function reject_file()
  M.reject('file')
end

local want_maps = {} -- [bufnr] = keymaps on/off, once the buffer is entered
local saved_maps = {} -- [bufnr] = { [lhs] = the user's buffer-local mapping we shadowed }

local function jump_next()
  M.jump(1)
end
local function jump_prev()
  M.jump(-1)
end
local function preview()
  M.preview()
end

--- The review keys: { lhs, callback, description }.
local function review_maps()
  local km = config.options.keymaps
  return {
    { km.accept, accept_hunk, 'agentd: accept the hunk' },
    { km.reject, reject_hunk, 'agentd: reject the hunk' },
    { km.accept_file, accept_file, 'agentd: accept every hunk in the file' },
    { km.reject_file, reject_file, 'agentd: reject every hunk in the file' },
    { km.next_hunk, jump_next, 'agentd: next hunk', true },
    { km.prev_hunk, jump_prev, 'agentd: previous hunk', true },
    { km.preview, preview, 'agentd: preview the change at the cursor' },
  }
end
M.review_maps = review_maps

--- Sets (on) or removes the review keys of a buffer with open hunks. They
--- are buffer-local and only in buffers with something to review: a
--- buffer-local mapping of the user's that one shadows is put back when
--- the hunks are gone; global mappings are never touched. A buffer whose
--- hunks are all decided keeps ]h and [h (mapped = 'nav') while hunks are
--- pending elsewhere, so ]h goes on to the next file as the docs say.
local function set_keymaps(bufnr, on)
  if not api.nvim_buf_is_valid(bufnr) then
    return
  end
  local have = mapped[bufnr]
  local want = on and 'all' or ((have and M.pending_count() > 0) and 'nav' or nil)
  if want == have then
    return
  end
  api.nvim_buf_call(bufnr, function()
    for _, m in ipairs(review_maps()) do
      local lhs = m[1]
      if lhs then
        local should = want == 'all' or (want == 'nav' and m[4] == true)
        local is = have == 'all' or (have == 'nav' and m[4] == true)
        if should and not is then
          local prev = vim.fn.maparg(lhs, 'n', false, true)
          if type(prev) == 'table' and prev.buffer == 1 and not (prev.desc or ''):match('^agentd: ') then
            saved_maps[bufnr] = saved_maps[bufnr] or {}
            saved_maps[bufnr][lhs] = prev
          end
          vim.keymap.set('n', lhs, m[2], { buffer = bufnr, desc = m[3], nowait = true })
        elseif is and not should then
          pcall(vim.keymap.del, 'n', lhs, { buffer = bufnr })
          local prev = (saved_maps[bufnr] or {})[lhs]
          if prev then
            pcall(vim.fn.mapset, 'n', false, prev)
            saved_maps[bufnr][lhs] = nil
          end
        end
      end
    end
  end)
  if not want then
    saved_maps[bufnr] = nil
  end
  mapped[bufnr] = want
end
M.set_keymaps = set_keymaps

local ns_whole = api.nvim_create_namespace('agentd.review.file')

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
  columns = vim.o.columns
  local c = client.get()
  utf8 = c ~= nil and c.offset_encoding == 'utf-8'
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
  -- Whole-file units: a hint on the first line; a create's content below
  -- it (visible at once: virtual lines above line 1 are not), a delete's
  -- lines marked as going.
  api.nvim_buf_clear_namespace(bufnr, ns_whole, 0, -1)
  local wholes = whole_units(uri)
  local count = api.nvim_buf_line_count(bufnr)
  for _, sf in ipairs(wholes) do
    local f, cs = sf.file, sf.set
    local km = config.options.keymaps
    local keys = {}
    for _, k in ipairs({ { km.accept, 'accept' }, { km.reject, 'reject' }, { km.preview, 'preview' } }) do
      if k[1] then
        keys[#keys + 1] = k[1] .. ' ' .. k[2]
      end
    end
    local what = ({
      create = cs.review == 'after' and 'created this file' or ('proposes this new file (%d lines)'):format(#proposed_lines(f)),
      delete = cs.review == 'after' and 'deleted this file' or 'deletes this file',
      move = ('moves %s here'):format(f.oldUri and vim.fn.fnamemodify(vim.uri_to_fname(f.oldUri), ':~:.') or 'a file'),
    })[f.op] or (f.op .. ' (decided as a whole)')
    local opts = {
      virt_text = { { ('  agentd: step %s %s  %s'):format(cs.stepId or cs.id, what, table.concat(keys, '  ')), f.status == 'stale' and 'AgentdStale' or 'AgentdHint' } },
      virt_text_pos = 'eol',
    }
    local empty = count == 1 and (api.nvim_buf_get_lines(bufnr, 0, 1, false)[1] or '') == ''
    if f.op == 'create' and cs.review ~= 'after' and empty then
      local lines = proposed_lines(f)
      if #lines > 0 then
        local vl = {}
        for _, l in ipairs(lines) do
          vl[#vl + 1] = pad({ { l, 'AgentdAdd' } }, 'AgentdAdd')
        end
        opts.virt_lines = vl
      end
    end
    api.nvim_buf_set_extmark(bufnr, ns_whole, 0, 0, opts)
    local mark_all = (f.op == 'delete' and cs.review ~= 'after') and 'AgentdDelete' or ((f.op == 'create' and cs.review == 'after') and 'AgentdAdd' or nil)
    if mark_all and not empty then
      api.nvim_buf_set_extmark(bufnr, ns_whole, 0, 0, { end_row = count - 1, end_col = #(api.nvim_buf_get_lines(bufnr, count - 1, count, false)[1] or ''), hl_group = mark_all, hl_eol = true, priority = 90, strict = false })
    end
  end
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

--- Sets or removes the review keymaps of a buffer the user enters.
function M.on_enter(bufnr)
  local on = want_maps[bufnr]
  if on ~= nil then
    want_maps[bufnr] = nil
    set_keymaps(bufnr, on)
  end
end

--- The decision units of a file: the whole file (id: its uri) when the wire
--- says `whole`, whatever hunks it lists for display, else each hunk.
function M.units(f)
  if is_whole(f) then
    return { { id = f.uri, status = f.status } }
  end
  local out = {}
  for _, h in ipairs(f.hunks or {}) do
    out[#out + 1] = { id = h.id, status = h.status }
  end
  return out
end

--- The file's units by status, as the wire's `counts` says (the server
--- counts them; the plugin never does).
function M.file_counts(f)
  return f.counts
end

--- The set's units by status, as the wire's `counts` says: the server's
--- whole set, never a sum over the files held here (those may be older
--- than the server's view).
function M.set_counts(cs)
  return cs.counts
end

--- Units of a file or set still to decide (pending or stale).
function M.open_units(counts)
  return counts.pending + counts.stale
end

--- Stores a change set (with texts) and draws it.
function M.put(cs)
  if not M.sets[cs.id] then
    M.order[#M.order + 1] = cs.id
  end
  M.sets[cs.id] = cs
  draw_set(cs)
  M.refresh_qf()
  vim.cmd.redrawstatus({ bang = true, mods = { emsg_silent = true } })
end

--- A step proposed a change set (changeProposed, which carries the set:
--- clientFeatures.inlineChanges): store and draw it, and say so.
function M.proposed(cs)
  M.put(cs)
  if config.options.notify_steps then
    local n = M.set_counts(cs).total
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
  local cs = M.sets[p.changeId]
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
  M.refresh_qf()
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

--- The buffer's drawn pending or stale hunks where they are now (1-based
--- lines): the units decided hunk by hunk.
local function drawn_hunks(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  if later[bufnr] or (not anchors[bufnr] and #M.order > 0) then
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

function M.pending_count()
  local n = 0
  for _, id in ipairs(M.order) do
    n = n + M.open_units(M.set_counts(M.sets[id]))
  end
  return n
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

--- Takes the server's view of a change set after a decision: the statuses
--- of its files and hunks (and any file whose hunks changed) come from
--- agentd/changes/get, so the plugin's list is always the server's (no
--- phantom hunk, no unit the plugin believes open while the server
--- decided it). Drawn hunks keep their anchors, which followed the
--- user's typing.
local function sync(c, change_id)
  local fresh = client.request_sync(c, 'agentd/changes/get', { changeId = change_id })
  local cs = M.sets[change_id]
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

--- The loaded buffer of a file a decision changed on disk while the buffer
--- was not shown to the server (a new file opened before it existed): read
--- again when the user has not edited it, so the buffer shows what is on
--- disk; then it is shown to the server. Buffers the server sees get the
--- change themselves (workspace/applyEdit).
local function reload_unshown(f)
  local b = vim.fn.bufnr(vim.uri_to_fname(f.uri))
  if b <= 0 or not api.nvim_buf_is_loaded(b) or vim.bo[b].modified then
    return
  end
  local c = client.get(client.root_of(b))
  if c and vim.lsp.buf_is_attached(b, c.id) then
    return -- the server edits it itself (workspace/applyEdit)
  end
  if vim.uv.fs_stat(vim.uri_to_fname(f.uri)) then
    api.nvim_buf_call(b, function()
      vim.cmd('silent edit!')
    end)
  end
end

--- Sends decisions (grouped by change set) and applies the answers.
--- Returns the list of results.
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
        M.on_did_change({ changeId = change_id, status = fresh.status, files = fresh.files })
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
      sync(c, change_id)
      local cs = M.sets[change_id]
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
  M.refresh_qf()
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
    local cs = M.sets[unit.change_id]
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
    for _, id in ipairs(M.order) do
      local cs = M.sets[id]
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
    local f = file_of_hunk(M.sets[h.change_id], h.id)
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
    for _, id in ipairs(M.order) do
      for _, f in ipairs(M.sets[id].files or {}) do
        each_file({ set = M.sets[id], file = f })
      end
    end
    return finish('anywhere')
  end
  return nil, ("scope must be 'hunk', 'file' or 'all', not %s"):format(vim.inspect(scope))
end

--- Whether a rejection of the change set asks for a reason: the wire's
--- reasonToModel (a model reads it), never guessed from the plan.
local function model_driven(change_id)
  local cs = M.sets[change_id]
  return cs ~= nil and cs.reasonToModel == true
end
M.reason_to_model = model_driven

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

--- Every open unit, in review order: the quickfix items.
function M.items()
  local items = {}
  local bufs = loaded_by_uri()
  for _, id in ipairs(M.order) do
    local cs = M.sets[id]
    for _, f in ipairs(cs.files or {}) do
      local fname = vim.uri_to_fname(f.uri)
      local b = bufs[f.uri]
      local live = {}
      -- Where a drawn hunk is now; a buffer not drawn yet has not moved
      -- since the server placed its hunks.
      if b and anchors[b] and not later[b] then
        for _, h in ipairs(drawn_hunks(b)) do
          live[h.change_id .. '\0' .. h.id] = h.lnum
        end
      end
      if is_whole(f) then
        if is_open(f.status) then
          local detail = f.op == 'create' and (' (%d lines)'):format(#proposed_lines(f)) or ''
          items[#items + 1] = { filename = fname, lnum = 1, col = 1, text = ('[%s] %s %s%s'):format(cs.stepId or cs.id, f.op, f.status, detail), type = f.status == 'stale' and 'W' or 'I', user_data = { change_id = cs.id, uri = f.uri } }
        end
      else
        for _, h in ipairs(f.hunks) do
          if is_open(h.status) then
            local lnum = live[key(cs.id, h.id)]
            if not lnum then
              lnum = hunk_start(cs, h) + region(h, cs.review ~= 'after') + 1
            end
            -- The changed lines, not the context lines the hunk carries.
            local nold, nnew = 0, 0
            for _, d in ipairs(sub_hunks(h)) do
              nold, nnew = nold + d[2], nnew + d[4]
            end
            local d1 = sub_hunks(h)[1]
            local nl, ol = split_lines(h.newText), split_lines(h.oldText)
            local first = (d1 and (d1[4] > 0 and nl[d1[3]] or ol[d1[1]])) or nl[1] or ol[1] or ''
            items[#items + 1] = {
              filename = fname,
              lnum = lnum,
              col = 1,
              text = ('[%s] %s +%d -%d %s'):format(cs.stepId or cs.id, h.status, nnew, nold, vim.trim(first)),
              type = h.status == 'stale' and 'W' or 'I',
              user_data = { change_id = cs.id, hunk_id = h.id },
            }
          end
        end
      end
    end
  end
  table.sort(items, function(a, b)
    if a.filename ~= b.filename then
      return a.filename < b.filename
    end
    return a.lnum < b.lnum
  end)
  return items
end

local qf_id -- the id of agentd's quickfix list, reused by every review

--- The number of agentd's quickfix list in the stack, or nil when it is
--- gone (the stack holds 10 lists; older ones drop out).
local function qf_nr()
  if not qf_id then
    return nil
  end
  local info = vim.fn.getqflist({ id = qf_id, nr = 0 })
  if info.id ~= qf_id or info.nr == 0 then
    return nil
  end
  return info.nr
end

--- Puts items into agentd's one quickfix list: the same list every time
--- (replaced in place and made the current one), made only when there is
--- none yet. make_current: select it (:chistory) when it is not.
local function set_qf(items, make_current)
  local nr = qf_nr()
  if nr then
    vim.fn.setqflist({}, 'r', { id = qf_id, title = QF_TITLE, items = items })
    if make_current and vim.fn.getqflist({ nr = 0 }).nr ~= nr then
      vim.cmd('silent ' .. nr .. 'chistory')
    end
  else
    vim.fn.setqflist({}, ' ', { title = QF_TITLE, items = items })
    qf_id = vim.fn.getqflist({ id = 0 }).id
  end
end

--- Updates agentd's quickfix list, if there is one (never opens a window).
function M.refresh_qf()
  if M.pending_count() == 0 then
    -- Nothing left anywhere: the ]h [h kept in decided buffers go.
    for b, v in pairs(mapped) do
      if v == 'nav' then
        set_keymaps(b, false)
      end
    end
  end
  if qf_nr() then
    vim.fn.setqflist({}, 'r', { id = qf_id, title = QF_TITLE, items = M.items() })
  end
end

--- :Agent review: loads every pending change set and lists its hunks in the
--- quickfix list.
function M.review(open_window)
  local c = client.current()
  if not c then
    return
  end
  local list, err = client.request_sync(c, 'agentd/changes/list', vim.empty_dict())
  if err then
    notify('agentd: ' .. err, vim.log.levels.ERROR)
    return
  end
  for _, s in ipairs(list) do
    -- A set with a unit still to decide, by the wire's counts (its status
    -- may be pending, partial or stale).
    local cs = M.open_units(s.counts) > 0 and client.request_sync(c, 'agentd/changes/get', { changeId = s.id })
    if cs then
      if not M.sets[cs.id] then
        M.order[#M.order + 1] = cs.id
      end
      M.sets[cs.id] = cs
      draw_set(cs)
    end
  end
  local items = M.items()
  set_qf(items, true)
  if #items == 0 then
    notify('agentd: nothing to review', vim.log.levels.INFO)
  elseif open_window ~= false then
    local win = api.nvim_get_current_win()
    vim.cmd('botright copen')
    api.nvim_set_current_win(win)
  end
  return items
end

--- ]h / [h: the next or previous hunk, in this buffer, then across files
--- through the quickfix list.
function M.jump(dir)
  local items = M.items()
  if #items == 0 then
    notify('agentd: no pending hunks', vim.log.levels.INFO)
    return
  end
  if vim.b.agentd_plan and vim.fn.winnr('$') > 1 then
    -- From the plan buffer: open the hunk in the other window, keep the plan.
    vim.cmd('wincmd p')
  end
  local cur = vim.fs.normalize(api.nvim_buf_get_name(0))
  local lnum = api.nvim_win_get_cursor(0)[1]
  local idx
  if dir > 0 then
    for i, it in ipairs(items) do
      if it.filename > cur or (it.filename == cur and it.lnum > lnum) then
        idx = i
        break
      end
    end
    idx = idx or 1
  else
    for i = #items, 1, -1 do
      local it = items[i]
      if it.filename < cur or (it.filename == cur and it.lnum < lnum) then
        idx = i
        break
      end
    end
    idx = idx or #items
  end
  local it = items[idx]
  if it.filename == cur then
    api.nvim_win_set_cursor(0, { it.lnum, 0 })
    return
  end
  set_qf(items, true)
  vim.cmd('silent cc ' .. idx)
  M.draw(api.nvim_get_current_buf())
end

--- The preview of the change at the cursor, in a float the user can
--- scroll (a new file's whole content, with its filetype; a hunk as a
--- diff); the review keys work in it, q closes it.
function M.preview()
  local bufnr = api.nvim_get_current_buf()
  local uri = buf_uri(bufnr)
  local lines, ft, unit, title
  local h = uri and hunk_at_cursor(bufnr)
  local f = h and file_of_hunk(M.sets[h.change_id], h.id)
  if h and f and not (is_whole(f) and f.op ~= 'modify') then
    for _, hh in ipairs(f.hunks) do
      if hh.id == h.id then
        -- The hunk as a diff: context, removed and added lines.
        lines = {}
        local old, new = split_lines(hh.oldText), split_lines(hh.newText)
        local ok, idx = pcall(vim.diff, hh.oldText or '', hh.newText or '', { result_type = 'indices', algorithm = 'histogram' })
        local oi, ni = 1, 1
        for _, d in ipairs(ok and idx or {}) do
          local sa, ca, sb, cb = d[1], d[2], d[3], d[4]
          local upto = ca > 0 and sa or sa + 1
          while oi < upto do
            lines[#lines + 1] = ' ' .. (old[oi] or '')
            oi, ni = oi + 1, ni + 1
          end
          for i = sa, sa + ca - 1 do
            lines[#lines + 1] = '-' .. (old[i] or '')
          end
          for i = sb, sb + cb - 1 do
            lines[#lines + 1] = '+' .. (new[i] or '')
          end
          oi, ni = oi + ca, ni + cb
        end
        while oi <= #old do
          lines[#lines + 1] = ' ' .. old[oi]
          oi = oi + 1
        end
      end
    end
    ft, unit, title = 'diff', { change_id = h.change_id, uri = uri, hunk_id = h.id }, ' hunk of ' .. vim.fn.fnamemodify(vim.uri_to_fname(uri), ':~:.') .. ' '
  else
    local w = uri and whole_units(uri)[1]
    if not w then
      notify('agentd: no change at the cursor to preview', vim.log.levels.WARN)
      return nil
    end
    local fname = vim.uri_to_fname(w.file.uri)
    if w.file.op == 'delete' then
      lines = {}
      for _, hh in ipairs(w.file.hunks or {}) do
        vim.list_extend(lines, split_lines(hh.oldText))
      end
      title = ' deletes ' .. vim.fn.fnamemodify(fname, ':~:.') .. ' '
    else
      lines = proposed_lines(w.file)
      title = (' %s %s (step %s) '):format(w.file.op == 'create' and 'new file' or w.file.op, vim.fn.fnamemodify(fname, ':~:.'), w.set.stepId or w.set.id)
    end
    ft = vim.filetype.match({ filename = fname }) or ''
    unit = { change_id = w.set.id, uri = w.file.uri }
  end
  if #lines == 0 then
    lines = { '' }
  end
  local pb = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(pb, 0, -1, false, lines)
  vim.bo[pb].modifiable = false
  vim.bo[pb].bufhidden = 'wipe'
  vim.bo[pb].filetype = ft
  vim.b[pb].agentd_unit = unit
  local width = math.min(math.max(40, vim.o.columns - 8), 120)
  local height = math.min(#lines, math.max(5, vim.o.lines - 8))
  local km = config.options.keymaps
  local win = api.nvim_open_win(pb, true, {
    relative = 'editor',
    row = math.floor((vim.o.lines - height) / 2) - 1,
    col = math.floor((vim.o.columns - width) / 2),
    width = width,
    height = height,
    border = 'rounded',
    title = title,
    footer = (' %s accept  %s reject  q close '):format(km.accept or ':Agent accept', km.reject or ':Agent reject'),
    footer_pos = 'center',
    style = 'minimal',
  })
  vim.keymap.set('n', 'q', '<cmd>close<cr>', { buffer = pb, nowait = true })
  mapped[pb] = nil
  set_keymaps(pb, true)
  return win, pb
end

--- The daemon of root stopped: its change sets are gone from the editor
--- (they stay in the workspace's state; :Agent review reloads them).
function M.clear_root(root)
  local keep = {}
  for _, id in ipairs(M.order) do
    local cs = M.sets[id]
    local inside = false
    for _, f in ipairs(cs.files or {}) do
      local p = vim.fs.normalize(vim.uri_to_fname(f.uri))
      if not root or p == root or vim.startswith(p, root .. '/') then
        inside = true
      end
    end
    if inside then
      M.sets[id] = nil
    else
      keep[#keep + 1] = id
    end
  end
  M.order = keep
  for b in pairs(anchors) do
    if api.nvim_buf_is_valid(b) then
      M.draw(b)
    end
  end
  for _, b in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(b) and #api.nvim_buf_get_extmarks(b, ns_whole, 0, -1, { limit = 1 }) > 0 then
      M.draw(b)
    end
  end
  M.refresh_qf()
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
      if M.open_units(M.file_counts(sf.file)) > 0 then
        asks[#asks + 1] = { changeId = sf.set.id, uri = uri }
      end
    end
  elseif scope == 'all' then
    for _, id in ipairs(M.order) do
      if M.open_units(M.set_counts(M.sets[id])) > 0 then
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
      M.put(cs)
      out[#out + 1] = cs
    end
  end
  return out
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

return M
