local H = require('helpers')
local C = {}

local function numbered(n)
  local t = {}
  for i = 1, n do
    t[#t + 1] = 'line ' .. i
  end
  return table.concat(t, '\n') .. '\n'
end
C.numbered = numbered

--- A plan with one edit_file step on path with the given edits.
local function edit_plan(path, edits, extra)
  local steps = { { id = 'edit', description = 'edit ' .. path, tool = 'edit_file', args = { path = path, edits = edits } } }
  for _, s in ipairs(extra or {}) do
    steps[#steps + 1] = s
  end
  return H.plan({ title = 'edit ' .. path, steps = steps })
end
C._edit_plan = edit_plan


local function ext_details(b, ns)
  return vim.api.nvim_buf_get_extmarks(b, ns, 0, -1, { details = true })
end

local function virt_text_of(vl)
  local t = {}
  for _, chunk in ipairs(vl) do
    t[#t + 1] = chunk[1]
  end
  return vim.trim(table.concat(t))
end

-- The standard change: line 3 rewritten, a line added after line 15.
local two_edits = { { oldText = 'line 3\n', newText = 'line three\n' }, { oldText = 'line 15\n', newText = 'line 15\nline 15b\n' } }

local function start_two(opts)
  H.workspace({ ['a.txt'] = numbered(20) })
  H.setup(opts)
  local b = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(edit_plan('a.txt', two_edits)))
  vim.cmd.buffer(b)
  local rid, snap = a.run({ plan_id = pid })
  H.truthy(rid, 'run id')
  local hs = H.wait_hunks(b, 2)
  return b, hs, rid, snap, pid
end
C._start_two = start_two

-- Open a plan and run it: the plan buffer shows every step and its status
-- sign updates live.
function C.plan_open_and_run()
  local root = H.workspace({ ['a.txt'] = 'alpha\n', ['b.txt'] = 'beta\n' })
  H.setup()
  H.open('a.txt')
  local a = require('agentd')
  local path = H.plan({ title = 'read two', steps = {
    { id = 'one', description = 'read a', tool = 'read_file', args = { path = 'a.txt' } },
    { id = 'two', description = 'read b', tool = 'read_file', args = { path = 'b.txt' }, dependsOn = { 'one' } },
  } })
  local progress = {}
  vim.api.nvim_create_autocmd('LspProgress', {
    callback = function(ev)
      progress[#progress + 1] = ev.data.params.value.kind
    end,
  })
  vim.cmd('Agent open ' .. vim.fn.fnameescape(path))
  local pid = require('agentd.state').last_plan
  H.truthy(pid and pid:match('^plan%-'), 'a plan id, got ' .. tostring(pid))
  local pb = vim.api.nvim_get_current_buf()
  H.eq(require('agentd.plan').bufnr(pid), pb, 'the plan buffer is shown')
  local lines = H.lines(pb)
  H.truthy(lines[2]:match('^one%s+read_file%s+read a'), 'step line: ' .. lines[2])
  H.truthy(lines[3]:match('^two%s+read_file%s+read b%s+← one'), 'dependencies shown: ' .. lines[3])
  local marks = ext_details(pb, require('agentd.plan').ns)
  H.eq('· ', marks[1][4].sign_text, 'pending sign before the run')
  vim.cmd('Agent run')
  local st = H.wait_run()
  H.eq('completed', st.status, 'run status')
  H.wait(function()
    local m = ext_details(pb, require('agentd.plan').ns)
    return m[1][4].sign_text == '✓ ' and m[2][4].sign_text == '✓ '
  end, 'completed signs on both steps')
  H.eq(1, st.progress, 'progress')
  H.wait(function() return vim.tbl_contains(progress, 'end') end, 'LspProgress to end')
  H.eq('begin', progress[1], 'LspProgress began')
  H.truthy(a.statusline():match('^agentd: completed'), 'statusline: ' .. a.statusline())
  H.eq('alpha\n', H.read(root .. '/a.txt'), 'a.txt untouched')
end

-- The rendered extmarks of a pending change: deleted text highlighted in
-- the buffer, added lines as virtual lines, changed words, hunk hints.
function C.render_pending_change()
  local wins = #vim.api.nvim_list_wins()
  local b, hs = start_two()
  H.eq(wins, #vim.api.nvim_list_wins(), 'a proposed change opens no window')
  H.eq(b, vim.api.nvim_get_current_buf(), 'and does not move the focus')
  H.eq({ 3, 3 }, { hs[1].lnum, hs[1].end_lnum }, 'first hunk on line 3')
  H.eq({ 15, 15 }, { hs[2].lnum, hs[2].end_lnum }, 'second hunk hangs on line 15')
  local review = require('agentd.review')
  local marks = vim.list_extend(ext_details(b, review.ns), ext_details(b, review.ns_anchor))
  local del_line, word, virt3, virt15, hints = false, nil, nil, nil, {}
  for _, m in ipairs(marks) do
    local row, col, d = m[2], m[3], m[4]
    if d.hl_group == 'AgentdDelete' and row == 2 then
      del_line = true
    end
    if d.hl_group == 'AgentdDeleteText' and row == 2 then
      word = vim.api.nvim_buf_get_text(b, row, col, d.end_row, d.end_col, {})[1]
    end
    if d.virt_lines then
      local texts = vim.tbl_map(virt_text_of, d.virt_lines)
      if row == 2 then
        virt3 = { texts = texts, words = d.virt_lines[1] }
      elseif row == 14 then
        virt15 = texts
      end
    end
    if d.virt_text then
      hints[row] = d.virt_text[1][1]
    end
  end
  H.truthy(del_line, 'line 3 highlighted as replaced')
  H.eq('3', word, 'the changed word of line 3')
  H.eq({ 'line three' }, virt3.texts, 'the new line 3 as a virtual line')
  local hl_three
  for _, chunk in ipairs(virt3.words) do
    if chunk[1] == 'three' then
      hl_three = chunk[2]
    end
  end
  H.eq({ 'AgentdAdd', 'AgentdAddText' }, hl_three, 'the new word highlighted')
  H.eq({ 'line 15b' }, virt15, 'the added line below line 15')
  H.truthy(hints[2] and hints[2]:match('ga accept  gr reject'), 'hint on line 3: ' .. tostring(hints[2]))
  H.truthy(hints[14] and hints[14]:match('ga accept'), 'hint on line 15')
  H.eq(numbered(20), H.text(b), 'before mode: the buffer is unchanged')
  H.truthy(require('agentd').statusline():match('2 hunks'), 'statusline counts hunks: ' .. require('agentd').statusline())
end

-- Changed words in lines with multibyte characters: the highlights cover
-- exactly the changed words, in the buffer and in the virtual lines
-- (positions are negotiated in bytes, Neovim's unit).
function C.multibyte_word_diff()
  H.workspace({ ['m.txt'] = 'erste Zeile\ngrüße an die wälder\nletzte Zeile\n' })
  H.setup()
  local b = H.open('m.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(edit_plan('m.txt', { { oldText = 'grüße an die wälder', newText = 'grüße an alle wälder' } })))
  vim.cmd.buffer(b)
  a.run({ plan_id = pid })
  H.wait_hunks(b, 1)
  local c = vim.lsp.get_clients({ name = 'agentd' })[1]
  H.eq('utf-8', c.offset_encoding, 'position encoding agreed with the server')
  local word, virt_word
  for _, m in ipairs(ext_details(b, require('agentd.review').ns)) do
    local row, col, d = m[2], m[3], m[4]
    if d.hl_group == 'AgentdDeleteText' then
      word = vim.api.nvim_buf_get_text(b, row, col, d.end_row, d.end_col, {})[1]
    end
    for _, vl in ipairs(d.virt_lines or {}) do
      for _, chunk in ipairs(vl) do
        if type(chunk[2]) == 'table' and vim.tbl_contains(chunk[2], 'AgentdAddText') then
          virt_word = chunk[1]
        end
      end
    end
  end
  H.eq('die', word, 'the removed word highlighted in the buffer')
  H.eq('alle', virt_word, 'the added word highlighted in the virtual line')
end

-- A change set over a shown buffer and a hidden one: the shown one is drawn
-- when the proposal arrives, the hidden one when it is shown (BufWinEnter),
-- and its review keymaps work there.
function C.hidden_buffer_drawn_when_shown()
  local root = H.workspace({ ['a.txt'] = numbered(20), ['b.txt'] = numbered(20) })
  H.setup()
  local hb = H.open('b.txt')
  local ab = H.open('a.txt') -- b.txt is now loaded but hidden
  local a = require('agentd')
  local patch = '--- a/a.txt\n+++ b/a.txt\n@@ -3,1 +3,1 @@\n-line 3\n+line three\n'
    .. '--- a/b.txt\n+++ b/b.txt\n@@ -5,1 +5,1 @@\n-line 5\n+line five\n'
  local pid = H.truthy(a.open_plan(H.plan({ title = 'two files', steps = { { id = 'p', tool = 'apply_patch', args = { patch = patch } } } })))
  vim.cmd.buffer(ab)
  vim.cmd.only()
  a.run({ plan_id = pid })
  local review = require('agentd.review')
  H.wait(function()
    return #vim.api.nvim_buf_get_extmarks(ab, review.ns_anchor, 0, -1, {}) == 1
  end, 'the shown buffer drawn')
  H.eq(-1, vim.fn.bufwinid(hb), 'b.txt is hidden')
  H.eq(0, #vim.api.nvim_buf_get_extmarks(hb, review.ns_anchor, 0, -1, {}), 'the hidden buffer is not drawn yet')
  local function has_ga(b)
    for _, m in ipairs(vim.api.nvim_buf_get_keymap(b, 'n')) do
      if m.lhs == 'ga' then
        return true
      end
    end
    return false
  end
  H.truthy(has_ga(ab), 'review keymaps in the shown buffer')
  H.eq(false, has_ga(hb), 'no review keymaps in the hidden buffer yet')
  vim.cmd.buffer(hb)
  H.eq(1, #vim.api.nvim_buf_get_extmarks(hb, review.ns_anchor, 0, -1, {}), 'drawn once shown')
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  vim.cmd('normal ga')
  H.wait_hunks(hb, 0, 'the hunk accepted in the buffer shown late')
  H.eq(numbered(20):gsub('line 5\n', 'line five\n'), H.text(hb), 'b.txt after ga')
  vim.cmd.buffer(ab)
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  vim.cmd('normal gr')
  H.wait_hunks(ab, 0)
  H.wait_run()
  vim.cmd('wall')
  H.eq(numbered(20), H.read(root .. '/a.txt'), 'a.txt rejected')
  H.eq(numbered(20):gsub('line 5\n', 'line five\n'), H.read(root .. '/b.txt'), 'b.txt accepted')
end

-- Accept one hunk (ga), reject the other (gr), then check the buffer and
-- the disk.
function C.accept_one_reject_other()
  local b = start_two()
  local root = H.root
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  vim.cmd('normal ga')
  H.wait_hunks(b, 1, 'one hunk left')
  vim.api.nvim_win_set_cursor(0, { 15, 0 })
  vim.cmd('normal gr')
  H.wait_hunks(b, 0, 'no hunks left')
  local want = numbered(20):gsub('line 3\n', 'line three\n')
  H.eq(want, H.text(b), 'buffer after accept + reject')
  H.wait_run()
  vim.cmd('write')
  H.eq(want, H.read(root .. '/a.txt'), 'disk after :write')
end

-- Accept and reject in a file that is not open: :Agent review lists it,
-- jumping there shows the hunks.
function C.review_unopened_file()
  local root = H.workspace({ ['a.txt'] = numbered(20), ['other.txt'] = 'x\n' })
  H.setup()
  local ob = H.open('other.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(edit_plan('a.txt', two_edits)))
  vim.cmd.buffer(ob)
  a.run({ plan_id = pid })
  H.wait(function()
    return require('agentd.review').pending_count() == 2
  end, 'two pending hunks')
  vim.cmd('Agent review')
  local qf = vim.fn.getqflist({ title = 0, items = 0 })
  H.eq('agentd review', qf.title, 'quickfix title')
  H.eq(2, #qf.items, 'two quickfix entries')
  H.eq({ 3, 15 }, { qf.items[1].lnum, qf.items[2].lnum }, 'quickfix lines')
  H.truthy(vim.fn.bufname(qf.items[1].bufnr):match('a%.txt$'), 'quickfix file')
  H.eq('other.txt', vim.fn.expand('%:t'), 'the quickfix list did not take the focus')
  vim.cmd('Agent next')
  H.eq('a.txt', vim.fn.expand('%:t'), ':Agent next jumped to the file')
  H.eq(3, vim.fn.line('.'), 'on the first hunk')
  local b = vim.api.nvim_get_current_buf()
  H.wait_hunks(b, 2, 'hunks drawn in the file opened from the list')
  vim.cmd('normal ]h')
  H.eq(15, vim.fn.line('.'), ']h to the next hunk')
  vim.cmd('normal [h')
  H.eq(3, vim.fn.line('.'), '[h back')
  vim.cmd('Agent accept all')
  H.wait_hunks(b, 0)
  H.wait_run()
  vim.cmd('write')
  H.eq(numbered(20):gsub('line 3\n', 'line three\n'):gsub('line 15\n', 'line 15\nline 15b\n'), H.read(root .. '/a.txt'), 'disk')
end

local function feed(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), 'xt', false)
end

-- Type above a pending hunk: the hunk follows (extmarks, then the server's
-- rebase); accepting it then changes the right line.
function C.type_above_then_accept()
  local b = start_two()
  local old_ids = vim.tbl_map(function(h) return h.id end, require('agentd').hunks(b))
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  feed('Otyped one<Esc>')
  feed('otyped two<Esc>')
  -- At once (extmarks) and after the server's rebase (new hunk ids), the
  -- hunks sit two lines lower.
  local function at(l3, l15)
    local hs = require('agentd').hunks(b)
    return #hs == 2 and hs[1].lnum == l3 and hs[2].lnum == l15
  end
  H.truthy(at(5, 17), 'hunks moved with the typing: ' .. vim.inspect(require('agentd').hunks(b)))
  -- The server's rebase (agentd/changes/didChange) puts them at the same place.
  H.wait(function()
    local review = require('agentd.review')
    local f = review.sets[review.order[1]].files[1]
    -- The first hunk is recomputed (its context holds the typing: a new
    -- id) and drawn where the server says it starts now.
    for _, h in ipairs(f.hunks) do
      if h.id == old_ids[1] then
        return false
      end
    end
    return at(5, 17)
  end, 'the server to rebase the hunks onto the typing')
  H.eq(old_ids[2], require('agentd').hunks(b)[2].id, 'an unchanged hunk keeps its id')
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  vim.cmd('normal ga')
  vim.api.nvim_win_set_cursor(0, { 17, 0 })
  vim.cmd('normal ga')
  H.wait_hunks(b, 0)
  local want = 'typed one\ntyped two\n' .. numbered(20):gsub('line 3\n', 'line three\n'):gsub('line 15\n', 'line 15\nline 15b\n')
  H.eq(want, H.text(b), 'buffer')
  H.wait_run()
  vim.cmd('write')
  H.eq(want, H.read(H.root .. '/a.txt'), 'disk')
end

-- Typing inside a hunk's lines makes it stale: drawn as stale, and ga
-- refuses it.
function C.stale_hunk_cannot_be_accepted()
  local b = start_two()
  local got = H.capture_notify()
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  feed('A edited<Esc>')
  H.wait(function()
    local hs = require('agentd').hunks(b)
    return #hs >= 1 and hs[1].status == 'stale'
  end, 'the first hunk to become stale')
  local stale_hint
  local review = require('agentd.review')
  for _, m in ipairs(vim.list_extend(ext_details(b, review.ns), ext_details(b, review.ns_anchor))) do
    if m[2] == 2 and m[4].virt_text then
      stale_hint = m[4].virt_text[1]
    end
  end
  H.truthy(stale_hint and stale_hint[1]:match('stale') and stale_hint[2] == 'AgentdStale', 'stale hint: ' .. vim.inspect(stale_hint))
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  vim.cmd('normal ga')
  H.truthy(got[#got] and got[#got].msg:match('stale'), 'ga on a stale hunk says why: ' .. vim.inspect(got))
  H.eq('line 3 edited', vim.api.nvim_buf_get_lines(b, 2, 3, false)[1], 'the user text stays')
  vim.cmd('normal gr')
  H.wait(function()
    for _, h in ipairs(require('agentd').hunks(b)) do
      if h.lnum == 3 then
        return false
      end
    end
    return true
  end, 'the stale hunk rejected')
  H.eq('line 3 edited', vim.api.nvim_buf_get_lines(b, 2, 3, false)[1], 'rejecting kept the user text')
end

-- :Agent review lists every set with a unit still to decide, by the
-- wire's counts: a set whose only open units are pending and stale has
-- status "stale" (not "pending" or "partial") and is listed too, when the
-- plugin loads it from the daemon (here after it forgot its sets, as when
-- the daemon it spoke to stopped).
function C.review_lists_stale_set()
  local b = start_two()
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  feed('A edited<Esc>')
  H.wait(function()
    local hs = require('agentd').hunks(b)
    return #hs == 2 and hs[1].status == 'stale'
  end, 'the first hunk to become stale')
  local review = require('agentd.review')
  local id = review.order[1]
  H.eq('stale', review.sets[id].status, 'the set is stale')
  H.eq({ pending = 1, accepted = 0, rejected = 0, stale = 1, total = 2 }, review.set_counts(review.sets[id]), 'the wire counts the set')
  review.clear_root(H.root)
  H.eq(0, review.pending_count(), 'the plugin forgot the set')
  vim.cmd('Agent review')
  local qf = vim.fn.getqflist({ title = 0, items = 0 })
  H.eq(2, #qf.items, ':Agent review lists the stale set: ' .. vim.inspect(qf.items))
  H.eq({ 'W', 'I' }, { qf.items[1].type, qf.items[2].type }, 'the stale hunk, then the pending one')
  H.eq(2, review.pending_count(), 'both units open again')
end

-- :Agent repropose picks the files and sets with an open unit by the
-- wire's counts: once both hunks are decided (one accepted, one rejected:
-- the file and the set are "partial") there is nothing to re-propose, and
-- the plugin says so instead of asking the server for nothing.
function C.repropose_skips_decided_partial()
  local b = start_two()
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  vim.cmd('normal ga')
  H.wait_hunks(b, 1, 'one hunk left')
  vim.api.nvim_win_set_cursor(0, { 15, 0 })
  vim.cmd('normal gr')
  H.wait_hunks(b, 0, 'no hunks left')
  local review = require('agentd.review')
  local cs = review.sets[review.order[1]]
  H.eq('partial', cs.status, 'one accepted, one rejected')
  H.eq(0, review.open_units(review.set_counts(cs)), 'nothing open')
  local got = H.capture_notify()
  for _, scope in ipairs({ 'file', 'all' }) do
    H.eq(nil, review.repropose(scope), scope .. ': nothing re-proposed')
    local last = got[#got]
    H.truthy(last and last.msg:match('nothing to re%-propose') and last.level == vim.log.levels.WARN, scope .. ': says there is nothing: ' .. vim.inspect(got))
  end
end

-- No keystroke is lost: in an interactive Neovim driven through its input
-- queue, type 300 characters one key at a time while hunks are pending,
-- rebased under the typing, and accepted (the applyEdit lands mid-typing).
function C.no_keystroke_lost()
  H.workspace({ ['a.txt'] = numbered(20) })
  local plan = edit_plan('a.txt', two_edits)
  local nv = H.child()
  nv.lua([[
    local bin, state, plan = ...
    require('agentd').setup({ cmd = { bin, 'serve' }, state_dir = state, notify_steps = false })
    vim.cmd.edit('a.txt')
    local b = vim.api.nvim_get_current_buf()
    vim.wait(10000, function()
      local c = vim.lsp.get_clients({ bufnr = b, name = 'agentd' })[1]
      return c ~= nil and c.initialized
    end, 10)
    local a = require('agentd')
    local pid = a.open_plan(plan)
    vim.cmd.buffer(b)
    a.run({ plan_id = pid })
    vim.wait(10000, function() return #a.hunks(b) == 2 end, 10)
    vim.api.nvim_win_set_cursor(0, { 9, 0 })
  ]], H.bin, H.tmp .. '/state', plan)
  H.eq(2, nv.lua('return #require("agentd").hunks(0)'), 'two pending hunks in the child')
  local alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789 .,;:!?-_=+()[]{}'
  local typed = {}
  -- A new line between the two hunks (and their context lines).
  nv.input('o')
  for i = 1, 300 do
    local k = math.random(#alphabet)
    local ch = alphabet:sub(k, k)
    typed[#typed + 1] = ch
    nv.input(ch)
    if i == 120 then
      -- Accept the hunk below while typing: its applyEdit lands between keys.
      nv.lua([[
        local b = vim.api.nvim_get_current_buf()
        local h = require('agentd').hunks(b)[2]
        local c = vim.lsp.get_clients({ name = 'agentd' })[1]
        c.request('agentd/changes/resolve', { changeId = h.change_id, decisions = { { hunkId = h.id, action = 'accept' } } }, function(err, res)
          vim.g.accepted = err == nil and #res.applied == 1; vim.g.res = vim.inspect({err, res, h})
        end, b)
      ]])
    end
    if i % 7 == 0 then
      vim.wait(3)
    end
  end
  nv.input('<Esc>')
  H.wait(function() return type(nv.lua('return vim.g.res')) == 'string' end, 'the answer to the accept during typing')
  local want_line = table.concat(typed)
  H.eq(want_line, nv.lua('return vim.api.nvim_buf_get_lines(0, 9, 10, false)[1]'), 'every typed character, in order')
  -- The accept either landed, or (typing overlapped it) was refused and the
  -- hunk is still there to accept: never reported applied and lost.
  local res = nv.lua('return vim.g.res')
  local landed = nv.lua('return vim.api.nvim_buf_get_lines(0, 16, 17, false)[1]') == 'line 15b'
  H.eq(landed, res:find('applied = { "') ~= nil, 'the accept is in the buffer exactly when the server says applied: ' .. res)
  -- Settle: every open hunk becomes pending again after the typing, then
  -- accept what is left with ga.
  H.wait(function()
    local hs = nv.lua('return require("agentd").hunks(0)')
    if #hs == 0 then
      return true
    end
    for _, h in ipairs(hs) do
      if h.status ~= 'pending' then
        nv.input('<Esc>') -- nothing typed; let the loop run
        return false
      end
    end
    nv.input(hs[1].lnum .. 'Gga')
    return false
  end, 'every hunk accepted; left: ' .. vim.inspect(nv.lua('return require("agentd").hunks(0)')) .. ' after ' .. res)
  local want = numbered(20):gsub('line 3\n', 'line three\n'):gsub('line 9\n', 'line 9\n' .. want_line:gsub('%%', '%%%%') .. '\n'):gsub('line 15\n', 'line 15\nline 15b\n')
  H.eq(want, nv.lua('return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\\n") .. "\\n"'), 'buffer')
  nv.lua('vim.cmd("write")')
  H.eq(want, H.read(H.root .. '/a.txt'), 'disk')
end

-- after mode, a.txt open, the two-edit plan run to its end: the buffer,
-- its two hunks and the plugin's API.
local function after_two_hunks()
  H.workspace({ ['a.txt'] = numbered(20) })
  H.setup({ review = 'after' })
  H.answer_select(function(items) return items[1] end)
  local b = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(edit_plan('a.txt', two_edits)))
  vim.cmd.buffer(b)
  a.run({ plan_id = pid })
  local hs = H.wait_hunks(b, 2)
  H.wait_run()
  return b, hs, a
end

-- after mode: the change is on disk at once; rejecting a hunk takes it out.
function C.after_mode_reject()
  local b, hs = after_two_hunks()
  local all = numbered(20):gsub('line 3\n', 'line three\n'):gsub('line 15\n', 'line 15\nline 15b\n')
  H.eq(all, H.text(b), 'after mode: the buffer holds the change')
  H.eq({ 3, 3, 16, 16 }, { hs[1].lnum, hs[1].end_lnum, hs[2].lnum, hs[2].end_lnum }, 'hunks on the new lines')
  -- Drawn the other way round: added lines highlighted, deleted as virtual lines above.
  local added, deleted_virt = false, nil
  for _, m in ipairs(ext_details(b, require('agentd.review').ns)) do
    if m[4].hl_group == 'AgentdAdd' and m[2] == 15 then
      added = true
    end
    if m[4].virt_lines and m[4].virt_lines_above and m[2] == 2 then
      deleted_virt = virt_text_of(m[4].virt_lines[1])
    end
  end
  H.truthy(added, 'the added line 16 highlighted')
  H.eq('line 3', deleted_virt, 'the deleted line 3 shown above')
  vim.cmd('write')
  H.eq(all, H.read(H.root .. '/a.txt'), 'on disk before the review')
  vim.api.nvim_win_set_cursor(0, { 16, 0 })
  vim.cmd('normal gr')
  H.wait_hunks(b, 1)
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  vim.cmd('normal ga')
  H.wait_hunks(b, 0)
  vim.cmd('write')
  H.eq(numbered(20):gsub('line 3\n', 'line three\n'), H.read(H.root .. '/a.txt'), 'disk after rejecting the added line')
end

-- Issue 35 point 3: after mode writes an open buffer's change to disk at
-- once (no :write), as the docs say, so agentd review at a terminal can
-- take it out again.
function C.after_mode_open_buffer_on_disk_at_once()
  local got = H.capture_notify()
  local b = after_two_hunks()
  local all = numbered(20):gsub('line 3\n', 'line three\n'):gsub('line 15\n', 'line 15\nline 15b\n')
  H.eq(all, H.read(H.root .. '/a.txt'), 'after mode: on disk at once, without :write')
  H.eq(false, vim.bo[b].modified, 'the buffer is saved')
  local ended
  H.wait(function()
    for _, n in ipairs(got) do
      ended = n.msg:find('completed: 1/1', 1, true) and n.msg or ended
    end
    return ended ~= nil
  end, 'the run\'s end to be notified')
  H.eq(nil, ended:find('not on disk', 1, true), 'nothing unsaved to name: ' .. ended)
  local r = vim.system({ H.bin, 'review', '--state-dir', H.tmp .. '/state', '--workspace', H.root },
    { cwd = H.root, text = true, stdin = 's\nn\ny\n' }):wait(30000)
  H.eq(0, r.code, 'agentd review: ' .. (r.stdout or '') .. (r.stderr or ''))
  local want = numbered(20):gsub('line 15\n', 'line 15\nline 15b\n')
  H.eq(want, H.read(H.root .. '/a.txt'), 'the terminal took the first hunk out of the disk')
  H.wait(function() return H.text(b) == want end, 'the buffer to follow the disk: ' .. H.text(b))
end

-- Issue 35 point 3: in before mode a run whose accepted changes are only
-- in unsaved buffers says so at its end, naming the file and how to save,
-- not only "completed: 1/1 steps".
function C.before_mode_run_names_unsaved()
  local got = H.capture_notify()
  local b = start_two()
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  vim.cmd('normal gA')
  H.wait_hunks(b, 0, 'both hunks accepted')
  H.wait_run()
  local msg
  H.wait(function()
    for _, n in ipairs(got) do
      if n.msg:find('completed: 1/1 steps', 1, true) then
        msg = n.msg
      end
    end
    return msg ~= nil
  end, 'the run\'s end to be notified')
  H.truthy(msg:find('a.txt', 1, true) and msg:find('not on disk yet', 1, true) and msg:find(':wa', 1, true),
    'the end names the unsaved file and how to save: ' .. msg)
  H.eq(vim.log.levels.WARN, got[#got].level, 'said as a warning')
  H.truthy(H.read(H.root .. '/a.txt') == numbered(20), 'nothing on disk yet')
end

-- after mode on a file that is not open: the disk changes at once and a
-- rejection takes the hunk out of the disk.
function C.after_mode_reject_unopened()
  H.workspace({ ['a.txt'] = numbered(20), ['o.txt'] = 'o\n' })
  H.setup({ review = 'after' })
  H.answer_select(function(items) return items[1] end)
  local ob = H.open('o.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(edit_plan('a.txt', two_edits)))
  vim.cmd.buffer(ob)
  a.run({ plan_id = pid })
  H.wait_run()
  H.wait(function() return require('agentd.review').pending_count() == 2 end, 'two hunks to review')
  H.eq(numbered(20):gsub('line 3\n', 'line three\n'):gsub('line 15\n', 'line 15\nline 15b\n'), H.read(H.root .. '/a.txt'), 'after mode writes at once')
  vim.cmd('Agent review')
  vim.cmd('Agent next')
  H.eq(3, vim.fn.line('.'), 'on the first hunk')
  vim.cmd('Agent reject')
  H.wait_hunks(0, 1)
  vim.cmd('write')
  H.eq(numbered(20):gsub('line 15\n', 'line 15\nline 15b\n'), H.read(H.root .. '/a.txt'), 'the rejected hunk is out of the disk')
end

local function two_file_plan()
  return H.plan({ title = 'edit two files', steps = {
    { id = 'ea', tool = 'edit_file', args = { path = 'a.txt', edits = { { oldText = 'line 3\n', newText = 'line three\n' } } } },
    { id = 'eb', tool = 'edit_file', args = { path = 'b.txt', edits = { { oldText = 'line 5\n', newText = 'line five\n' } } } },
  } })
end

-- Restore: a clean buffer reloads; a buffer with unsaved edits is reported
-- and left alone.
function C.restore_reloads_and_reports_dirty()
  local root = H.workspace({ ['a.txt'] = numbered(10), ['b.txt'] = numbered(10), ['o.txt'] = 'o\n' })
  H.setup()
  local ob = H.open('o.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(two_file_plan()))
  vim.cmd.buffer(ob)
  local _, snap = a.run({ plan_id = pid })
  H.truthy(snap and snap ~= '', 'the run has a start snapshot')
  H.wait(function() return require('agentd.review').pending_count() == 2 end, 'two hunks')
  vim.cmd('Agent accept all')
  H.wait_run()
  H.eq(numbered(10):gsub('line 3\n', 'line three\n'), H.read(root .. '/a.txt'), 'a.txt changed on disk')
  local ab = H.open('a.txt')
  local bb = H.open('b.txt')
  vim.api.nvim_buf_set_lines(bb, 0, 1, false, { 'my own unsaved edit' })
  local b_text = H.text(bb)
  local got = H.capture_notify()
  local res = H.truthy(a.restore(snap), 'a restore result')
  H.eq(numbered(10), H.text(ab), 'the clean buffer reloaded')
  H.eq(false, vim.bo[ab].modified, 'reloaded buffer is not modified')
  H.eq(numbered(10), H.read(root .. '/a.txt'), 'a.txt restored on disk')
  H.eq(b_text, H.text(bb), 'the buffer with unsaved edits is left alone')
  local reported = false
  for _, cf in ipairs(res.conflicts) do
    if cf.uri == vim.uri_from_fname(root .. '/b.txt') then
      reported = true
    end
  end
  H.truthy(reported, 'b.txt reported as a conflict: ' .. vim.inspect(res.conflicts))
  H.eq(numbered(10):gsub('line 5\n', 'line five\n'), H.read(root .. '/b.txt'), 'and its file left alone on disk')
  H.truthy(got[#got] and got[#got].msg:match('b%.txt'), 'the user is told: ' .. vim.inspect(got))
  -- :Agent undo-restore puts the restore back.
  vim.cmd('Agent undo-restore')
  H.eq(numbered(10):gsub('line 3\n', 'line three\n'), H.read(root .. '/a.txt'), 'undo of the restore')
  H.eq(numbered(10):gsub('line 3\n', 'line three\n'), H.text(ab), 'the buffer reloaded again')
end

-- A run reviewed in an open buffer can be restored: accept every hunk into
-- the buffer, :write, restore the run's start: buffer and disk are the
-- original, with no conflict (the agent's edits are the agent's).
function C.restore_run_reviewed_in_buffer()
  local b, _, _, snap = start_two()
  vim.cmd('Agent accept file')
  H.wait_hunks(b, 0)
  H.wait_run()
  vim.cmd('write')
  local all = numbered(20):gsub('line 3\n', 'line three\n'):gsub('line 15\n', 'line 15\nline 15b\n')
  H.eq(all, H.read(H.root .. '/a.txt'), 'written')
  local res = H.truthy(require('agentd').restore(snap), 'a restore result')
  H.eq({}, res.conflicts, 'no conflict')
  H.eq(numbered(20), H.text(b), 'buffer restored')
  H.eq(numbered(20), H.read(H.root .. '/a.txt'), 'disk restored')
end

-- The same without :write: the agent's edits are only in the buffer.
function C.restore_run_reviewed_unsaved()
  local b, _, _, snap = start_two()
  vim.cmd('Agent accept file')
  H.wait_hunks(b, 0)
  H.wait_run()
  local res = H.truthy(require('agentd').restore(snap), 'a restore result')
  H.eq({}, res.conflicts, 'no conflict')
  H.eq(numbered(20), H.text(b), 'buffer restored')
  H.eq(numbered(20), H.read(H.root .. '/a.txt'), 'disk restored')
end

-- Approvals go through vim.ui.select with the four options; a command
-- shows its command line and folder.
function C.approval_allow_once()
  local root = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  local asked = H.answer_select(function(items)
    for _, it in ipairs(items) do
      if it.kind == 'allow_once' then
        return it
      end
    end
  end)
  local ab = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'cmd', steps = {
    { id = 'hello', tool = 'run_command', args = { command = 'echo hi > out.txt' } },
  } })))
  vim.cmd.buffer(ab)
  a.run({ plan_id = pid })
  local st = H.wait_run()
  H.eq('completed', st.status, 'the approved command ran')
  H.eq(1, #asked, 'asked once')
  local kinds = {}
  for _, o in ipairs(asked[1].items) do
    kinds[#kinds + 1] = o.kind or 'later'
  end
  H.eq({ 'later', 'allow_once', 'allow_always', 'reject_once', 'reject_always' }, kinds, 'the four option kinds, after "Decide later" (high risk)')
  H.truthy(asked[1].opts.prompt:find('echo hi > out.txt', 1, true), 'the prompt shows the command: ' .. asked[1].opts.prompt)
  H.truthy(asked[1].opts.prompt:find('in: ', 1, true), 'and its folder')
  H.eq('hi\n', H.read(root .. '/out.txt'), 'the command ran in the workspace')
end

-- Rejecting once skips the step and nothing runs.
function C.approval_reject_once()
  local root = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  H.answer_select(function(items)
    for _, it in ipairs(items) do
      if it.kind == 'reject_once' then
        return it
      end
    end
  end)
  local ab = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'cmd', steps = {
    { id = 'hello', tool = 'run_command', args = { command = 'echo hi > out.txt' } },
  } })))
  vim.cmd.buffer(ab)
  a.run({ plan_id = pid })
  H.wait_run()
  H.eq(nil, H.read(root .. '/out.txt'), 'the rejected command did not run')
  H.eq('skipped', require('agentd.state').step_status(require('agentd').status().run_id, 'hello'), 'step skipped')
end

-- A missing binary: said once for the files opened, and again every time a
-- command needs the daemon, with the fix, and no stack trace.
function C.missing_binary_message()
  H.workspace({ ['a.txt'] = 'a\n' })
  local got = H.capture_notify()
  require('agentd').setup({ cmd = { '/nonexistent/bin/agentd', 'serve' } })
  vim.cmd.edit('a.txt')
  vim.cmd.edit(vim.fn.fnameescape(H.root .. '/b.txt'))
  local function errors()
    return vim.tbl_filter(function(n) return n.level == vim.log.levels.ERROR end, got)
  end
  H.wait(function() return #errors() >= 1 end, 'the missing binary to be said')
  vim.wait(100)
  H.eq(1, #errors(), 'opening files says it once: ' .. vim.inspect(got))
  vim.cmd('Agent status')
  vim.cmd('Agent review')
  H.eq(2, #errors(), ':Agent review says it again')
  vim.cmd('Agent review')
  vim.cmd('Agent snapshots')
  H.eq(4, #errors(), 'every command that needs the daemon says it: ' .. vim.inspect(got))
  local msg = errors()[4].msg
  H.truthy(msg:find('/nonexistent/bin/agentd', 1, true), 'names the path: ' .. msg)
  H.truthy(msg:find('make build', 1, true), 'says how to build it')
  H.truthy(msg:find("cmd = { '/path/to/agentd', 'serve' }", 1, true), 'says how to set the command: ' .. msg)
  H.truthy(not msg:find('traceback') and not msg:find('%.lua:%d+'), 'no stack trace: ' .. msg)
  H.eq(0, #vim.lsp.get_clients({ name = 'agentd' }), 'no client')
end

-- cmd is the whole command line, as vim.lsp and lspconfig take it:
-- { 'agentd', 'serve' } starts `agentd serve` (not `agentd serve serve`);
-- the old string form still works, with a deprecation note.
function C.cmd_full_argv()
  H.workspace({ ['a.txt'] = 'a\n' })
  local got = H.capture_notify()
  require('agentd').setup({ cmd = { H.bin, 'serve' }, state_dir = H.tmp .. '/state' })
  H.eq({ H.bin, 'serve' }, require('agentd.client').command(), 'the argv as given')
  H.eq(0, #got, 'no note for the current form: ' .. vim.inspect(got))
  local b = H.open('a.txt')
  local c = vim.lsp.get_clients({ bufnr = b, name = 'agentd' })[1]
  H.truthy(c and c.initialized, 'the daemon answered initialize')
  H.stop()
  H.wait(function() return #vim.lsp.get_clients({ name = 'agentd' }) == 0 end, 'the client to stop')
  require('agentd.client')._reset_warning()
  require('agentd').setup({ cmd = H.bin, state_dir = H.tmp .. '/state' })
  H.eq({ H.bin, 'serve' }, require('agentd.client').command(), 'the old string form gets serve')
  local note = got[#got]
  H.truthy(note and note.level == vim.log.levels.WARN and note.msg:find('deprecated', 1, true) and note.msg:find('"serve"', 1, true), 'a deprecation note naming the new form: ' .. vim.inspect(got))
  vim.cmd('bwipeout!')
  b = H.open('a.txt')
  H.truthy(vim.lsp.get_clients({ bufnr = b, name = 'agentd' })[1].initialized, 'the old form still starts the daemon')
end

-- The daemon dies: the plugin says so with the fix, its hunks are no
-- longer drawn, and the next command starts a new daemon.
function C.dead_daemon_reported_and_cleared()
  local b = start_two()
  local got = H.capture_notify()
  -- Kill the daemon the way a crash would (SIGKILL).
  local pid = require('agentd.client').pids[H.root]
  H.truthy(pid, 'the daemon pid')
  vim.uv.kill(pid, 9)
  H.wait(function()
    for _, n in ipairs(got) do
      if n.level == vim.log.levels.ERROR and n.msg:find('stopped', 1, true) then
        return true
      end
    end
  end, 'the death to be reported')
  local msg
  for _, n in ipairs(got) do
    if n.msg:find('stopped', 1, true) then
      msg = n.msg
    end
  end
  H.truthy(msg:find('signal 9', 1, true) and msg:find(':Agent review', 1, true), 'says what happened and what to do: ' .. msg)
  H.eq(0, #require('agentd').hunks(b), 'the dead run\'s hunks are cleared')
  H.eq(0, #vim.api.nvim_buf_get_extmarks(b, require('agentd.review').ns_anchor, 0, -1, {}), 'no extmark left')
  H.eq(0, require('agentd.review').pending_count(), 'nothing pending in the plugin')
  vim.cmd('Agent review')
  H.wait(function()
    local cc = vim.lsp.get_clients({ name = 'agentd' })[1]
    return cc ~= nil and cc.initialized
  end, 'the next command to start a new daemon')
  H.truthy(require('agentd.client').pids[H.root] ~= pid, 'a new daemon')
end

-- :checkhealth agentd reports the binary, protocol, state dir, model and Neovim.
function C.checkhealth()
  H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  vim.cmd('checkhealth agentd')
  local text = table.concat(H.lines(0), '\n')
  H.truthy(text:find('OK Neovim 0%.1%d'), 'Neovim version:\n' .. text)
  H.truthy(text:find('OK ' .. vim.pesc(H.bin) .. ': agentd '), 'binary and its version:\n' .. text)
  H.truthy(text:find('OK protocol version 2'), 'protocol version:\n' .. text)
  H.truthy(text:find('OK state dir ' .. vim.pesc(H.tmp .. '/state')), 'state dir:\n' .. text)
  H.truthy(text:find('WARNING no model is set', 1, true) and text:find('AGENTD_MODEL', 1, true), 'model:\n' .. text)
  -- And a broken setup is reported as an error.
  H.write(H.tmp .. '/afile', 'x')
  require('agentd').setup({ cmd = '/nonexistent/agentd', state_dir = H.tmp .. '/afile/state' })
  vim.cmd('bwipeout!')
  vim.cmd('checkhealth agentd')
  text = table.concat(H.lines(0), '\n')
  H.truthy(text:find('ERROR agentd: cannot find the agentd binary'), 'missing binary:\n' .. text)
  H.truthy(text:find('ERROR state dir ' .. vim.pesc(H.tmp .. '/afile/state')), 'unwritable state dir:\n' .. text)
end

-- :Agent completes its subcommands and their arguments.
function C.command_completion()
  H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  local subs = vim.fn.getcompletion('Agent ', 'cmdline')
  for _, want in ipairs({ 'plan', 'open', 'run', 'pause', 'resume', 'cancel', 'retry', 'skip', 'review', 'accept', 'reject', 'snapshots', 'restore', 'undo', 'undo-restore', 'status', 'log', 'next', 'prev', 'preview', 'repropose', 'approve', 'rules' }) do
    H.truthy(vim.tbl_contains(subs, want), 'completes ' .. want .. ': ' .. vim.inspect(subs))
  end
  H.eq({ 'resume', 'retry', 'review', 'reject', 'restore', 'repropose', 'run', 'rules' }, (function()
    local r = vim.fn.getcompletion('Agent re', 'cmdline')
    local x = vim.fn.getcompletion('Agent ru', 'cmdline')
    local out = vim.list_extend(r, x)
    table.sort(out, function(p, q)
      local order = { resume = 1, retry = 2, review = 3, reject = 4, restore = 5, repropose = 6, run = 7, rules = 8 }
      return order[p] < order[q]
    end)
    return out
  end)(), 'prefix completion')
  H.eq({ 'hunk', 'file', 'all' }, vim.fn.getcompletion('Agent accept ', 'cmdline'), 'accept scopes')
  H.eq({ 'file' }, vim.fn.getcompletion('Agent reject f', 'cmdline'), 'reject scopes')
  H.open('a.txt')
  local a = require('agentd')
  a.open_plan(H.plan({ title = 'p', steps = { { id = 'first', tool = 'read_file', args = { path = 'a.txt' } }, { id = 'second', tool = 'read_file', args = { path = 'a.txt' } } } }))
  H.eq({ 'first', 'second' }, vim.fn.getcompletion('Agent retry ', 'cmdline'), 'step ids')
end

-- The plan buffer's keys: x skips, J moves, dd removes, and a stale version
-- is reloaded rather than overwritten.
function C.plan_buffer_keys()
  H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  H.open('a.txt')
  local a = require('agentd')
  local pid = a.open_plan(H.plan({ title = 'p', steps = {
    { id = 's1', tool = 'read_file', args = { path = 'a.txt' } },
    { id = 's2', tool = 'read_file', args = { path = 'a.txt' } },
    { id = 's3', tool = 'read_file', args = { path = 'a.txt' } },
  } }))
  local pb = vim.api.nvim_get_current_buf()
  local function ids()
    return vim.tbl_map(function(l) return l:match('^(%S+)') end, vim.list_slice(H.lines(pb), 2))
  end
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.cmd('normal x')
  H.truthy(H.lines(pb)[2]:find('(skipped)', 1, true), 'x skips: ' .. H.lines(pb)[2])
  vim.cmd('normal x')
  H.truthy(not H.lines(pb)[2]:find('(skipped)', 1, true), 'x unskips')
  vim.cmd('normal J')
  H.eq({ 's2', 's1', 's3' }, ids(), 'J moves down')
  H.eq(3, vim.fn.line('.'), 'the cursor follows the step')
  vim.cmd('normal K')
  H.eq({ 's1', 's2', 's3' }, ids(), 'K moves up')
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  vim.cmd('normal dd')
  H.eq({ 's1', 's3' }, ids(), 'dd removes')
  -- Someone else edits the plan: our version is stale.
  local c = vim.lsp.get_clients({ name = 'agentd' })[1]
  local plan = require('agentd.plan').plans[pid]
  local r = c.request_sync('agentd/plan/edit', { planId = pid, version = plan.version, edits = { { op = 'skip', stepId = 's3' } } }, 5000)
  H.truthy(r and r.result, 'edited from elsewhere')
  local got = H.capture_notify()
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.cmd('normal dd')
  H.truthy(got[1] and got[1].msg:find('reloaded'), 'stale version reported: ' .. vim.inspect(got))
  H.eq({ 's1', 's3' }, ids(), 'nothing removed on a stale version')
  H.truthy(H.lines(pb)[3]:find('(skipped)', 1, true), 'the other edit is shown after the reload')
  -- e edits the step as JSON; :write sends it back.
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.cmd('normal e')
  local jb = vim.api.nvim_get_current_buf()
  H.truthy(jb ~= pb and vim.bo[jb].filetype == 'json', 'e opens the step as JSON')
  local step = vim.json.decode(table.concat(H.lines(jb), '\n'))
  H.eq('s1', step.id, 'the step under the cursor')
  step.description = 'edited in JSON'
  vim.api.nvim_buf_set_lines(jb, 0, -1, false, { vim.json.encode(step) })
  vim.cmd('write')
  H.eq(pb, vim.api.nvim_get_current_buf(), 'back in the plan buffer')
  H.truthy(H.lines(pb)[2]:find('edited in JSON', 1, true), 'the edit is in the plan: ' .. H.lines(pb)[2])
  -- o adds a step after the cursor's.
  vim.cmd('normal o')
  local nb = vim.api.nvim_get_current_buf()
  local tmpl = vim.json.decode(table.concat(H.lines(nb), '\n'))
  tmpl.id, tmpl.args.path = 'added', 'a.txt'
  vim.api.nvim_buf_set_lines(nb, 0, -1, false, { vim.json.encode(tmpl) })
  vim.cmd('write')
  H.eq({ 's1', 'added', 's3' }, ids(), 'o added a step after s1')
  -- r runs the plan.
  vim.api.nvim_set_current_buf(pb)
  vim.cmd('normal r')
  local st = H.wait_run()
  H.eq('completed', st.status, 'r ran the plan')
  -- An invalid edit shows its problem on the step.
  require('agentd.plan').edit(pid, { { op = 'update', stepId = 's1', step = { id = 's1', tool = 'nope' } } })
  local d = vim.diagnostic.get(pb)
  H.truthy(#d >= 1 and d[1].lnum == 1, 'a diagnostic on the step: ' .. vim.inspect(d))
end

-- doc/agentd.txt: the committed tags are what :helptags generates, :help
-- agentd works, and every command, option, keymap and API function has a tag.
function C.doc_tags()
  local plugin = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
  local dir = H.tmp .. '/doc'
  vim.fn.mkdir(dir, 'p')
  H.write(dir .. '/agentd.txt', H.read(plugin .. '/doc/agentd.txt'))
  vim.cmd('helptags ' .. vim.fn.fnameescape(dir))
  local committed = H.read(plugin .. '/doc/tags')
  H.truthy(committed, 'doc/tags is committed')
  H.eq(H.read(dir .. '/tags'), committed, 'doc/tags is what :helptags generates (run :helptags editors/neovim/doc)')
  vim.opt.rtp:prepend(plugin)
  vim.cmd('help agentd')
  H.eq('agentd.txt', vim.fn.expand('%:t'), ':help agentd opens the doc')
  local tags = {}
  for line in committed:gmatch('[^\n]+') do
    tags[line:match('^([^\t]+)')] = true
  end
  for _, sub in ipairs(require('agentd.commands').names()) do
    H.truthy(tags[':Agent-' .. sub], 'a tag for :Agent ' .. sub)
  end
  for k in pairs(require('agentd.config').defaults) do
    H.truthy(tags['agentd-opt-' .. k], 'a tag for option ' .. k)
  end
  for _, lhs in pairs(require('agentd.config').defaults.keymaps) do
    H.truthy(tags['agentd-' .. lhs], 'a tag for keymap ' .. lhs)
  end
  local a = require('agentd')
  for name, v in pairs(a) do
    if type(v) == 'function' then
      H.truthy(tags['agentd.' .. name .. '()'], 'a tag for agentd.' .. name .. '()')
    end
  end
  local doc = H.read(plugin .. '/doc/agentd.txt')
  for key in pairs(require('agentd.config').defaults.plan_keymaps) do
    H.truthy(doc:find(key .. ' = ', 1, true), 'plan key ' .. key .. ' in the defaults block')
  end
end

-- A command reads the disk: before it runs, the buffer holding accepted but
-- unsaved hunks is saved through the editor (agentd/documents/save); then
-- restoring the run's start still puts the original back.
function C.documents_save_before_command()
  local root = H.workspace({ ['a.txt'] = numbered(20) })
  H.setup()
  H.answer_select(function(items)
    for _, it in ipairs(items) do
      if it.kind == 'allow_once' then
        return it
      end
    end
  end)
  local b = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(edit_plan('a.txt', two_edits, {
    { id = 'copy', tool = 'run_command', args = { command = 'cp a.txt copy.txt' }, dependsOn = { 'edit' } },
  })))
  vim.cmd.buffer(b)
  local _, snap = a.run({ plan_id = pid })
  H.wait_hunks(b, 2)
  vim.cmd('Agent accept all')
  local st = H.wait_run()
  H.eq('completed', st.status, 'run')
  local all = numbered(20):gsub('line 3\n', 'line three\n'):gsub('line 15\n', 'line 15\nline 15b\n')
  H.eq(all, H.read(root .. '/copy.txt'), 'the command saw the accepted text: the buffer was saved first')
  H.eq(false, vim.bo[b].modified, 'the buffer is saved')
  local res = H.truthy(a.restore(snap), 'restore')
  for _, cf in ipairs(res.conflicts) do
    H.truthy(not cf.uri:match('/a%.txt$'), 'no conflict on a.txt: ' .. vim.inspect(res.conflicts))
  end
  H.eq(numbered(20), H.text(b), 'buffer restored')
  H.eq(numbered(20), H.read(root .. '/a.txt'), 'disk restored')
end

-- A failed step is told through vim.notify, at error level.
function C.step_failure_notified()
  H.workspace({ ['a.txt'] = 'a\n' })
  H.setup({ notify_steps = true })
  local got = H.capture_notify()
  local asked = H.answer_select(function(items)
    for _, it in ipairs(items) do
      if it.title == 'Abort' then
        return it
      end
    end
  end)
  local b = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'fail', steps = {
    { id = 'boom', tool = 'read_file', args = { path = 'missing.txt' } },
  } })))
  vim.cmd.buffer(b)
  a.run({ plan_id = pid })
  local st = H.wait_run()
  H.eq('failed', st.status, 'run failed')
  local found
  for _, n in ipairs(got) do
    if n.level == vim.log.levels.ERROR and n.msg:find('step boom failed', 1, true) then
      found = n.msg
    end
  end
  H.truthy(found, 'the failure is notified: ' .. vim.inspect(got))
  H.truthy(found:find('missing.txt', 1, true), 'with the reason: ' .. found)
  H.truthy(#asked >= 1 and asked[1].opts.prompt:find('boom', 1, true), 'the failed critical step asked retry/skip/abort through vim.ui.select')
end

-- A hunk accepted while its file was not open (written on disk) moves the
-- hunks below it: opening the file draws them where they are now.
function C.unopened_accept_moves_hunks_below()
  local root = H.workspace({ ['a.txt'] = numbered(20), ['o.txt'] = 'o\n' })
  H.setup()
  local ob = H.open('o.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(edit_plan('a.txt', { { oldText = 'line 3\n', newText = 'line three\nline 3b\nline 3c\n' }, { oldText = 'line 15\n', newText = 'line fifteen\n' } })))
  vim.cmd.buffer(ob)
  a.run({ plan_id = pid })
  local review = require('agentd.review')
  H.wait(function() return review.pending_count() == 2 end, 'two hunks')
  local cs = review.sets[review.order[1]]
  local first = cs.files[1].hunks[1]
  -- Accept the first hunk as another front end would: the file is not open.
  local c = vim.lsp.get_clients({ name = 'agentd' })[1]
  local r = c.request_sync('agentd/changes/resolve', { changeId = cs.id, decisions = { { hunkId = first.id, action = 'accept' } } }, 10000)
  H.eq(1, #r.result.applied, 'accepted on disk')
  -- The plugin learns the decision from the server (agentd/changes/get):
  -- the statuses, and where each hunk starts now (`at`).
  local got = c.request_sync('agentd/changes/get', { changeId = cs.id }, 10000)
  review.put(got.result)
  H.eq(numbered(20):gsub('line 3\n', 'line three\nline 3b\nline 3c\n'), H.read(root .. '/a.txt'), 'disk')
  vim.cmd.edit(root .. '/a.txt')
  local hs = H.wait_hunks(0, 1)
  H.eq(17, hs[1].lnum, 'the second hunk is two lines lower')
  H.eq('line 15', vim.api.nvim_buf_get_lines(0, 16, 17, false)[1], 'on its line')
  vim.api.nvim_win_set_cursor(0, { 17, 0 })
  vim.cmd('normal ga')
  H.wait_hunks(0, 0)
  H.eq('line fifteen', vim.api.nvim_buf_get_lines(0, 16, 17, false)[1], 'accepted in place')
end

-- With a model: :Agent plan {request} shows the model's plan; R in the plan
-- buffer regenerates it with feedback.
function C.plan_from_model_and_regenerate()
  H.workspace({ ['a.txt'] = 'a\n' })
  local url = H.fakemodel({
    { text = vim.json.encode({ title = 'Read a', steps = { { id = 'read', description = 'read a', tool = 'read_file', args = { path = 'a.txt' } } } }) },
    { text = vim.json.encode({ title = 'Read a twice', steps = {
      { id = 'read', description = 'read a', tool = 'read_file', args = { path = 'a.txt' } },
      { id = 'again', description = 'read a again', tool = 'read_file', args = { path = 'a.txt' }, dependsOn = { 'read' } },
    } }) },
  })
  vim.env.OPENAI_API_KEY = 'test-key'
  H.setup({ model = { provider = 'openai', model = 'fake', baseUrl = url } })
  H.open('a.txt')
  vim.cmd('Agent plan read the file a.txt')
  local pb = vim.api.nvim_get_current_buf()
  local lines = H.lines(pb)
  H.truthy(lines[1]:find('Read a', 1, true), 'the model plan is shown: ' .. vim.inspect(lines))
  H.truthy(lines[2]:match('^read%s+read_file%s+read a'), 'its step: ' .. tostring(lines[2]))
  local asked
  vim.ui.input = function(opts, cb)
    asked = opts.prompt
    cb('read it twice')
  end
  vim.cmd('normal R')
  H.truthy(asked, 'R asks for feedback')
  lines = H.lines(pb)
  H.truthy(lines[1]:find('Read a twice', 1, true), 'the regenerated plan: ' .. vim.inspect(lines))
  H.truthy(lines[3] and lines[3]:match('^again%s+read_file%s+read a again%s+← read'), 'its new step: ' .. tostring(lines[3]))
end

-- gR on a change from a model-driven step asks for a reason, and the reason
-- goes back to the model.
function C.reject_reason_reaches_model()
  local root = H.workspace({ ['a.txt'] = numbered(10) })
  local url = H.fakemodel({
    { text = 'editing', toolCalls = { { id = 'c1', name = 'edit_file', args = vim.json.encode({ path = 'a.txt', edits = { { oldText = 'line 3\n', newText = 'line three\n' } } }) } } },
    { text = 'understood, leaving it' },
  })
  vim.env.OPENAI_API_KEY = 'test-key'
  H.setup({ model = { provider = 'openai', model = 'fake', baseUrl = url } })
  local b = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'agent', steps = {
    { id = 'agent', kind = 'agent', prompt = 'make line 3 a word', tools = { 'edit_file' }, maxIterations = 3 },
  } })))
  vim.cmd.buffer(b)
  a.run({ plan_id = pid })
  H.wait_hunks(b, 1)
  local asked
  vim.fn.input = function(prompt)
    asked = prompt
    return 'keep digits, please'
  end
  vim.cmd('normal gR')
  H.truthy(asked and asked:find('why reject'), 'gR asked for a reason')
  H.wait_hunks(b, 0)
  H.wait_run()
  H.eq(numbered(10), H.text(b), 'nothing applied')
  H.eq(numbered(10), H.read(root .. '/a.txt'), 'nothing on disk')
  local r = vim.system({ 'curl', '-s', url:gsub('/v1$', '') .. '/requests' }, { text = true }):wait()
  H.truthy(r.stdout:find('keep digits, please', 1, true), 'the reason reached the model: ' .. r.stdout:sub(1, 2000))
end

-- :Agent snapshots previews a snapshot's diff; :Agent log shows the run.
function C.snapshots_and_log()
  H.workspace({ ['a.txt'] = numbered(20) })
  H.setup()
  H.answer_select(function(items) return items[#items] end)
  local b = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(edit_plan('a.txt', two_edits)))
  vim.cmd.buffer(b)
  a.run({ plan_id = pid })
  H.wait_hunks(b, 2)
  vim.cmd('Agent accept all')
  H.wait_run()
  vim.cmd('write')
  local wins = #vim.api.nvim_list_wins()
  vim.cmd('Agent snapshots')
  H.wait(function() return #vim.api.nvim_list_wins() == wins + 1 end, 'the diff preview')
  local text = table.concat(H.lines(0), '\n')
  H.eq('diff', vim.bo.filetype, 'a diff buffer')
  H.truthy(text:find('-line three', 1, true) or text:find('+line three', 1, true), 'the diff of a.txt: ' .. text)
  vim.cmd('close')
  vim.cmd('Agent log')
  text = table.concat(H.lines(0), '\n')
  H.truthy(text:find('run started', 1, true) and text:find('step edit', 1, true), 'the log: ' .. text)
end

-- New files are first-class: a create's content is visible in its buffer
-- at once (virtual lines below line 1, never only above it) and in a
-- preview float; it can be accepted from the buffer opened before the
-- decision (the empty buffer is not sent as the file); accepting writes it
-- and the run completes.
function C.create_visible_and_accepted_after_opening()
  local root = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  local ab = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'create', steps = {
    { id = 'mk', tool = 'write_file', args = { path = 'new.go', content = 'package main\n\nfunc main() {}\n' } },
  } })))
  vim.cmd.buffer(ab)
  a.run({ plan_id = pid })
  local review = require('agentd.review')
  H.wait(function() return review.pending_count() == 1 end, 'the create to be proposed')
  vim.cmd('Agent review')
  local qf = vim.fn.getqflist({ items = 0 }).items
  H.eq(1, #qf, 'one quickfix entry for the new file')
  H.truthy(qf[1].text:find('create pending (3 lines)', 1, true), 'the entry says what it is: ' .. qf[1].text)
  vim.cmd('cfirst')
  local nb = vim.api.nvim_get_current_buf()
  H.truthy(vim.api.nvim_buf_get_name(nb):match('new%.go$'), 'the new file opened from the list')
  H.eq(0, #vim.lsp.get_clients({ bufnr = nb, name = 'agentd' }), 'its empty buffer is not sent as the file')
  H.wait(function() return #vim.api.nvim_buf_get_extmarks(nb, -1, 0, -1, {}) > 0 end, 'the new file drawn')
  local shown
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(nb, -1, 0, -1, { details = true })) do
    if m[4].virt_lines then
      H.truthy(not m[4].virt_lines_above, 'not above line 1 (Neovim shows those only after <C-y>)')
      shown = vim.tbl_map(virt_text_of, m[4].virt_lines)
    end
  end
  H.eq({ 'package main', '', 'func main() {}' }, shown, 'the proposed content below line 1')
  -- The preview float: the whole content, with the file's filetype.
  vim.cmd('normal gh')
  local pv = vim.api.nvim_get_current_buf()
  H.truthy(vim.api.nvim_win_get_config(0).relative ~= '', 'a float')
  H.eq({ 'package main', '', 'func main() {}' }, H.lines(pv), 'the preview holds the content')
  H.eq('go', vim.bo[pv].filetype, 'with its filetype')
  vim.cmd('normal q')
  H.eq(nb, vim.api.nvim_get_current_buf(), 'q closes the preview')
  vim.cmd('normal ga')
  H.wait(function() return H.read(root .. '/new.go') ~= nil end, 'the new file on disk')
  H.eq('package main\n\nfunc main() {}\n', H.read(root .. '/new.go'), 'accepting wrote it')
  H.eq({ 'package main', '', 'func main() {}' }, H.lines(nb), 'the buffer shows it')
  local st = H.wait_run()
  H.eq('completed', st.status, 'the run says so')
  H.eq(0, review.pending_count(), 'nothing pending')
end

-- An empty file where a creation is pending (issue 38, point 12): the user
-- opens new.txt and writes it, empty, before deciding; ga takes the
-- creation into it: the file on disk and the buffer hold the agent's text,
-- nothing is left pending or stale, and the run completes.
function C.create_into_empty_file_written_first()
  local root = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  local ab = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'create', steps = {
    { id = 'mk', tool = 'write_file', args = { path = 'new.txt', content = 'one\ntwo\n' } },
  } })))
  vim.cmd.buffer(ab)
  a.run({ plan_id = pid })
  local review = require('agentd.review')
  H.wait(function() return review.pending_count() == 1 end, 'the create to be proposed')
  vim.cmd.edit(root .. '/new.txt')
  local nb = vim.api.nvim_get_current_buf()
  vim.cmd.write()
  H.eq('', H.read(root .. '/new.txt'), 'the user wrote the file, empty')
  H.wait(function() return #vim.api.nvim_buf_get_extmarks(nb, -1, 0, -1, {}) > 0 end, 'the create drawn in the empty file')
  local got = H.capture_notify()
  vim.cmd('normal ga')
  H.wait(function() return H.read(root .. '/new.txt') == 'one\ntwo\n' end, 'the creation written into the empty file: ' .. vim.inspect(H.read(root .. '/new.txt')))
  H.wait(function() return vim.deep_equal(H.lines(nb), { 'one', 'two' }) end, 'the buffer to hold the creation: ' .. vim.inspect(H.lines(nb)))
  local st = H.wait_run()
  H.eq('completed', st.status, 'the run completes')
  H.eq(0, review.pending_count(), 'nothing pending or stale')
  H.eq({}, a.hunks(nb), 'no hunk left in the file')
  for _, n in ipairs(got) do
    H.truthy(not n.msg:find('created since', 1, true), 'no conflict on accept: ' .. n.msg)
  end
end

-- A file the user created with other content where a creation is pending
-- (issue 38, point 12): ga does not write over it; the creation is stale,
-- :Agent repropose recomputes it as a change of the user's file, and ga
-- then takes the agent's text, leaving no dead stale hunk.
function C.create_over_other_content_reproposed()
  local root = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  local ab = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'create', steps = {
    { id = 'mk', tool = 'write_file', args = { path = 'new.txt', content = 'one\ntwo\n' } },
  } })))
  vim.cmd.buffer(ab)
  a.run({ plan_id = pid })
  local review = require('agentd.review')
  H.wait(function() return review.pending_count() == 1 end, 'the create to be proposed')
  vim.cmd.edit(root .. '/new.txt')
  local nb = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(nb, 0, -1, false, { 'mine' })
  vim.cmd.write()
  H.eq('mine\n', H.read(root .. '/new.txt'), 'the user wrote the file with their own text')
  H.wait(function() return #vim.api.nvim_buf_get_extmarks(nb, -1, 0, -1, {}) > 0 end, 'the creation drawn in the file')
  H.capture_notify()
  H.answer_select(function() return nil end) -- the failed step's Retry/Skip/Abort: left for later
  vim.cmd('normal ga')
  local function file_status()
    local f = review.sets[review.order[1]].files[1]
    return f.status
  end
  H.wait(function() return file_status() == 'stale' end, 'the creation to be stale: ' .. vim.inspect(review.sets[review.order[1]].files[1]))
  H.eq('mine\n', H.read(root .. '/new.txt'), 'the user\'s file is not written over')
  vim.cmd('Agent repropose')
  H.wait(function()
    local hs = a.hunks(nb)
    return #hs >= 1 and vim.iter(hs):all(function(h) return h.status == 'pending' end)
  end, 'a pending hunk re-proposed, no stale one: ' .. vim.inspect(a.hunks(nb)))
  vim.cmd('Agent accept all')
  H.wait(function() return H.read(root .. '/new.txt') == 'one\ntwo\n' or vim.deep_equal(H.lines(nb), { 'one', 'two' }) end,
    'the agent\'s text taken: ' .. vim.inspect(H.lines(nb)))
  if vim.bo[nb].modified then
    vim.cmd.write()
  end
  H.eq('one\ntwo\n', H.read(root .. '/new.txt'), 'the file holds the agent\'s text')
  H.eq({ 'one', 'two' }, H.lines(nb), 'and so does the buffer')
  H.wait(function() return review.pending_count() == 0 end, 'nothing pending or stale: ' .. review.pending_count())
  H.eq({}, a.hunks(nb), 'no dead hunk left in the file')
end

-- Issue 35 point 4: a new file whose buffer the user typed into (not saved,
-- not on disk) is the user's text for that file: accepting the proposed
-- creation is a conflict to decide, never the agent's content on disk under
-- the buffer's text; :Agent repropose then offers the agent's text as a
-- change of the user's.
function C.create_into_typed_buffer_is_conflict()
  local root = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  local ab = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'create', steps = {
    { id = 'mk', tool = 'write_file', args = { path = 'new.txt', content = 'one\ntwo\n' } },
  } })))
  vim.cmd.buffer(ab)
  a.run({ plan_id = pid })
  local review = require('agentd.review')
  H.wait(function() return review.pending_count() == 1 end, 'the create to be proposed')
  vim.cmd.edit(root .. '/new.txt')
  local nb = vim.api.nvim_get_current_buf()
  H.wait(function() return #vim.api.nvim_buf_get_extmarks(nb, -1, 0, -1, {}) > 0 and vim.fn.maparg('ga', 'n') ~= '' end, 'the creation drawn with its keys')
  vim.cmd('normal! imine')
  vim.cmd('doautocmd TextChanged')
  local got = H.capture_notify()
  H.answer_select(function() return nil end) -- the failed step's question: left for later
  vim.cmd('normal ga')
  local function file_status()
    return review.sets[review.order[1]].files[1].status
  end
  H.wait(function() return file_status() ~= 'pending' end, 'the creation decided or a conflict: ' .. vim.inspect(got))
  H.eq(nil, H.read(root .. '/new.txt'), 'nothing written on disk under the typed buffer')
  H.eq('stale', file_status(), 'the creation a conflict to decide')
  H.eq({ 'mine' }, H.lines(nb), 'the buffer keeps the user\'s text')
  local said = false
  for _, n in ipairs(got) do
    said = said or n.msg:find('new.txt', 1, true) ~= nil
  end
  H.truthy(said, 'the conflict is said, naming the file: ' .. vim.inspect(got))
  vim.cmd('Agent repropose')
  H.wait(function()
    local hs = a.hunks(nb)
    return #hs >= 1 and vim.iter(hs):all(function(h) return h.status == 'pending' and not h.whole end)
  end, 'the agent\'s text offered against the user\'s: ' .. vim.inspect(a.hunks(nb)))
end

-- Issue 35 point 4: a.hunks() lists the pending creation, deletion or move
-- of the buffer's file, which is drawn, not only hunks.
function C.hunks_lists_whole_file_units()
  local root = H.workspace({ ['a.txt'] = 'a\n', ['old.txt'] = 'x\ny\n' })
  H.setup()
  local ab = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'whole', steps = {
    { id = 'mk', tool = 'write_file', args = { path = 'new.txt', content = 'one\ntwo\n' } },
    { id = 'rm', tool = 'delete_file', args = { path = 'old.txt' } },
  } })))
  H.answer_select(function(items)
    for _, it in ipairs(items) do
      if it.kind == 'allow_once' then
        return it
      end
    end
  end)
  vim.cmd.buffer(ab)
  a.run({ plan_id = pid })
  local review = require('agentd.review')
  H.wait(function() return review.pending_count() == 2 end, 'the create and the delete proposed: ' .. review.pending_count())
  vim.cmd.edit(root .. '/new.txt')
  local nb = vim.api.nvim_get_current_buf()
  local hs = a.hunks(nb)
  H.eq(1, #hs, 'the creation listed: ' .. vim.inspect(hs))
  H.eq({ true, 'create', 'pending', 1, 1 }, { hs[1].whole, hs[1].op, hs[1].status, hs[1].lnum, hs[1].end_lnum }, 'as a whole-file unit')
  local ob = H.open('old.txt')
  hs = a.hunks(ob)
  H.eq(1, #hs, 'the deletion listed: ' .. vim.inspect(hs))
  H.eq({ true, 'delete', 1, 2 }, { hs[1].whole, hs[1].op, hs[1].lnum, hs[1].end_lnum }, 'spanning the buffer')
  vim.cmd('normal ga')
  H.wait(function() return #a.hunks(ob) == 0 end, 'the deletion decided: gone from the list')
end

-- A binary file open in a buffer never passes through it (issue 35, point
-- 2): accepting its deletion works (the server compares the disk, not the
-- buffer's decoding of the bytes), and nothing is left pending.
function C.binary_open_delete_accepted()
  local bin = 'GIF89a\1\0\191\255\254 text \128\129' .. string.rep('\0', 8)
  local root = H.workspace({ ['logo.gif'] = bin, ['a.txt'] = 'a\n' })
  H.setup()
  local got = H.capture_notify()
  local lb = H.open('logo.gif')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'rm logo', steps = {
    { id = 'rm', tool = 'delete_file', args = { path = 'logo.gif' } },
  } })))
  vim.cmd.buffer(lb)
  a.run({ plan_id = pid })
  local review = require('agentd.review')
  H.wait(function() return review.pending_count() == 1 end, 'the deletion to be proposed')
  vim.cmd.buffer(lb)
  vim.cmd('normal ga')
  H.wait(function() return H.read(root .. '/logo.gif') == nil end, 'the binary file deleted: ' .. vim.inspect(got))
  H.wait(function() return review.pending_count() == 0 end, 'nothing pending after the accept')
  H.eq('completed', H.wait_run().status, 'the run completes')
  H.eq({}, a.hunks(lb), 'no hunk left in the buffer')
  for _, n in ipairs(got) do
    H.truthy(not n.msg:find('changed since', 1, true), 'no stale conflict: ' .. n.msg)
  end
end

-- A restore that brings back a binary file open in a buffer writes its
-- bytes on disk, not through the buffer (which would save the editor's
-- decoding of them), and the buffer is read again (issue 35, point 2).
function C.binary_open_restored_byte_for_byte()
  local v1 = 'GIF89a\1\0\191\255\254 one \128\129' .. string.rep('\0', 8)
  local root = H.workspace({ ['logo.gif'] = v1, ['a.txt'] = numbered(5) })
  H.setup()
  local lb = H.open('logo.gif')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'rm logo', steps = {
    { id = 'rm', tool = 'delete_file', args = { path = 'logo.gif' } },
  } })))
  vim.cmd.buffer(lb)
  local _, snap = a.run({ plan_id = pid })
  H.truthy(snap and snap ~= '', 'the run has a start snapshot')
  H.wait(function() return require('agentd.review').pending_count() == 1 end, 'the deletion to be proposed')
  vim.cmd('Agent accept all')
  H.wait_run()
  H.eq(nil, H.read(root .. '/logo.gif'), 'deleted')
  local got = H.capture_notify()
  H.truthy(a.restore(snap), 'a restore result')
  H.eq(v1, H.read(root .. '/logo.gif'), 'the restored bytes on disk, byte for byte: ' .. vim.inspect(got))
  H.wait(function()
    return (vim.api.nvim_buf_get_lines(lb, 0, 1, false)[1] or ''):find('GIF89a', 1, true) ~= nil
  end, 'the buffer read again from disk: ' .. vim.inspect(H.lines(lb)))
  H.eq(false, vim.bo[lb].modified, 'the reloaded buffer is not modified')
  H.eq(v1, H.read(root .. '/logo.gif'), 'still byte for byte')
end

-- Creates, deletes and moves decided in any order leave the plugin's list
-- equal to the server's: reject all, accept all (which does not override a
-- rejection), then gr on the accepted new file: no phantom hunk, and the
-- accepted file is not deleted.
function C.whole_files_any_order_match_server()
  local root = H.workspace({ ['gone.txt'] = 'bye\n', ['old.txt'] = 'moving\n', ['a.txt'] = numbered(5) })
  H.setup()
  local ab = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'files', steps = {
    { id = 'mk', tool = 'write_file', args = { path = 'new.txt', content = 'one\ntwo\n' } },
    { id = 'rm', tool = 'delete_file', args = { path = 'gone.txt' } },
    { id = 'mv', tool = 'move_file', args = { from = 'old.txt', to = 'moved.txt' } },
    { id = 'ed', tool = 'edit_file', args = { path = 'a.txt', edits = { { oldText = 'line 2\n', newText = 'line two\n' } } } },
  } })))
  vim.cmd.buffer(ab)
  a.run({ plan_id = pid })
  local review = require('agentd.review')
  H.wait(function() return review.pending_count() == 4 end, 'four units to review: ' .. review.pending_count())
  local c = vim.lsp.get_clients({ name = 'agentd' })[1]
  local function server_view()
    local out = {}
    for _, id in ipairs(review.order) do
      local cs = c.request_sync('agentd/changes/get', { changeId = id }, 5000).result
      for _, f in ipairs(cs.files) do
        out[vim.fn.fnamemodify(vim.uri_to_fname(f.uri), ':t')] = f.status
      end
    end
    return out
  end
  local function plugin_view()
    local out = {}
    for _, id in ipairs(review.order) do
      for _, f in ipairs(review.sets[id].files) do
        local st = f.status
        if not review.is_whole(f) then
          st = f.hunks[1].status
        end
        out[vim.fn.fnamemodify(vim.uri_to_fname(f.uri), ':t')] = st
      end
    end
    return out
  end
  -- Accept the new file from its own buffer (opened after the proposal),
  -- then reject all, accept all, and gr on the new file.
  vim.cmd.edit(root .. '/new.txt')
  H.wait(function() return #vim.api.nvim_buf_get_extmarks(0, -1, 0, -1, {}) > 0 end, 'the new file drawn')
  vim.cmd('normal ga')
  H.eq('one\ntwo\n', H.read(root .. '/new.txt'), 'the create accepted and written')
  H.eq(server_view(), plugin_view(), 'after ga on the create')
  vim.cmd('Agent reject all')
  H.eq(server_view(), plugin_view(), 'after reject all')
  H.eq('accepted', plugin_view()['new.txt'], 'reject all did not take the accepted create out')
  vim.cmd('Agent accept all')
  H.eq(server_view(), plugin_view(), 'after accept all')
  H.eq(0, review.pending_count(), 'no phantom hunk')
  H.eq(0, #require('agentd').hunks(0), 'none drawn in the new file')
  vim.cmd('normal gr')
  H.eq('one\ntwo\n', H.read(root .. '/new.txt'), 'gr on the accepted file does not delete it')
  H.eq({ 'one', 'two' }, H.lines(0), 'and its buffer shows it')
  H.eq(server_view(), plugin_view(), 'still the server\'s list')
  H.eq('bye\n', H.read(root .. '/gone.txt'), 'the delete was rejected: kept')
  H.eq('moving\n', H.read(root .. '/old.txt'), 'the move was rejected')
  H.eq(nil, H.read(root .. '/moved.txt'), 'nothing moved')
end

-- Review keys are buffer-local to buffers with pending hunks: a user's own
-- ]h / ga stay in effect elsewhere (and come back once the hunks are
-- decided); they work in the plan buffer too.
function C.review_keys_buffer_local()
  H.workspace({ ['a.txt'] = numbered(20), ['o.txt'] = 'o\n' })
  vim.keymap.set('n', ']h', function() vim.g.user_next = (vim.g.user_next or 0) + 1 end)
  H.setup()
  local ob = H.open('o.txt')
  vim.keymap.set('n', 'ga', function() vim.g.user_ga = true end, { buffer = true })
  local b = H.open('a.txt')
  vim.keymap.set('n', 'ga', function() vim.g.user_ga_a = true end, { buffer = true })
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(C._edit_plan('a.txt', two_edits)))
  local pb = vim.api.nvim_get_current_buf()
  vim.cmd.buffer(b)
  a.run({ plan_id = pid })
  H.wait_hunks(b, 2)
  vim.cmd.buffer(ob)
  vim.cmd('normal ]h')
  H.eq(1, vim.g.user_next, "the user's ]h in a buffer without hunks")
  vim.cmd('normal ga')
  H.eq(true, vim.g.user_ga, "the user's own buffer-local ga")
  -- In the plan buffer: ]h goes to the first hunk, ga on the step line accepts its changes.
  vim.cmd.buffer(pb)
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.cmd('normal ]h')
  H.eq(b, vim.api.nvim_get_current_buf(), ']h in the plan buffer went to the hunk')
  H.eq(3, vim.fn.line('.'), 'on its line')
  vim.cmd('normal ]h')
  H.eq(15, vim.fn.line('.'), ']h in the buffer with hunks is the plugin\'s')
  vim.cmd.buffer(pb)
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.cmd('normal ga')
  H.wait_hunks(b, 0, 'ga in the plan buffer accepted the step\'s hunks')
  vim.cmd.buffer(b)
  vim.cmd('normal ]h')
  H.eq(2, vim.g.user_next, "the user's ]h is back once the hunks are decided")
  vim.cmd('normal ga')
  H.eq(true, vim.g.user_ga_a, "and the user's buffer-local ga is put back")
end

-- One quickfix list, reused by every review and jump.
function C.one_quickfix_list()
  H.workspace({ ['a.txt'] = numbered(20), ['o.txt'] = 'o\n' })
  H.setup()
  local ob = H.open('o.txt')
  vim.fn.setqflist({}, ' ', { title = 'the user\'s own list', items = { { filename = 'o.txt', lnum = 1, text = 'mine' } } })
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(C._edit_plan('a.txt', two_edits)))
  vim.cmd.buffer(ob)
  a.run({ plan_id = pid })
  H.wait(function() return require('agentd.review').pending_count() == 2 end, 'two hunks')
  vim.cmd('Agent review')
  local n = vim.fn.getqflist({ nr = '$' }).nr
  H.eq(2, n, 'one list added after the user\'s')
  vim.cmd('Agent review')
  vim.cmd('Agent next')
  vim.cmd('Agent next')
  vim.cmd('colder')
  H.eq('the user\'s own list', vim.fn.getqflist({ title = 0 }).title, 'the user\'s list is kept')
  vim.cmd('Agent review')
  H.eq(2, vim.fn.getqflist({ nr = '$' }).nr, 'still two lists: reviews reuse agentd\'s')
  H.eq('agentd review', vim.fn.getqflist({ title = 0 }).title, 'and make it the current one')
end

-- Approvals are never answered by accident: a dismissed prompt (the <CR>
-- or <Esc> that closes a "Press ENTER" message landing on it gives nil) is
-- not a denial: the step keeps waiting for :Agent approve. A high-risk
-- approval's first item (a picker's default) is not an allow.
function C.approval_dismissed_is_not_denial()
  local root = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  local got = H.capture_notify()
  local answers = { false } -- first: dismissed
  local asked = H.answer_select(function(items)
    local want = table.remove(answers, 1)
    if want == false or want == nil then
      return nil
    end
    for _, it in ipairs(items) do
      if it.kind == want then
        return it
      end
    end
  end)
  local ab = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'cmd', steps = {
    { id = 'hello', tool = 'run_command', args = { command = 'echo hi > out.txt' } },
  } })))
  vim.cmd.buffer(ab)
  a.run({ plan_id = pid })
  H.wait(function() return #asked == 1 end, 'the approval prompt')
  H.eq('high', asked[1].items[1] and 'high' or nil, 'asked')
  H.truthy(asked[1].items[1].optionId == false and asked[1].items[1].kind == nil, 'a high-risk approval\'s first item is not an allow: ' .. vim.inspect(asked[1].items[1]))
  H.wait(function()
    for _, n in ipairs(got) do
      if n.msg:find(':Agent approve', 1, true) then
        return true
      end
    end
  end, 'the user told the step still waits')
  vim.wait(300)
  H.eq('running', require('agentd').status().status, 'the run still waits: the dismissal was no denial')
  H.eq('waiting', require('agentd.state').step_status(require('agentd').status().run_id, 'hello'), 'the step waits for approval')
  H.eq(nil, H.read(root .. '/out.txt'), 'nothing ran yet')
  answers = { 'allow_once' }
  vim.cmd('Agent approve')
  local st = H.wait_run()
  H.eq('completed', st.status, 'allowed once it was answered')
  H.eq('hi\n', H.read(root .. '/out.txt'), 'the command ran')
end

-- Notifications never stop at a "Press ENTER" prompt: with Neovim's own
-- vim.notify, every message of the plugin is echoed on one line that fits
-- the command line (a longer or multi-line echo is what stops at one); the
-- whole text is in :Agent log.
function C.notifications_no_hit_enter()
  H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  local notify = require('agentd.notify')
  H.truthy(notify.builtin(), "Neovim's own vim.notify")
  vim.cmd('messages clear')
  notify.notify('agentd: step one completed', vim.log.levels.INFO)
  notify.notify('agentd: ' .. string.rep('a long message ', 20) .. '\nand a second line', vim.log.levels.ERROR)
  notify.notify('agentd: step two failed: ' .. string.rep('x', 200), vim.log.levels.WARN)
  local lines = vim.split(vim.api.nvim_exec2('messages', { output = true }).output, '\n', { trimempty = true })
  H.eq(3, #lines, 'one line per message: ' .. vim.inspect(lines))
  for _, l in ipairs(lines) do
    H.truthy(vim.api.nvim_strwidth(l) < vim.v.echospace, 'fits the command line: ' .. l)
  end
  H.truthy(lines[2]:find('(:Agent log)', 1, true), 'a cut message points at the log: ' .. lines[2])
  local log = table.concat(require('agentd.state').log, '\n')
  H.truthy(log:find('and a second line', 1, true), 'the whole text is in :Agent log')
end

-- A plan with one edit in file; returns the buffer and the hunk's line.
local function one_hunk(file, text, old, new)
  H.workspace({ [file] = text })
  H.setup()
  local b = H.open(file)
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(C._edit_plan(file, { { oldText = old, newText = new } })))
  vim.cmd.buffer(b)
  a.run({ plan_id = pid })
  local hs = H.wait_hunks(b, 1)
  return b, hs[1].lnum
end

local function wait_status(b, status, what)
  H.wait(function()
    local h = require('agentd').hunks(b)[1]
    return h and h.status == status
  end, what .. ': ' .. vim.inspect(require('agentd').hunks(b)))
end

-- Typing into a context line keeps the hunk alive (re-anchored); typing
-- into its changed line makes it stale; :Agent repropose recomputes it
-- against the text, and it can be accepted.
local function stale_case(file, text, ctx, old, new)
  local b, lnum = one_hunk(file, text, old, new)
  vim.api.nvim_win_set_cursor(0, { lnum - 1, 0 })
  feed('A' .. ctx .. '<Esc>')
  vim.wait(400)
  wait_status(b, 'pending', 'the hunk to stay pending after typing in a context line')
  vim.api.nvim_win_set_cursor(0, { lnum, 0 })
  feed('A typed<Esc>')
  wait_status(b, 'stale', 'the hunk to become stale after typing into it')
  vim.cmd('Agent repropose')
  wait_status(b, 'pending', ':Agent repropose to give a pending hunk')
  vim.api.nvim_win_set_cursor(0, { require('agentd').hunks(b)[1].lnum, 0 })
  vim.cmd('normal ga')
  H.wait_hunks(b, 0)
  return b
end

-- u after typing into a hunk's changed line makes it pending again: no
-- stale mark is left.
local function stale_undo_case(file, text, old, new)
  local b, lnum = one_hunk(file, text, old, new)
  vim.api.nvim_win_set_cursor(0, { lnum, 0 })
  feed('A typed<Esc>')
  wait_status(b, 'stale', 'the hunk to become stale after typing into it')
  feed('u')
  wait_status(b, 'pending', 'u to clear the stale mark')
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(b, require('agentd.review').ns_anchor, 0, -1, { details = true })) do
    H.truthy(not (m[4].virt_text and m[4].virt_text[1][1]:find('stale')), 'no stale hint drawn after u')
  end
end

local go_src = 'package main\n\nimport "fmt"\n\nfunc main() {\n\tx := 1\n\tfmt.Println(x)\n\ty := 2\n\tfmt.Println(y)\n}\n'

-- Edits beside a hunk keep it alive, an edit inside makes it stale, and
-- :Agent repropose recomputes it. Plain text.
function C.stale_context_and_repropose_text()
  local b = stale_case('notes.txt', numbered(12), ' ctx', 'line 6\n', 'line six\n')
  H.truthy(H.text(b):find('line six', 1, true), 'the re-proposed change accepted: ' .. H.text(b))
end

-- The same in a Go file.
function C.stale_context_and_repropose_go()
  local b = stale_case('main.go', go_src, ' // ctx', '\tfmt.Println(x)\n', '\tfmt.Println("x =", x)\n')
  H.truthy(H.text(b):find('"x =", x', 1, true), 'the re-proposed change accepted: ' .. H.text(b))
end

-- What the user typed on a stale hunk's line outside the agent's words
-- survives :Agent repropose and the accept after it (issue 35, point 1).
function C.repropose_keeps_typed_text()
  local b, lnum = one_hunk('main.go', go_src, '\tfmt.Println(x)\n', '\tfmt.Println("x =", x)\n')
  vim.api.nvim_win_set_cursor(0, { lnum, 0 })
  feed('I_ = 1; <Esc>')
  wait_status(b, 'stale', 'the hunk to become stale after typing into it')
  vim.cmd('Agent repropose')
  wait_status(b, 'pending', ':Agent repropose to give a pending hunk')
  vim.api.nvim_win_set_cursor(0, { require('agentd').hunks(b)[1].lnum, 0 })
  vim.cmd('normal ga')
  H.wait_hunks(b, 0)
  H.truthy(H.text(b):find('\t_ = 1; fmt.Println("x =", x)\n', 1, true), 'the typed text and the agent\'s kept: ' .. H.text(b))
end

-- u clears the stale mark. Plain text.
function C.stale_undo_clears_text()
  stale_undo_case('notes.txt', numbered(12), 'line 6\n', 'line six\n')
end

-- The same in a Go file.
function C.stale_undo_clears_go()
  stale_undo_case('main.go', go_src, '\tfmt.Println(x)\n', '\tfmt.Println("x =", x)\n')
end

-- :Agent plan says what is missing before asking for the request; the
-- model and its key can be set in setup() (the key goes in the daemon's
-- environment, not on the wire).
function C.plan_says_missing_model_first()
  H.workspace({ ['a.txt'] = 'a\n' })
  vim.env.AGENTD_MODEL, vim.env.OPENAI_API_KEY, vim.env.OPENAI_BASE_URL = nil, nil, nil
  H.setup()
  local got = H.capture_notify()
  local asked = false
  vim.ui.input = function(_, cb)
    asked = true
    cb(nil)
  end
  H.open('a.txt')
  vim.cmd('Agent plan')
  H.eq(false, asked, 'no request asked for without a model')
  H.truthy(got[#got] and got[#got].msg:find('needs a model', 1, true) and got[#got].msg:find('setup({ model', 1, true) and got[#got].msg:find('AGENTD_MODEL', 1, true), 'says what is missing and how to set it: ' .. vim.inspect(got))
  H.setup({ model = { provider = 'openai', model = 'gpt-4o' } })
  vim.cmd('Agent plan')
  H.eq(false, asked, 'a model without its key: still not asked')
  H.truthy(got[#got].msg:find('OPENAI_API_KEY', 1, true) and got[#got].msg:find('api_key', 1, true), 'names the key: ' .. got[#got].msg)
  -- With the key in setup(), the request is asked for, and the model
  -- answers through the daemon, which got the key in its environment.
  H.stop()
  H.wait(function() return #vim.lsp.get_clients({ name = 'agentd' }) == 0 end, 'the old daemon to stop')
  local url = H.fakemodel({ { text = vim.json.encode({ title = 'Read a', steps = { { id = 'read', tool = 'read_file', args = { path = 'a.txt' } } } }) } })
  H.setup({ model = { provider = 'openai', model = 'fake', baseUrl = url, api_key = function() return 'key-from-setup' end } })
  vim.cmd('bwipeout!')
  H.open('a.txt')
  vim.ui.input = function(_, cb)
    asked = true
    cb('read a.txt')
  end
  vim.cmd('Agent plan')
  H.eq(true, asked, 'the request asked for')
  H.truthy(H.lines(0)[1]:find('Read a', 1, true), 'the plan shown: ' .. vim.inspect(H.lines(0)) .. vim.inspect(got))
  local pid = require('agentd.client').pids[H.root]
  local environ = H.read('/proc/' .. pid .. '/environ') or ''
  H.truthy(environ:find('OPENAI_API_KEY=key-from-setup', 1, true), 'the key is in the daemon\'s environment')
end

-- :Agent rules lists the remembered rules and revokes the one picked
-- (agentd/policy/get, agentd/policy/set revoke).
function C.rules_list_and_revoke()
  H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  H.answer_select(function(items)
    for _, it in ipairs(items) do
      if it.kind == 'allow_always' then
        return it
      end
    end
    return items[1]
  end)
  local ab = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'cmd', steps = { { id = 'hello', tool = 'run_command', args = { command = 'echo hi' } } } })))
  vim.cmd.buffer(ab)
  a.run({ plan_id = pid })
  H.wait_run()
  local rules = H.truthy(require('agentd.rules').list(), 'rules')
  H.eq(1, #rules, 'the "always allow" answer made a rule')
  vim.cmd('Agent rules list')
  H.truthy(table.concat(H.lines(0), '\n'):find('echo hi', 1, true), 'listed: ' .. table.concat(H.lines(0), '\n'))
  vim.cmd('close')
  vim.cmd('Agent rules')
  H.wait(function() return #require('agentd.rules').list() == 0 end, 'the picked rule revoked')
end

-- :Agent undo undoes the last run (agentd/undo/run), :Agent undo-restore
-- the last restore (agentd/undo/restore): the journal is the server's.
function C.undo_run_and_restore()
  local root = H.workspace({ ['a.txt'] = numbered(10) })
  H.setup()
  local b = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(C._edit_plan('a.txt', { { oldText = 'line 3\n', newText = 'line three\n' } })))
  vim.cmd.buffer(b)
  a.run({ plan_id = pid })
  H.wait_hunks(b, 1)
  vim.cmd('Agent accept all')
  H.wait_run()
  vim.cmd('write')
  H.eq(numbered(10):gsub('line 3\n', 'line three\n'), H.read(root .. '/a.txt'), 'the run changed a.txt')
  vim.cmd('Agent undo')
  H.eq(numbered(10), H.read(root .. '/a.txt'), ':Agent undo put the run back')
  H.eq(numbered(10), H.text(b), 'and the buffer')
  vim.cmd('Agent undo-restore')
  H.eq(numbered(10):gsub('line 3\n', 'line three\n'), H.read(root .. '/a.txt'), ':Agent undo-restore undid that')
end


-- :Agent undo names what the undo could not take back, in the server's
-- words (agentd/undo/run's leftovers): here of a run made at the terminal
-- that committed and staged in the user's repository.
function C.undo_names_leftovers()
  local root = H.workspace({ ['a.txt'] = 'a\n' })
  local plan = H.tmp .. '/commit.json'
  H.write(plan, vim.json.encode({ title = 'commit', steps = {
    { id = 'c', tool = 'run_command', args = { command = 'echo n > new.txt && git add new.txt && git commit -qm "add new.txt" && echo s > staged.txt && git add staged.txt' } },
  } }))
  H.sh({ H.bin, 'run', plan, '--yes', '--workspace', root, '--state-dir', H.tmp .. '/state' }, root)
  local got = H.capture_notify()
  H.setup()
  vim.cmd('Agent undo')
  local text
  H.wait(function()
    for _, n in ipairs(got) do
      if n.msg:find('not undone', 1, true) then
        text = n.msg
        return true
      end
    end
  end, 'the leftovers named')
  H.truthy(text:find('the run made 1 commit in your repository', 1, true), text)
  H.truthy(text:find('to take them back too: git revert --no-edit ', 1, true), text)
  H.truthy(text:find('not undone: the run left staged.txt in your index (staged); to unstage: git restore --staged -- staged.txt', 1, true), text)
  H.eq(nil, H.read(root .. '/new.txt'), 'the undo removed the run\'s file')
end

-- The daemon's log lines reach Neovim's LSP log at their own level: its
-- info lines ("agentd serve starting") as INFO, not as errors.
function C.daemon_logs_at_their_level()
  H.workspace({ ['a.txt'] = 'a\n' })
  vim.lsp.set_log_level('info')
  H.setup()
  H.open('a.txt')
  local path = vim.lsp.get_log_path()
  H.wait(function()
    return (H.read(path) or ''):find('agentd serve starting', 1, true) ~= nil
  end, 'the daemon\'s first line in ' .. path)
  local info, as_error = false, false
  for line in (H.read(path) or ''):gmatch('[^\n]+') do
    if line:find('agentd serve starting', 1, true) then
      if line:find('^%[INFO%]') then
        info = true
      end
      if line:find('^%[ERROR%]') then
        as_error = true
      end
    end
  end
  H.eq(true, info, 'logged as INFO: ' .. (H.read(path) or ''):sub(-2000))
  H.eq(false, as_error, 'not as an error')
end

-- One run at a time: :Agent run while a run is paused offers to resume it
-- or cancel it (the core refuses a second run with -32010); nothing is
-- orphaned.
function C.run_while_paused_offers_resume()
  local root = H.workspace({ ['a.txt'] = numbered(5) })
  H.setup()
  local b = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(C._edit_plan('a.txt', { { oldText = 'line 2\n', newText = 'line two\n' } })))
  vim.cmd.buffer(b)
  local first = a.run({ plan_id = pid })
  H.wait_hunks(b, 1)
  vim.cmd('Agent pause')
  H.wait(function() return a.status().status == 'paused' end, 'the run paused')
  local asked = H.answer_select(function(items)
    return items[1]
  end)
  local second = a.run({ plan_id = pid })
  H.eq(nil, second, 'no second run started')
  H.wait(function() return #asked == 1 end, 'the choice offered')
  H.truthy(asked[1].items[1].label:find('Resume run ' .. first, 1, true), 'resume first: ' .. vim.inspect(asked[1].items))
  H.wait(function() return a.status().status == 'running' end, 'the paused run resumed')
  H.eq(first, a.status().run_id, 'the same run')
  vim.cmd('Agent accept all')
  H.eq('completed', H.wait_run().status, 'and it completes')
  vim.cmd('write')
  H.eq(numbered(5):gsub('line 2\n', 'line two\n'), H.read(root .. '/a.txt'), 'its change')
end

-- A step a remembered rule allowed says so, in the plan buffer and the
-- log: "allowed by rule-1 (`echo hi`)" (the step's allowedBy).
function C.allowed_by_rule_shown()
  H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  H.answer_select(function(items)
    for _, it in ipairs(items) do
      if it.kind == 'allow_always' then
        return it
      end
    end
  end)
  local ab = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'cmd', steps = { { id = 'hello', tool = 'run_command', args = { command = 'echo hi' } } } })))
  local pb = vim.api.nvim_get_current_buf()
  vim.cmd.buffer(ab)
  a.run({ plan_id = pid })
  H.eq('completed', H.wait_run().status, 'the first run, answered "always allow"')
  local asked = H.answer_select(function() return nil end)
  a.run({ plan_id = pid })
  H.eq('completed', H.wait_run().status, 'the second run, allowed by the rule')
  H.eq(0, #asked, 'not asked again')
  local rule = require('agentd.rules').list()[1]
  local want = ('allowed by %s (`echo hi`)'):format(rule.id)
  H.wait(function()
    for _, m in ipairs(vim.api.nvim_buf_get_extmarks(pb, require('agentd.plan').ns, 0, -1, { details = true })) do
      if m[4].virt_text and m[4].virt_text[1][1]:find(want, 1, true) then
        return true
      end
    end
  end, 'the plan buffer to say ' .. want)
  H.truthy(table.concat(require('agentd.state').log, '\n'):find(want, 1, true), 'and the log')
end

-- A step whose attempt timed out and is retried shows as retrying (sign and status)
-- until its next attempt ends; the log says why and when.
function C.retrying_step_shown()
  local root = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  H.answer_select(function(items)
    for _, it in ipairs(items) do
      if it.kind == 'allow_always' then
        return it
      end
    end
  end)
  local ab = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'retry', steps = {
    -- The first attempt times out (a retryable error), the second passes.
    { id = 'flaky', tool = 'run_command', args = { command = 'test -f flag || { touch flag; sleep 5; }' }, timeout = '1s', retry = { max = 2, delay = '1s' } },
  } })))
  local pb = vim.api.nvim_get_current_buf()
  vim.cmd.buffer(ab)
  a.run({ plan_id = pid })
  H.wait(function()
    local m = vim.api.nvim_buf_get_extmarks(pb, require('agentd.plan').ns, 0, -1, { details = true })[1]
    return m and m[4].sign_text == '↻ ' and m[4].virt_text[1][1]:find('retrying', 1, true) ~= nil
  end, 'the retrying sign and status in the plan buffer')
  H.eq('completed', H.wait_run().status, 'the second attempt passed')
  H.truthy(table.concat(require('agentd.state').log, '\n'):find('step flaky retrying in 1.0 s', 1, true), 'the log says it: ' .. table.concat(require('agentd.state').log, '\n'))
  H.truthy(H.read(root .. '/flag'), 'the first attempt ran')
end

-- A create is accepted whether or not its buffer was opened first: one
-- file opened (empty, not on disk) before the run, one never opened; both
-- accepted from elsewhere are written, and the open buffer shows the text.
function C.create_accepted_opened_before_or_never()
  local root = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  local ab = H.open('a.txt')
  vim.cmd.edit(vim.fn.fnameescape(root .. '/early.txt'))
  local eb = vim.api.nvim_get_current_buf()
  vim.wait(100)
  H.eq(0, #vim.lsp.get_clients({ bufnr = eb, name = 'agentd' }), 'the empty buffer of a missing file is not sent as the file')
  vim.cmd.buffer(ab)
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'two new', steps = {
    { id = 'early', tool = 'write_file', args = { path = 'early.txt', content = 'opened before\n' } },
    { id = 'never', tool = 'write_file', args = { path = 'never.txt', content = 'never opened\n' } },
  } })))
  vim.cmd.buffer(ab)
  a.run({ plan_id = pid })
  local review = require('agentd.review')
  H.wait(function() return review.pending_count() == 2 end, 'two creates proposed')
  vim.cmd('Agent accept all')
  H.eq('completed', H.wait_run().status, 'the run completes')
  H.eq('opened before\n', H.read(root .. '/early.txt'), 'the file opened before is written')
  H.eq('never opened\n', H.read(root .. '/never.txt'), 'the file never opened is written')
  H.eq({ 'opened before' }, H.lines(eb), 'the early buffer shows it')
  H.eq(false, vim.bo[eb].modified, 'and is not modified')
  H.eq(0, review.pending_count(), 'nothing pending')
end
-- The review model against the wire: editors/testdata/changesets.json holds
-- change sets exactly as agentd sends them and what each must show; the VS
-- Code unit tests read the same file (editors/vscode/test/unit/wire.test.ts),
-- so the two editors cannot drift. Whole files are one unit whatever hunks
-- they list for display; the set's counts stay current after a didChange.
function C.review_model_matches_wire()
  local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
  local path = here .. '/../../testdata/changesets.json'
  local fx = vim.json.decode(table.concat(H.truthy(vim.fn.readfile(path), path), '\n'))
  local review = require('agentd.review')
  local function check(cs, want, only)
    local id = cs.id
    H.eq(want.status, cs.status, id .. ': status')
    H.eq(want.counts, review.set_counts(cs), id .. ': counts')
    H.eq(want.open, review.open_units(review.set_counts(cs)), id .. ': open units')
    if want.reasonToModel ~= nil then
      H.eq(want.reasonToModel, review.reason_to_model(id), id .. ": a rejection asks for a reason (the wire's reasonToModel)")
    end
    if not only then
      H.eq(#want.files, #cs.files, id .. ': files')
    end
    for _, fw in ipairs(want.files) do
      local f
      for _, x in ipairs(cs.files) do
        if x.uri == fw.uri then
          f = x
        end
      end
      local what = id .. ' ' .. fw.uri
      H.truthy(f, what .. ' listed')
      H.eq(fw.status, f.status, what .. ': status')
      H.eq(fw.counts, review.file_counts(f), what .. ': counts')
      H.eq(fw.open, review.open_units(review.file_counts(f)), what .. ': open units')
      -- The units the user decides: one for a whole file, else each hunk;
      -- their statuses add up to the wire's counts.
      local units = review.units(f)
      H.eq(fw.units, #units, what .. ': decision units')
      local by = { pending = 0, accepted = 0, rejected = 0, stale = 0 }
      for _, u in ipairs(units) do
        by[u.status] = by[u.status] + 1
      end
      H.eq({ pending = fw.counts.pending, accepted = fw.counts.accepted, rejected = fw.counts.rejected, stale = fw.counts.stale }, by, what .. ': units by status')
      if fw.hunks then
        local hs = {}
        for _, h in ipairs(f.hunks or {}) do
          hs[h.id] = h.status
        end
        H.eq(fw.hunks, hs, what .. ': hunk statuses')
      end
      -- Where each hunk is drawn when no anchor tracks it (a buffer
      -- opened later, or read again): the wire's `at`, whatever the
      -- decisions of the other hunks did to the ranges.
      if fw.at then
        local at = {}
        for _, h in ipairs(f.hunks or {}) do
          at[h.id] = review.hunk_start(cs, h)
        end
        H.eq(fw.at, at, what .. ': where each hunk starts')
      end
    end
  end
  H.truthy(#fx.sets >= 3, 'the fixture has its sets')
  for _, c in ipairs(fx.sets) do
    review.put(vim.deepcopy(c.set))
  end
  for _, c in ipairs(fx.sets) do
    check(review.sets[c.set.id], c.expect)
  end
  H.eq(fx.total_open, review.pending_count(), 'pending over all sets (the statusline)')
  -- agentd/changes/didChange notices in order: the set's status and counts
  -- are the notice's (never a sum over the files the plugin holds).
  H.truthy(#fx.didChanges >= 4, 'the fixture has its notices')
  for _, step in ipairs(fx.didChanges) do
    review.on_did_change(vim.deepcopy(step.params))
    local ok, err = pcall(check, review.sets[step.params.changeId], step.expect, true)
    H.truthy(ok, step.about .. ': ' .. tostring(err))
    H.eq(step.total_open, review.pending_count(), step.about .. ': pending over all sets')
  end
end

-- A workspace that is the user's home directory is refused, and the
-- message says how to confirm it in Neovim (setup's allow_broad_workspace),
-- not with a terminal flag; with the option, the daemon opens it.
function C.broad_workspace_refused_then_allowed()
  H.workspace({ ['a.txt'] = 'a\n' })
  local home = vim.env.HOME
  vim.env.HOME = H.root -- the daemon inherits it: the workspace is "home"
  local got = H.capture_notify()
  -- Whether the refused client already counts as stopped when the refusal
  -- is said (before its process has exited): then no buffer joins it.
  local capture, stopped_when_said, refused_id = vim.notify, nil, nil
  vim.notify = function(msg, level)
    if stopped_when_said == nil and msg:find('home directory', 1, true) then
      local c = vim.lsp.get_clients({ name = 'agentd', _uninitialized = true })[1]
      stopped_when_said = c == nil or c.is_stopped()
      refused_id = c and c.id
    end
    capture(msg, level)
  end
  H.setup()
  vim.cmd.edit(vim.fn.fnameescape(H.root .. '/a.txt'))
  local said = function()
    for _, n in ipairs(got) do
      if n.msg:find('home directory', 1, true) then
        return n.msg
      end
    end
  end
  H.wait(said, 'a refusal naming the home directory: ' .. vim.inspect(got))
  local msg = said()
  H.truthy(msg:find('allow_broad_workspace', 1, true), 'names the Neovim option: ' .. msg)
  H.eq(nil, msg:find('--workspace DIR', 1, true), 'no terminal flag in an editor: ' .. msg)
  H.eq(true, stopped_when_said, 'the refused client counts as stopped from the refusal on')
  -- Confirmed at once, before the refused daemon has exited: the buffer
  -- starts a new daemon rather than joining the one going away.
  H.setup({ allow_broad_workspace = true })
  vim.cmd('bwipeout!')
  H.open('a.txt')
  H.wait(function()
    local c = vim.lsp.get_clients({ name = 'agentd' })[1]
    return c and c.initialized
  end, 'the daemon to open the confirmed workspace')
  -- The refused daemon exits cleanly: the refusal is the one thing said.
  H.wait(function() return refused_id and vim.lsp.get_client_by_id(refused_id) == nil end, 'the refused daemon to exit')
  for _, n in ipairs(got) do
    H.eq(nil, n.msg:find('exit code', 1, true), 'only the refusal is said: ' .. n.msg)
  end
  vim.env.HOME = home
end

-- With Neovim's own vim.notify (which echoes one cut line per message),
-- the refusal is echoed whole: its fix is at its end.
function C.broad_workspace_refusal_echoed_whole()
  H.workspace({ ['a.txt'] = 'a\n' })
  local home = vim.env.HOME
  vim.env.HOME = H.root
  H.setup()
  H.truthy(require('agentd.notify').builtin(), "Neovim's own vim.notify")
  vim.cmd('messages clear')
  vim.cmd.edit(vim.fn.fnameescape(H.root .. '/a.txt'))
  local function messages()
    return vim.api.nvim_exec2('messages', { output = true }).output
  end
  H.wait(function() return messages():find('home directory', 1, true) end, 'the refusal echoed: ' .. messages())
  H.truthy(messages():find('allow_broad_workspace = true', 1, true), 'the fix is shown: ' .. messages())
  H.eq(nil, messages():find('invalid params', 1, true), "the daemon's sentence, not the wire's prefix: " .. messages())
  vim.env.HOME = home
end

-- A decision made at a terminal (agentd review, another process on the
-- same workspace and state dir) reaches the editor without any request:
-- the hunks leave the buffer, the review list and statusline count them
-- decided, and the buffer reloaded from disk holds what the terminal left.
function C.terminal_review_reaches_editor()
  local b, _, a = after_two_hunks()
  vim.cmd('write')
  H.wait(function() return a.statusline():find('2 hunks', 1, true) ~= nil end, 'the statusline to count 2 hunks: ' .. a.statusline())
  -- At the terminal: split, take the first hunk out, keep the second.
  local r = vim.system({ H.bin, 'review', '--state-dir', H.tmp .. '/state', '--workspace', H.root },
    { cwd = H.root, text = true, stdin = 's\nn\ny\n' }):wait(30000)
  H.eq(0, r.code, 'agentd review: ' .. (r.stdout or '') .. (r.stderr or ''))
  local want = numbered(20):gsub('line 15\n', 'line 15\nline 15b\n')
  H.eq(want, H.read(H.root .. '/a.txt'), 'the terminal took the first hunk out of the disk')
  H.wait_hunks(b, 0, 'the hunks decided at the terminal to leave the buffer')
  local rv = require('agentd.review')
  H.eq(0, rv.pending_count(), 'nothing left to review')
  local counts
  for _, id in ipairs(rv.order) do
    counts = rv.set_counts(rv.sets[id])
  end
  H.eq({ pending = 0, accepted = 1, rejected = 1, stale = 0, total = 2 }, counts, 'the set as the terminal decided it')
  H.eq(nil, a.statusline():find('hunk', 1, true), 'the statusline counts no hunk: ' .. a.statusline())
  -- The buffer (unmodified, 'autoread') follows the disk at once, not at
  -- the next focus change.
  H.wait(function() return H.text(b) == want end, 'the buffer to hold what the terminal left: ' .. H.text(b))
  H.wait_hunks(b, 0, 'no hunk comes back after the reload')
end

-- The client recipe (docs/protocol.md, "decide all"): accept all asks the
-- server which sets are open (agentd/changes/list) and sends one decision
-- per set without a hunk id, so a set the plugin has not drawn yet (its
-- changeProposed held back here) is decided too.
function C.accept_all_decides_set_not_drawn_yet()
  H.workspace({ ['a.txt'] = numbered(20) })
  H.setup()
  local b = H.open('a.txt')
  local review = require('agentd.review')
  local held = {}
  local proposed = review.proposed
  review.proposed = function(cs) held[#held + 1] = cs end
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(edit_plan('a.txt', two_edits)))
  vim.cmd.buffer(b)
  a.run({ plan_id = pid })
  H.wait(function() return #held == 1 end, 'the change set proposed (and held back from the plugin)')
  review.proposed = proposed
  H.eq(0, #a.hunks(b), 'nothing drawn yet')
  vim.cmd('Agent accept all')
  local want = numbered(20):gsub('line 3\n', 'line three\n'):gsub('line 15\n', 'line 15\nline 15b\n')
  H.wait(function() return H.text(b) == want end, 'both hunks accepted into the buffer: ' .. H.text(b))
  H.eq(0, review.pending_count(), 'nothing pending')
  H.eq({ pending = 0, accepted = 2, rejected = 0, stale = 0, total = 2 }, review.set_counts(review.sets[held[1].id]), 'the plugin holds the set as the server decided it')
end

-- The client recipe, "decide all": a hunk decided in another agentd
-- process (agentd review at a terminal) before the plugin heard of it
-- (its didChange held back here): accept all leaves the server to decide
-- what is still open, so the other hunk is accepted and the terminal's
-- rejection stands, with no refusal.
function C.accept_all_after_terminal_decided_one()
  local b = start_two()
  local review = require('agentd.review')
  local on_did_change = review.on_did_change
  review.on_did_change = function() end
  -- At the terminal: hunk by hunk, leave the first out; the input ends
  -- there, so the second stays pending.
  local r = vim.system({ H.bin, 'review', '--state-dir', H.tmp .. '/state', '--workspace', H.root },
    { cwd = H.root, text = true, stdin = 's\nn\n' }):wait(30000)
  H.wait(function()
    local cs = require('agentd.client').request_sync(nil, 'agentd/changes/get', { changeId = review.order[1] })
    return cs and cs.counts.rejected == 1 and cs.counts.pending == 1
  end, 'the daemon to hold the terminal\'s decision: ' .. (r.stdout or '') .. (r.stderr or ''))
  H.eq(2, #require('agentd').hunks(b), 'the plugin still draws both hunks')
  local got = H.capture_notify()
  vim.cmd('Agent accept all')
  review.on_did_change = on_did_change
  H.wait_hunks(b, 0, 'both hunks decided')
  H.eq(numbered(20):gsub('line 15\n', 'line 15\nline 15b\n'), H.text(b), 'the second hunk accepted, the first left out as the terminal decided')
  for _, n in ipairs(got) do
    H.truthy(n.level < vim.log.levels.WARN, 'no refusal or warning: ' .. vim.inspect(got))
  end
  H.eq({ pending = 0, accepted = 1, rejected = 1, stale = 0, total = 2 }, review.set_counts(review.sets[review.order[1]]), 'the set as the server has it')
end

-- The client recipe, "a stale hunk id": typing re-anchors a hunk (new id)
-- and ga is pressed before the plugin heard of it (the didChange held
-- back). The server refuses the old id; the plugin does not guess which
-- new hunk it meant: it fetches the set, redraws it, says so in one line,
-- and decides nothing. Pressed again, ga accepts the hunk now drawn.
function C.stale_hunk_id_redrawn_not_guessed()
  local b = start_two()
  local a = require('agentd')
  local review = require('agentd.review')
  local old_ids = vim.tbl_map(function(h) return h.id end, a.hunks(b))
  local change_id = a.hunks(b)[1].change_id
  local on_did_change = review.on_did_change
  review.on_did_change = function() end
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  feed('Otyped one<Esc>')
  feed('otyped two<Esc>')
  H.wait(function()
    local cs = require('agentd.client').request_sync(nil, 'agentd/changes/get', { changeId = change_id })
    return cs and cs.files[1].hunks[1].id ~= old_ids[1]
  end, 'the server to re-anchor the first hunk (a new id)')
  review.on_did_change = on_did_change
  H.eq(old_ids[1], a.hunks(b)[1].id, 'the plugin still draws the old id')
  local got = H.capture_notify()
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  vim.cmd('normal ga')
  local said = {}
  for _, n in ipairs(got) do
    said[#said + 1] = n.msg
  end
  said = table.concat(said, '\n')
  H.truthy(said:find('redrawn', 1, true) and said:find('decide again', 1, true), 'says the change was redrawn and to decide again: ' .. said)
  H.eq(1, #vim.split(vim.trim(said), '\n'), 'in one line: ' .. said)
  H.eq('typed one\ntyped two\n' .. numbered(20), H.text(b), 'nothing decided')
  local hs = a.hunks(b)
  H.eq(2, #hs, 'both hunks drawn')
  H.truthy(hs[1].id ~= old_ids[1] and hs[1].lnum == 5, 'the first hunk redrawn with its new id: ' .. vim.inspect(hs))
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  vim.cmd('normal ga')
  H.wait_hunks(b, 1, 'decided again, it is accepted')
  H.eq('typed one\ntyped two\n' .. numbered(20):gsub('line 3\n', 'line three\n'), H.text(b), 'the hunk drawn is the one accepted')
end

-- Issue 38 ("Undo is a revert"), point 1: a line the user types into the
-- buffer while the agent's hunk is pending, accepted and written, stays
-- through :Agent undo; only the agent's change goes, on disk and in the
-- buffer.
function C.undo_keeps_line_typed_during_run()
  local root = H.workspace({ ['a.txt'] = numbered(10) })
  H.setup()
  local b = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(edit_plan('a.txt', { { oldText = 'line 3\n', newText = 'line three\n' } })))
  vim.cmd.buffer(b)
  a.run({ plan_id = pid })
  local old_id = H.wait_hunks(b, 1)[1].id
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  feed('OUSER-TYPED-DURING-RUN<Esc>')
  -- The server rebases the hunk onto the typing (its context holds it: a
  -- new id), one line lower.
  H.wait(function()
    local hs = a.hunks(b)
    return #hs == 1 and hs[1].id ~= old_id and hs[1].lnum == 4 and hs[1].status == 'pending'
  end, 'the hunk rebased onto the typed line: ' .. vim.inspect(a.hunks(b)))
  vim.api.nvim_win_set_cursor(0, { 4, 0 })
  vim.cmd('normal ga')
  H.wait_hunks(b, 0)
  H.wait_run()
  vim.cmd('write')
  local typed = 'USER-TYPED-DURING-RUN\n'
  H.eq(typed .. numbered(10):gsub('line 3\n', 'line three\n'), H.read(root .. '/a.txt'), 'the typed line and the agent\'s change on disk')
  H.answer_select(function() error('no conflict: :Agent undo must not ask') end)
  vim.cmd('Agent undo')
  H.eq(typed .. numbered(10), H.read(root .. '/a.txt'), ':Agent undo took the agent\'s change and kept the typed line')
  H.wait(function() return H.text(b) == typed .. numbered(10) end, 'the buffer to follow: ' .. H.text(b))
  H.eq(false, vim.bo[b].modified, 'the reloaded buffer is not modified')
end

-- Issue 38 point 5: a run edits a.txt and b.txt, the user then changes the
-- agent's own line in b.txt and a line of c.txt (a file the run never
-- touched). :Agent undo changes nothing until the user picks one of the
-- choices vim.ui.select offers. Returns the root, the run id, what the
-- select was asked, and the buffers of a.txt and b.txt.
local function conflicting_undo(pick)
  local root = H.workspace({ ['a.txt'] = numbered(10), ['b.txt'] = numbered(10), ['c.txt'] = numbered(5), ['o.txt'] = 'o\n' })
  H.setup()
  local ob = H.open('o.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(two_file_plan()))
  vim.cmd.buffer(ob)
  local rid = H.truthy(a.run({ plan_id = pid }), 'run id')
  H.wait(function() return require('agentd.review').pending_count() == 2 end, 'two hunks')
  vim.cmd('Agent accept all')
  H.wait_run()
  local ab = H.open('a.txt')
  local bb = H.open('b.txt')
  H.eq('line five', H.lines(bb)[5], 'the agent\'s line in b.txt')
  vim.api.nvim_buf_set_lines(bb, 4, 5, false, { 'line five, mine' })
  vim.cmd('write')
  local cb = H.open('c.txt')
  vim.api.nvim_buf_set_lines(cb, 1, 2, false, { 'line 2, mine' })
  vim.cmd('write')
  vim.cmd.buffer(ob)
  local st = {
    root = root, rid = rid, ab = ab, bb = bb,
    agent_a = numbered(10):gsub('line 3\n', 'line three\n'),
    user_b = numbered(10):gsub('line 5\n', 'line five, mine\n'),
    user_c = numbered(5):gsub('line 2\n', 'line 2, mine\n'),
  }
  st.disk = function()
    return { a = H.read(root .. '/a.txt'), b = H.read(root .. '/b.txt'), c = H.read(root .. '/c.txt') }
  end
  st.got = H.capture_notify()
  st.asked = {}
  local before = { a = st.agent_a, b = st.user_b, c = st.user_c }
  vim.ui.select = function(items, opts, cb2)
    -- Asked before anything is written.
    H.eq(before, st.disk(), 'nothing changed before the choice')
    local texts = {}
    for _, it in ipairs(items) do
      texts[#texts + 1] = opts.format_item and opts.format_item(it) or tostring(it)
    end
    st.asked[#st.asked + 1] = { items = items, texts = texts, prompt = opts.prompt }
    local choice
    for i, it in ipairs(items) do
      if it.choice == pick then
        choice = items[i]
      end
    end
    H.truthy(choice, 'a choice ' .. pick .. ' among ' .. vim.inspect(texts))
    vim.schedule(function() cb2(choice) end)
  end
  vim.cmd('Agent undo')
  H.wait(function() return #st.asked == 1 end, 'the undo to ask what to do')
  local asked = st.asked[1]
  local said = asked.prompt .. '\n' .. table.concat(asked.texts, '\n')
  H.truthy(said:find('b.txt', 1, true), 'the conflicting file named: ' .. said)
  H.truthy(said:find(rid, 1, true), 'the run named: ' .. said)
  H.eq({ 'keep', 'overwrite', 'diff', 'cancel' }, vim.tbl_map(function(it) return it.choice end, asked.items), 'the choices')
  st.never_c = function()
    local all = said
    for _, n in ipairs(st.got) do
      all = all .. '\n' .. n.msg
    end
    H.eq(nil, all:find('c.txt', 1, true), 'c.txt, which the run never touched, is never named: ' .. all)
  end
  return st
end

-- Keep: the rest of the run is undone, b.txt stays as the user has it.
function C.undo_conflict_keep()
  local st = conflicting_undo('keep')
  H.wait(function() return st.disk().a == numbered(10) end, 'a.txt undone: ' .. vim.inspect(st.disk()))
  H.eq({ a = numbered(10), b = st.user_b, c = st.user_c }, st.disk(), 'a.txt undone, b.txt and c.txt as the user has them')
  H.eq(numbered(10), H.text(st.ab), 'a.txt\'s buffer reloaded')
  H.eq(st.user_b, H.text(st.bb), 'b.txt\'s buffer as it was')
  H.wait(function() return #st.got > 0 end, 'a report')
  H.truthy(st.got[#st.got].msg:find('b.txt', 1, true), 'b.txt named as kept: ' .. st.got[#st.got].msg)
  st.never_c()
end

-- Cancel: nothing changes, and the way out is said with the run's id.
function C.undo_conflict_cancel()
  local st = conflicting_undo('cancel')
  H.wait(function() return #st.got > 0 end, 'the way out said')
  H.eq({ a = st.agent_a, b = st.user_b, c = st.user_c }, st.disk(), 'nothing changed')
  H.truthy(st.got[#st.got].msg:find(':Agent undo ' .. st.rid .. ' keep', 1, true), 'the hint names the run: ' .. st.got[#st.got].msg)
  st.never_c()
end

-- Overwrite: b.txt is undone too; the safety snapshot's way back, typed as
-- said, brings the user's b.txt back.
function C.undo_conflict_overwrite()
  local st = conflicting_undo('overwrite')
  H.wait(function() return st.disk().b == numbered(10) end, 'b.txt overwritten: ' .. vim.inspect(st.disk()))
  H.eq({ a = numbered(10), b = numbered(10), c = st.user_c }, st.disk(), 'both files undone, c.txt untouched')
  H.eq(numbered(10), H.text(st.bb), 'b.txt\'s buffer reloaded')
  H.wait(function() return #st.got > 0 end, 'a report')
  local msg = st.got[#st.got].msg
  local back = H.truthy(msg:match(':(Agent undo%-restore[^;\n]*) puts it back'), 'the way back said: ' .. msg)
  st.never_c()
  vim.cmd(back)
  H.eq({ a = st.agent_a, b = st.user_b, c = st.user_c }, st.disk(), vim.inspect(back) .. ' put the run and the user\'s b.txt back')
  H.eq(st.user_b, H.text(st.bb), 'and b.txt\'s buffer')
end

-- Show: the conflicts as a diff in a split (the file now against what
-- overwriting writes); nothing changes.
function C.undo_conflict_diff()
  local st = conflicting_undo('diff')
  H.wait(function() return vim.bo.filetype == 'diff' end, 'a diff split')
  local text = table.concat(H.lines(0), '\n')
  H.truthy(text:find('-line five, mine', 1, true) and text:find('+line 5', 1, true), 'the conflict as a diff: ' .. text)
  H.truthy(text:find(':Agent undo ' .. st.rid .. ' keep', 1, true) and text:find(':Agent undo! ' .. st.rid, 1, true), 'the choices as commands naming the run: ' .. text)
  H.eq({ a = st.agent_a, b = st.user_b, c = st.user_c }, st.disk(), 'nothing changed')
  H.eq(nil, text:find('c.txt', 1, true), 'c.txt not in the diff')
  st.never_c()
end

-- Issue 38 point 6: after a conflicting undo of the second run, each
-- command the hint prints, typed as printed, does what it says for that
-- run: never the run before, never a file neither run touched.
local function hint_case(which)
  local root = H.workspace({ ['x.txt'] = numbered(5), ['a.txt'] = numbered(10), ['b.txt'] = numbered(10), ['c.txt'] = numbered(5), ['o.txt'] = 'o\n' })
  H.setup()
  local ob = H.open('o.txt')
  local a = require('agentd')
  local p1 = H.truthy(a.open_plan(edit_plan('x.txt', { { oldText = 'line 1\n', newText = 'line one\n' } })))
  vim.cmd.buffer(ob)
  local r1 = H.truthy(a.run({ plan_id = p1 }), 'run 1')
  H.wait(function() return require('agentd.review').pending_count() == 1 end, 'run 1\'s hunk')
  vim.cmd('Agent accept all')
  H.wait_run()
  local p2 = H.truthy(a.open_plan(two_file_plan()))
  vim.cmd.buffer(ob)
  local r2 = H.truthy(a.run({ plan_id = p2 }), 'run 2')
  H.truthy(r1 ~= r2, 'two runs')
  H.wait(function() return require('agentd.review').pending_count() == 2 end, 'run 2\'s hunks')
  vim.cmd('Agent accept all')
  H.wait_run()
  local x1 = numbered(5):gsub('line 1\n', 'line one\n')
  H.eq(x1, H.read(root .. '/x.txt'), 'run 1 changed x.txt')
  -- The user's edits: the agent's line in b.txt, and c.txt (no run's).
  local user_b = numbered(10):gsub('line 5\n', 'line five, mine\n')
  local user_c = numbered(5):gsub('line 2\n', 'line 2, mine\n')
  H.write(root .. '/b.txt', user_b)
  H.write(root .. '/c.txt', user_c)
  local got = H.capture_notify()
  H.answer_select(function() return nil end) -- dismissed
  vim.cmd('Agent undo')
  local msg
  H.wait(function()
    for _, n in ipairs(got) do
      if n.msg:find(':Agent undo', 1, true) then
        msg = n.msg
        return true
      end
    end
  end, 'the way out said: ' .. vim.inspect(got))
  local disk = function()
    return { x = H.read(root .. '/x.txt'), a = H.read(root .. '/a.txt'), b = H.read(root .. '/b.txt'), c = H.read(root .. '/c.txt') }
  end
  local agent_a = numbered(10):gsub('line 3\n', 'line three\n')
  H.eq({ x = x1, a = agent_a, b = user_b, c = user_c }, disk(), 'a dismissed choice changes nothing')
  local cmd
  if which == 'keep' then
    cmd = H.truthy(msg:match(':(Agent undo %S+ keep)'), 'a keep command in: ' .. msg)
  else
    cmd = H.truthy(msg:match(':(Agent undo! %S+)'), 'an overwrite command in: ' .. msg)
  end
  H.truthy(cmd:find(r2, 1, true), 'the command names run 2 (' .. r2 .. '): ' .. cmd)
  vim.cmd(cmd)
  local want_b = which == 'keep' and user_b or numbered(10)
  H.wait(function() return disk().a == numbered(10) end, cmd .. ' to undo run 2: ' .. vim.inspect(disk()))
  H.eq({ x = x1, a = numbered(10), b = want_b, c = user_c }, disk(), cmd .. ' undid run 2 alone, as it said')
end

function C.undo_hint_keep_as_typed()
  hint_case('keep')
end

function C.undo_hint_overwrite_as_typed()
  hint_case('overwrite')
end

-- Issue 35 point 7: :Agent undo! (as the help writes it) and :Agent! undo
-- are the same command, not an unknown subcommand.
function C.undo_bang_forms()
  H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  H.open('a.txt')
  local got = H.capture_notify()
  for _, form in ipairs({ 'Agent undo!', 'Agent! undo', 'Agent undo-restore!' }) do
    vim.cmd(form)
    local msg = got[#got] and got[#got].msg or ''
    H.eq(nil, msg:find('unknown subcommand', 1, true), form .. ': ' .. msg)
    H.truthy(msg:find('undo', 1, true), form .. ' answered by the server: ' .. msg)
  end
end


-- Issue 35 point 7: ]h in a buffer whose hunks are all decided goes to the
-- next file's hunk (the docs' promise), and goes away once nothing is left.
function C.next_hunk_from_decided_buffer()
  local root = H.workspace({ ['a.txt'] = numbered(10), ['b.txt'] = numbered(10) })
  H.setup()
  local b = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(two_file_plan()))
  vim.cmd.buffer(b)
  a.run({ plan_id = pid })
  local review = require('agentd.review')
  H.wait(function() return review.pending_count() == 2 end, 'both changes proposed')
  H.wait_hunks(b, 1)
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  vim.cmd('normal ga')
  H.wait_hunks(b, 0, 'a.txt decided')
  H.truthy(vim.fn.maparg(']h', 'n') ~= '', ']h still mapped in a.txt while b.txt has a hunk')
  vim.cmd('normal ]h')
  H.truthy(vim.api.nvim_buf_get_name(0):match('b%.txt$'), ']h went to b.txt: ' .. vim.api.nvim_buf_get_name(0))
  H.eq(5, vim.fn.line('.'), 'on its hunk')
  vim.cmd('normal ga')
  H.wait(function() return review.pending_count() == 0 end, 'nothing pending')
  H.wait(function() return vim.fn.maparg(']h', 'n') == '' end, ']h unmapped in b.txt once nothing is left')
  vim.cmd.buffer(b)
  H.eq('', vim.fn.maparg(']h', 'n'), 'and in a.txt')
  H.truthy(root, 'root')
end

-- Issue 35 point 7: the answer to ga naming conflicts, and the step's
-- failure that follows, are echoed whole with Neovim's own vim.notify, one
-- line per file, not cut at the command line.
function C.conflict_messages_not_cut()
  local root = H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  local ab = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(H.plan({ title = 'create', steps = {
    { id = 'mk', tool = 'write_file', args = { path = 'new.txt', content = 'one\ntwo\n' } },
  } })))
  vim.cmd.buffer(ab)
  a.run({ plan_id = pid })
  local review = require('agentd.review')
  H.wait(function() return review.pending_count() == 1 end, 'the create to be proposed')
  H.write(root .. '/new.txt', 'mine\n')
  vim.cmd.edit(root .. '/new.txt')
  H.wait(function() return vim.fn.maparg('ga', 'n') ~= '' end, 'the creation drawn with its keys')
  H.truthy(require('agentd.notify').builtin(), "Neovim's own vim.notify")
  H.answer_select(function() return nil end)
  vim.cmd('messages clear')
  vim.cmd('normal ga')
  local out
  H.wait(function()
    out = vim.api.nvim_exec2('messages', { output = true }).output
    return out:find('new.txt', 1, true) ~= nil
  end, 'the conflict said')
  H.truthy(out:find('or reject it', 1, true), 'the whole message, to its end: ' .. out)
  H.eq(nil, out:find('(:Agent log)', 1, true), 'not cut: ' .. out)
end

-- Issue 35 point 7: the quickfix list counts a hunk's changed lines, not
-- its context lines: a one-line change is +1 -1.
function C.quickfix_counts_changed_lines()
  start_two()
  local items = require('agentd').review()
  H.eq(2, #items, 'two entries')
  H.truthy(items[1].text:find('+1 -1 line three', 1, true), 'one line changed: ' .. items[1].text)
  H.truthy(items[2].text:find('+1 -0 line 15b', 1, true), 'one line added: ' .. items[2].text)
end

-- Issue 35 point 7: a CRLF file's proposed lines are drawn without ^M.
function C.crlf_proposed_line_no_cr()
  H.workspace({ ['a.txt'] = 'ONE\r\nTWO\r\nTHREE\r\n' })
  H.setup()
  local b = H.open('a.txt')
  H.eq('dos', vim.bo[b].fileformat, 'read as a CRLF file')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(edit_plan('a.txt', { { oldText = 'TWO', newText = 'TWO2' } })))
  vim.cmd.buffer(b)
  a.run({ plan_id = pid })
  H.wait_hunks(b, 1)
  local shown = {}
  for _, m in ipairs(ext_details(b, require('agentd.review').ns)) do
    for _, vl in ipairs(m[4].virt_lines or {}) do
      shown[#shown + 1] = virt_text_of(vl)
    end
  end
  H.eq({ 'TWO2' }, shown, 'the proposed line, without a carriage return')
  local items = a.review()
  H.eq(nil, items[1].text:find('\r', 1, true), 'nor in the quickfix list: ' .. vim.inspect(items[1].text))
end

-- Issue 35 point 7: a skipped step says so once in the plan buffer, not
-- "(skipped)  skipped".
function C.plan_skipped_said_once()
  H.workspace({ ['a.txt'] = 'a\n' })
  H.setup()
  H.open('a.txt')
  require('agentd').open_plan(H.plan({ title = 'p', steps = {
    { id = 's1', tool = 'read_file', args = { path = 'a.txt' }, skip = true },
  } }))
  local pb = vim.api.nvim_get_current_buf()
  local text = H.lines(pb)[2]
  for _, m in ipairs(ext_details(pb, -1)) do
    for _, c in ipairs(m[4].virt_text or {}) do
      text = text .. c[1]
    end
  end
  local _, n = text:gsub('skipped', '')
  H.eq(1, n, 'skipped said once: ' .. text)
end

-- Issue 35 point 7: with the binary missing, :checkhealth agentd names the
-- fixes (:Lazy build agentd, $AGENTD_RELEASE_URL, make build), and says
-- where the model and its key come from.
function C.checkhealth_names_fixes()
  H.workspace({ ['a.txt'] = 'a\n' })
  H.setup({ cmd = { '/nonexistent/agentd', 'serve' }, model = { provider = 'openai', model = 'gpt-x', api_key = 'sk-test' } })
  vim.cmd('checkhealth agentd')
  local text = table.concat(H.lines(0), '\n')
  H.truthy(text:find(':Lazy build agentd', 1, true), ':Lazy build named:\n' .. text)
  H.truthy(text:find('AGENTD_RELEASE_URL', 1, true), '$AGENTD_RELEASE_URL named:\n' .. text)
  H.truthy(text:find('make build', 1, true), 'make build named:\n' .. text)
  H.truthy(text:find('openai:gpt-x (from setup({ model = ... })); key from model.api_key, given to the daemon as $OPENAI_API_KEY', 1, true), 'the model and its key\'s source:\n' .. text)
end


-- Issue 35 point 7: with no Go and no network, the build says what failed
-- (the URL, curl's error) and the three ways on; :checkhealth agentd
-- names the same and keeps the last failure. The network is a closed
-- local port: nothing leaves the machine.
function C.install_offline_says_what_to_do()
  H.workspace({ ['a.txt'] = 'a\n' })
  local tcp = vim.uv.new_tcp()
  tcp:bind('127.0.0.1', 0)
  local port = tcp:getsockname().port
  tcp:close() -- nothing listens there now
  local url = ('http://127.0.0.1:%d/agentd-release'):format(port)
  local path = vim.env.PATH
  vim.env.PATH = '/usr/bin:/bin'
  vim.env.AGENTD_RELEASE_URL = url
  H.eq(0, vim.fn.executable('go'), 'no Go on this PATH')
  local root = H.tmp .. '/plugin-root'
  vim.fn.mkdir(root, 'p')
  local ok, err = pcall(require('agentd.install').build, root)
  -- lazy.nvim runs the repository's build.lua the same way: its output.
  local repo = require('agentd.install').repo_root()
  local r = vim.system({ H.nvim, '--headless', '-u', 'NONE', '-i', 'NONE', '-n', '-l', repo .. '/build.lua' }, { text = true }):wait(60000)
  vim.env.PATH = path
  vim.env.AGENTD_RELEASE_URL = nil
  H.eq(false, ok, 'the build failed')
  err = tostring(err)
  for _, want in ipairs({ url .. '/SHA256SUMS', 'curl: (7)', 'no Go on PATH', 'AGENTD_RELEASE_URL', 'file:///', ':Lazy build agentd', 'install Go', "cmd = { '/path/to/agentd', 'serve' }" }) do
    H.truthy(err:find(want, 1, true), 'the build\'s message names ' .. want .. ':\n' .. err)
  end
  local out = (r.stdout or '') .. (r.stderr or '')
  H.truthy(r.code ~= 0 and out:find('curl: (7)', 1, true) and out:find('AGENTD_RELEASE_URL', 1, true) and out:find(':Lazy build agentd', 1, true),
    'build.lua (what lazy runs) says the same:\n' .. out)
  H.eq(0, vim.fn.filereadable(require('agentd.install').binary(root)), 'nothing installed')
  -- :checkhealth agentd with no binary: the fixes, and the last failure.
  H.setup({ cmd = { '/nonexistent/agentd', 'serve' } })
  vim.cmd('checkhealth agentd')
  local text = table.concat(H.lines(0), '\n')
  for _, want in ipairs({ ':Lazy build agentd', 'AGENTD_RELEASE_URL', 'install Go', 'the last :Lazy build agentd failed', url, 'curl: (7)' }) do
    H.truthy(text:find(want, 1, true), 'checkhealth names ' .. want .. ':\n' .. text)
  end
end

-- Issue 35 point 7 / issue 37: :Agent model sets the model while the daemon
-- runs; the next plan goes to it at the fake model server, with no restart;
-- :checkhealth agentd says which model and from where; completion offers
-- the providers, known models and subcommands.
function C.model_set_without_restart()
  vim.env.AGENTD_MODEL, vim.env.OPENAI_API_KEY, vim.env.OPENAI_BASE_URL = nil, nil, nil
  H.workspace({ ['a.txt'] = 'a\n' })
  local url = H.fakemodel({ { text = vim.json.encode({ title = 'Read a', steps = { { id = 'read', tool = 'read_file', args = { path = 'a.txt' } } } }) } })
  H.setup()
  H.open('a.txt')
  local pid = require('agentd.client').pids[H.root]
  local got = H.capture_notify()
  vim.cmd('Agent plan read a.txt')
  H.truthy(got[#got] and got[#got].msg:find(':Agent model', 1, true), 'without a model, :Agent plan names :Agent model: ' .. vim.inspect(got))
  local comp = vim.fn.getcompletion('Agent model ', 'cmdline')
  for _, want in ipairs({ 'key', 'reset', 'openai:', 'anthropic:', 'ollama:', 'openai:gpt-4o' }) do
    H.truthy(vim.tbl_contains(comp, want), 'completes ' .. want .. ': ' .. vim.inspect(comp))
  end
  vim.cmd('Agent model openai:fake-picked ' .. url)
  H.truthy(got[#got].msg:find('model openai:fake-picked', 1, true) and got[#got].msg:find('from :Agent model', 1, true), 'said: ' .. got[#got].msg)
  vim.cmd('Agent plan read a.txt')
  H.wait(function() return (H.lines(0)[1] or ''):find('Read a', 1, true) ~= nil end, 'the plan from the model set in the editor')
  H.eq(pid, require('agentd.client').pids[H.root], 'the same daemon (no restart)')
  local r = vim.system({ 'curl', '-fsS', url:gsub('/v1$', '') .. '/requests' }, { text = true }):wait(10000)
  local bodies = vim.json.decode(r.stdout)
  H.eq(1, #bodies, 'one model call')
  H.eq('fake-picked', bodies[1].model, 'the plan went to the model set with :Agent model')
  vim.cmd('checkhealth agentd')
  local text = table.concat(H.lines(0), '\n')
  H.truthy(text:find('OK model openai:fake-picked (openai:fake-picked at ' .. url .. ') from :Agent model', 1, true), 'checkhealth names the model and its source:\n' .. text)
end

-- The API key typed for :Agent model key (inputsecret) reaches the daemon
-- and nowhere else: not the command-line or input history, not :messages,
-- not a shada file written after, not lsp.log at debug level, not the
-- plugin's log, not :checkhealth (which says it is set and from where).
-- Driven in an interactive child Neovim: the keys take the real input path.
function C.model_key_not_kept()
  vim.env.AGENTD_MODEL, vim.env.OPENAI_API_KEY = nil, nil
  H.workspace({ ['a.txt'] = 'a\n' })
  local key = 'sk-typed-secret-0451'
  local o = H.child()
  local lsplog = H.tmp .. '/lsp-state'
  o.lua(([[
    vim.env.XDG_STATE_HOME = %q
    vim.o.shadafile = '' -- the child runs with -i NONE; :wshada below writes as a user's Neovim would
    vim.o.shada = "!,'100,<50,s10,h,:100,@100,/100" -- what a user's shada keeps: every history
    vim.lsp.set_log_level('debug')
    require('agentd').setup({ cmd = { %q, 'serve' }, state_dir = %q, notify_steps = false,
      model = { provider = 'openai', model = 'fake', baseUrl = 'http://127.0.0.1:9/v1' } })
    vim.cmd.edit(%q)
  ]]):format(lsplog, H.bin, H.tmp .. '/state', H.root .. '/a.txt'))
  H.wait(function()
    return o.lua([[local c = vim.lsp.get_clients({ name = 'agentd' })[1] return c ~= nil and c.initialized]])
  end, 'the child\'s daemon')
  o.input(':Agent model key<CR>')
  local mode
  local ok = vim.wait(15000, function()
    mode = o.lua('return { vim.api.nvim_get_mode().mode, vim.fn.getcmdtype() }')
    return mode[1] == 'c' and (mode[2] == '@' or mode[2] == '-') -- inputsecret()'s prompt, not the : line
  end, 10)
  H.truthy(ok, 'the key prompt: ' .. vim.inspect(mode) .. vim.inspect(o.lua("return vim.fn.execute('messages')")))
  o.input(key .. '<CR>')
  local info
  H.wait(function()
    info = o.lua([[
      local c = vim.lsp.get_clients({ name = 'agentd' })[1]
      return require('agentd.client').request_sync(c, 'agentd/model/get', vim.empty_dict(), 5000)
    ]])
    return info and info.key and info.key.set
  end, 'the key to reach the daemon')
  H.eq('command', info.key.source, 'the key came from the editor')
  local shada = H.tmp .. '/after.shada'
  local seen = o.lua(([[
    vim.cmd('checkhealth agentd')
    local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
    vim.cmd('wshada! %s')
    local hist = {}
    for _, h in ipairs({ 'cmd', 'search', 'expr', 'input', 'debug' }) do
      for i = 1, vim.fn.histnr(h) do
        hist[#hist + 1] = vim.fn.histget(h, i)
      end
    end
    local f = io.open(%q, 'rb')
    local sh = f and f:read('*a') or ''
    if f then f:close() end
    local lf = io.open(vim.lsp.get_log_path(), 'rb')
    local ll = lf and lf:read('*a') or ''
    if lf then lf:close() end
    return { health = health, hist = table.concat(hist, '\n'), messages = vim.fn.execute('messages'), shada = sh,
      lsplog = ll, log = table.concat(require('agentd.state').log, '\n'), cmdline = vim.fn.getreg(':') }
  ]]):format(shada, shada))
  H.truthy(#seen.shada > 0 and #seen.lsplog > 0, ('the shada file (%d bytes) and lsp.log (%d bytes) were written'):format(#seen.shada, #seen.lsplog))
  H.truthy(seen.hist:find('Agent model key', 1, true), 'the command is in the history: ' .. seen.hist)
  for what, text in pairs(seen) do
    H.truthy(not text:find(key, 1, true), 'the key is in ' .. what .. ':\n' .. text)
  end
  H.truthy(seen.health:find('API key typed in :Agent model key', 1, true), 'checkhealth says where the key came from:\n' .. seen.health)
end
-- :Agent chat's cases live in chat_cases.lua.
require('chat_cases')(C)

return C
