-- The chat's `#` variables: what a message names (#buffer, #selection,
-- #file:path, #diagnostics) turned into the request's context, and their
-- insert-mode completion. The words stay in the message as the user wrote
-- them; the context says exactly what they meant.
local M = {}

M.items = { '#buffer', '#selection', '#diagnostics', '#file:' }

--- The selection a message's #selection means: the one given by
--- :'<,'>Agent chat, else the last visual selection ('< and '>) of the
--- buffer the chat was opened from. { uri, range } or nil.
function M.selection(origin, given)
  if given then
    return given
  end
  if not origin or not vim.api.nvim_buf_is_valid(origin) then
    return nil
  end
  local s = vim.api.nvim_buf_get_mark(origin, '<')
  local e = vim.api.nvim_buf_get_mark(origin, '>')
  if s[1] == 0 or e[1] == 0 then
    return nil
  end
  return M.range_selection(origin, s[1], e[1], vim.fn.visualmode() == 'v' and { s[2], e[2] } or nil)
end

--- A selection of lines l1..l2 (1-based) of a buffer; cols { start, end }
--- (0-based bytes, end included) for a characterwise one.
function M.range_selection(buf, l1, l2, cols)
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' then
    return nil
  end
  -- The end on the last selected line (not at the next line's start), so
  -- the range names exactly the lines selected.
  local last = vim.api.nvim_buf_get_lines(buf, l2 - 1, l2, false)[1] or ''
  local range = { start = { line = l1 - 1, character = 0 }, ['end'] = { line = l2 - 1, character = #last } }
  if cols then
    range.start.character = cols[1]
    range['end'].character = math.min(cols[2] + 1, #last)
  end
  return { uri = vim.uri_from_fname(vim.fn.fnamemodify(name, ':p')), range = range }
end

local sev = { 'error', 'warning', 'info', 'hint' }

--- The buffer's vim.diagnostic entries as text for the request.
function M.diagnostics_text(buf, root)
  if not buf or not vim.api.nvim_buf_is_valid(buf) then
    return nil
  end
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':p')
  if root and vim.startswith(name, root .. '/') then
    name = name:sub(#root + 2)
  end
  local lines = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    lines[#lines + 1] = ('%s:%d:%d: %s: %s%s'):format(name, d.lnum + 1, d.col + 1, sev[d.severity] or '?', d.message, d.source and (' (' .. d.source .. ')') or '')
  end
  if #lines == 0 then
    return ('Diagnostics of %s: none.'):format(name)
  end
  return ('Diagnostics of %s:\n%s'):format(name, table.concat(lines, '\n'))
end

--- What a message sends: { text, context, chips }. text is the message
--- with the diagnostics appended; context is plan/create's and chat/ask's
--- { uris, selection } (nil when empty); chips name what was added, or
--- the problem (a #file that does not exist, a #selection with none).
--- env: { origin = buffer the chat is for, root, selection = given one }.
function M.resolve(message, env)
  local uris, seen, chips, problems = {}, {}, {}, {}
  local selection
  local extra = {}
  local function add_uri(u)
    if not seen[u] then
      seen[u] = true
      uris[#uris + 1] = u
    end
  end
  local origin_name = env.origin and vim.api.nvim_buf_is_valid(env.origin) and vim.api.nvim_buf_get_name(env.origin) or ''
  for word in message:gmatch('#[%w_:%./%-~]+') do
    local w = word:gsub('[%.,;:]+$', '')
    if w == '#buffer' then
      if origin_name ~= '' then
        add_uri(vim.uri_from_fname(vim.fn.fnamemodify(origin_name, ':p')))
        chips[#chips + 1] = '#buffer ' .. vim.fn.fnamemodify(origin_name, ':~:.')
      else
        problems[#problems + 1] = '#buffer: the chat was not opened from a file'
      end
    elseif w == '#selection' then
      selection = M.selection(env.origin, env.selection)
      if selection then
        local r = selection.range
        chips[#chips + 1] = ('#selection %s:%d-%d'):format(vim.fn.fnamemodify(vim.uri_to_fname(selection.uri), ':~:.'), r.start.line + 1, r['end'].line + 1)
      else
        problems[#problems + 1] = '#selection: no visual selection yet (select lines, then :\'<,\'>Agent chat)'
      end
    elseif w == '#diagnostics' then
      local t = M.diagnostics_text(env.origin, env.root)
      if t then
        extra[#extra + 1] = t
        chips[#chips + 1] = '#diagnostics'
      end
    elseif vim.startswith(w, '#file:') then
      local p = w:sub(7)
      local full = p:sub(1, 1) == '/' and p or ((env.root or vim.fn.getcwd()) .. '/' .. p)
      if vim.uv.fs_stat(full) then
        add_uri(vim.uri_from_fname(vim.fs.normalize(full)))
        chips[#chips + 1] = '#file ' .. p
      else
        problems[#problems + 1] = ('#file:%s: no such file in the workspace'):format(p)
      end
    end
  end
  local context
  if #uris > 0 or selection then
    context = {}
    if #uris > 0 then
      context.uris = uris
    end
    context.selection = selection
  end
  local text = message
  if #extra > 0 then
    text = text .. '\n\n' .. table.concat(extra, '\n\n')
  end
  return { text = text, context = context, chips = chips, problems = problems }
end

--- The workspace's files, relative to root: git's list (tracked and
--- untracked, without the ignored), else a walk of at most 5000 files.
function M.files(root)
  local r = vim.system({ 'git', 'ls-files', '--cached', '--others', '--exclude-standard' }, { cwd = root, text = true }):wait(5000)
  if r.code == 0 and r.stdout then
    return vim.split(r.stdout, '\n', { trimempty = true })
  end
  local out = {}
  for name, kind in vim.fs.dir(root, { depth = 8, skip = function(d) return d ~= '.git' and d ~= 'node_modules' end }) do
    if kind == 'file' then
      out[#out + 1] = name
      if #out >= 5000 then
        break
      end
    end
  end
  return out
end

--- omnifunc of the chat's input: completes the `#` item before the cursor
--- (#file: completes workspace paths).
function M.omnifunc(findstart, base)
  if findstart == 1 then
    local line = vim.api.nvim_get_current_line():sub(1, vim.api.nvim_win_get_cursor(0)[2])
    local s = line:find('#[%w_:%./%-~]*$')
    return s and (s - 1) or -3
  end
  local out = {}
  if vim.startswith(base, '#file:') then
    local want = base:sub(7)
    for _, f in ipairs(M.files(require('agentd.chat').root())) do
      if vim.startswith(f, want) or (want ~= '' and f:find(want, 1, true)) then
        out[#out + 1] = { word = '#file:' .. f, menu = 'file' }
      end
      if #out >= 200 then
        break
      end
    end
    return out
  end
  local what = { ['#buffer'] = 'the current buffer', ['#selection'] = 'the last visual selection', ['#diagnostics'] = "the buffer's diagnostics", ['#file:'] = 'a file of the workspace' }
  for _, it in ipairs(M.items) do
    if vim.startswith(it, base) then
      out[#out + 1] = { word = it, menu = what[it] }
    end
  end
  return out
end

return M
