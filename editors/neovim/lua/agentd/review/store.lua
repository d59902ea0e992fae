-- The review's state (change sets by id, anchors, which buffers wait to
-- be drawn or keyed) and the small questions asked of it: which files of
-- which sets a buffer shows, how many units are open.
local api = vim.api

local S = {}

S.ns = api.nvim_create_namespace('agentd.review') -- decorations
S.ns_anchor = api.nvim_create_namespace('agentd.review.anchor') -- positions (and hints)
S.ns_whole = api.nvim_create_namespace('agentd.review.file') -- whole-file units

S.sets = {} -- [changeId] = ChangeSet (with texts)
S.order = {} -- change ids, oldest first
-- [bufnr] = { [key] = { id = extmark id, change_id, hunk_id, stale } }
S.anchors = {}
S.mapped = {} -- [bufnr] = 'all' or 'nav' when review keymaps are set
-- Buffers whose hunks are to be drawn when they are next displayed (or
-- asked about): [bufnr] = { trust = bool }. Drawing waits for a window, as
-- no one sees the extmarks of a hidden buffer; the review data is here.
S.later = {}
S.want_maps = {} -- [bufnr] = keymaps on/off, once the buffer is entered
S.saved_maps = {} -- [bufnr] = { [lhs] = the user's buffer-local mapping we shadowed }

function S.notify(msg, level, opts)
  return require('agentd.notify').notify(msg, level, opts)
end

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

--- Files of every known change set for a buffer's URI, in arrival order:
--- { {set = ChangeSet, file = file} }.
local function files_for_uri(uri)
  local out = {}
  for _, id in ipairs(S.order) do
    local cs = S.sets[id]
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

--- The decision units of a file: the whole file (id: its uri) when the wire
--- says `whole`, whatever hunks it lists for display, else each hunk.
function S.units(f)
  if f.whole == true then
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
function S.file_counts(f)
  return f.counts
end

--- The set's units by status, as the wire's `counts` says: the server's
--- whole set, never a sum over the files held here (those may be older
--- than the server's view).
function S.set_counts(cs)
  return cs.counts
end

--- Units of a file or set still to decide (pending or stale).
function S.open_units(counts)
  return counts.pending + counts.stale
end
function S.pending_count()
  local n = 0
  for _, id in ipairs(S.order) do
    n = n + S.open_units(S.set_counts(S.sets[id]))
  end
  return n
end

--- Whether a rejection of the change set asks for a reason: the wire's
--- reasonToModel (a model reads it), never guessed from the plan.
function S.reason_to_model(change_id)
  local cs = S.sets[change_id]
  return cs ~= nil and cs.reasonToModel == true
end

S.key, S.is_open, S.split_lines = key, is_open, split_lines
S.files_for_uri, S.buf_uri, S.loaded_by_uri, S.displayed = files_for_uri, buf_uri, loaded_by_uri, displayed
S.hunk_start = hunk_start

return S
