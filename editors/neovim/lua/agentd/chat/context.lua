-- The chat's `#` variables: what a message names (#buffer, #selection,
-- #file:path, #diagnostics, #diff) turned into the request's context.items
-- (the ContextEntry values VS Code's chips send), their sizes as the daemon
-- counts them (agentd/context/size), and their insert-mode completion. The
-- words stay in the message as the user wrote them; the daemon reads and
-- tells the items.
local M = {}

M.items = { '#buffer', '#selection', '#diagnostics', '#diff', '#file:' }

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

--- The buffer's vim.diagnostic entries as a {text, title} item, worded as
--- VS Code's Problems item: title "Problems of <path>", one a line
--- "path:line:col: severity: message (source)".
function M.diagnostics_item(buf, root)
  if not buf or not vim.api.nvim_buf_is_valid(buf) or vim.api.nvim_buf_get_name(buf) == '' then
    return nil
  end
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':p')
  if root and vim.startswith(name, root .. '/') then
    name = name:sub(#root + 2)
  end
  local lines = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    lines[#lines + 1] = ('%s:%d:%d: %s: %s%s'):format(name, d.lnum + 1, d.col + 1, sev[d.severity] or 'problem', d.message, d.source and (' (' .. d.source .. ')') or '')
  end
  return { title = 'Problems of ' .. name, text = #lines > 0 and table.concat(lines, '\n') or ('no problems in ' .. name) }
end

--- What a message names: { items, chips, problems }. items are
--- context.items' ContextEntry values (what VS Code's chips send), chips
--- their labels in the same order, problems what is known without the
--- daemon (a #selection with none, a #buffer of no file).
--- env: { origin = buffer the chat is for, root, selection = given one }.
function M.items_of(message, env)
  local items, chips, problems, seen = {}, {}, {}, {}
  local function add(key, item, chip)
    if not seen[key] then
      seen[key] = true
      items[#items + 1] = item
      chips[#chips + 1] = chip
    end
  end
  local origin_name = env.origin and vim.api.nvim_buf_is_valid(env.origin) and vim.api.nvim_buf_get_name(env.origin) or ''
  for word in message:gmatch('#[%w_:%./%-~]+') do
    local w = word:gsub('[%.,;:]+$', '')
    if w == '#buffer' then
      if origin_name ~= '' then
        local u = vim.uri_from_fname(vim.fn.fnamemodify(origin_name, ':p'))
        add(u, { uri = u }, '#buffer ' .. vim.fn.fnamemodify(origin_name, ':~:.'))
      else
        problems[#problems + 1] = '#buffer: the chat was not opened from a file'
      end
    elseif w == '#selection' then
      local sel = M.selection(env.origin, env.selection)
      if sel then
        local r = sel.range
        add('sel', { uri = sel.uri, range = sel.range }, ('#selection %s:%d-%d'):format(vim.fn.fnamemodify(vim.uri_to_fname(sel.uri), ':~:.'), r.start.line + 1, r['end'].line + 1))
      else
        problems[#problems + 1] = '#selection: no visual selection yet (select lines, then :\'<,\'>Agent chat)'
      end
    elseif w == '#diagnostics' then
      local it = M.diagnostics_item(env.origin, env.root)
      if it then
        add('diagnostics', it, '#diagnostics')
      else
        problems[#problems + 1] = '#diagnostics: the chat was not opened from a file'
      end
    elseif w == '#diff' then
      add('diff', { kind = 'diff' }, '#diff')
    elseif vim.startswith(w, '#file:') and #w > 6 then
      local p = w:sub(7)
      local full = p:sub(1, 1) == '/' and p or ((env.root or vim.fn.getcwd()) .. '/' .. p)
      local u = vim.uri_from_fname(vim.fs.normalize(full))
      add(u, { uri = u }, '#file ' .. p)
    end
  end
  return { items = items, chips = chips, problems = problems }
end

--- The daemon's sizes of items (agentd/context/size), asked and waited
--- for: its result, or nil and the error's words.
local function size_sync(client, items)
  local res, err = require('agentd.client').request_sync(client, 'agentd/context/size', { items = items })
  return res, err
end

--- What a message sends: { text, context, chips, problems }. text is the
--- user's words as written (the chat records only them); context is
--- plan/create's and chat/ask's { items } (nil when none); chips name the
--- items; problems say why it cannot be sent: known here, or an item the
--- daemon cannot send (its `error` from agentd/context/size, asked when
--- env.client is given, as VS Code asks before sending).
function M.resolve(message, env)
  local r = M.items_of(message, env)
  if #r.items > 0 and #r.problems == 0 and env.client then
    local res, err = size_sync(env.client, r.items)
    if not res then
      r.problems[#r.problems + 1] = 'the context cannot be counted: ' .. tostring(err)
    else
      for i, s in ipairs(res.items or {}) do
        if s.error then
          r.problems[#r.problems + 1] = ('%s: %s'):format(r.chips[i] or s.title, s.error)
        end
      end
    end
  end
  return { text = message, context = #r.items > 0 and { items = r.items } or nil, chips = r.chips, problems = r.problems }
end

--- The sizes line: "#file greet.go 128 tokens · #diff 47 tokens", an item
--- that cannot be sent as "#file nope.txt: <the daemon's reason>".
function M.sizes_text(chips, res)
  local parts = {}
  for i, chip in ipairs(chips) do
    local s = res and res.items and res.items[i] or {}
    if s.error then
      parts[#parts + 1] = ('%s: %s'):format(chip, s.error)
    else
      parts[#parts + 1] = ('%s %s tokens%s'):format(chip, s.tokens or '?', s.note and (' (' .. s.note .. ')') or '')
    end
  end
  return table.concat(parts, ' · ')
end

M.ns = vim.api.nvim_create_namespace('agentd-chat-context')

--- Draws the sizes of what the input names (or clears them), as virtual
--- lines above the input's first line.
function M.draw_sizes(buf, text, bad)
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  if text and text ~= '' then
    -- Below the input's last line: a virtual line above the first line
    -- is not drawn unless the window is scrolled (seen in tmux: the sizes
    -- were counted but never on screen).
    local last = vim.api.nvim_buf_line_count(buf) - 1
    vim.api.nvim_buf_set_extmark(buf, M.ns, last, 0, { virt_lines = { { { text, bad and 'DiagnosticError' or 'Comment' } } } })
  end
  vim.b[buf].agentd_context_sizes = text or ''
end

--- Asks the sizes of what the input names now (agentd/context/size) and
--- draws them when they come; a newer ask supersedes an older one.
function M.update_sizes(buf, client, env)
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local message = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  local r = M.items_of(message, env)
  local gen = (vim.b[buf].agentd_context_gen or 0) + 1
  vim.b[buf].agentd_context_gen = gen
  if #r.items == 0 then
    return M.draw_sizes(buf, #r.problems > 0 and table.concat(r.problems, ' · ') or nil, #r.problems > 0)
  end
  if not client then
    return
  end
  client.request('agentd/context/size', { items = r.items }, function(err, res)
    if not vim.api.nvim_buf_is_valid(buf) or vim.b[buf].agentd_context_gen ~= gen then
      return
    end
    if err then
      return M.draw_sizes(buf, 'context not counted: ' .. (err.message or vim.inspect(err)), true)
    end
    local bad = #r.problems > 0
    for _, s in ipairs(res.items or {}) do
      bad = bad or s.error ~= nil
    end
    local text = M.sizes_text(r.chips, res)
    if #r.problems > 0 then
      text = text .. ' · ' .. table.concat(r.problems, ' · ')
    end
    M.draw_sizes(buf, text, bad)
  end)
end

--- Keeps the input's sizes current: 300 ms after the user stops typing
--- (or the plugin changes it: the input emptied after sending), the sizes
--- of what it names. get() returns the client and the env.
function M.watch(buf, get)
  local timer
  local function later()
    if timer then
      timer:stop()
    end
    timer = vim.defer_fn(function()
      timer = nil
      local client, env = get()
      M.update_sizes(buf, client, env)
    end, 300)
  end
  vim.api.nvim_create_autocmd({ 'TextChanged', 'TextChangedI' }, { buffer = buf, callback = later })
  vim.api.nvim_buf_attach(buf, false, {
    on_lines = function()
      vim.schedule(later)
    end,
  })
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
  local what = { ['#buffer'] = 'the current buffer', ['#selection'] = 'the last visual selection', ['#diagnostics'] = "the buffer's diagnostics", ['#diff'] = "the workspace's changes against HEAD (git diff, read by agentd)", ['#file:'] = 'a file of the workspace' }
  for _, it in ipairs(M.items) do
    if vim.startswith(it, base) then
      out[#out + 1] = { word = it, menu = what[it] }
    end
  end
  return out
end

return M
