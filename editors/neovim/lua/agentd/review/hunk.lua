-- One hunk drawn in a buffer: the buffer's side of each change
-- highlighted, the other side as virtual lines, changed words from the
-- server's wordDiff, and the anchor that follows the user's typing.
local config = require('agentd.config')
local S = require('agentd.review.store')

local api = vim.api
local ns, ns_anchor = S.ns, S.ns_anchor
local split_lines = S.split_lines

local D = {}

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

--- Reads once per draw what the drawing depends on: the window width
--- (virtual lines are padded to it) and the negotiated offset encoding.
function D.begin(c)
  columns = vim.o.columns
  utf8 = c ~= nil and c.offset_encoding == 'utf-8'
end

D.pad, D.sub_hunks, D.region, D.draw_hunk, D.anchor_pos = pad, sub_hunks, region, draw_hunk, anchor_pos

return D
