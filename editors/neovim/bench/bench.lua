-- Speed of the plugin against the real daemon. Run by bench.sh:
--   nvim --headless -u NONE -i NONE -l bench.lua keystroke|draw
-- Prints one line per figure.
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
package.path = here .. '/../tests/?.lua;' .. package.path
vim.opt.rtp:prepend(vim.fs.dirname(here))
vim.cmd('runtime! plugin/agentd.lua')
local H = require('helpers')
local what = _G.arg[1]

local function median(t)
  table.sort(t)
  return t[math.floor(#t / 2) + 1]
end

local function ms(ns)
  return ns / 1e6
end

-- CPU time of this process (user + system), in ns: unlike wall time it does
-- not count waiting for a core on a busy machine.
local function cpu()
  local r = vim.uv.getrusage()
  return ((r.utime.sec + r.stime.sec) * 1e6 + r.utime.usec + r.stime.usec) * 1e3
end

-- Keystroke cost: 1,000 single-character inserts through the input path
-- (feedkeys, executed at once), in a 5,000-line buffer, with and without
-- agentd (200 pending hunks drawn, client attached, every edit sent).
local function type_keys(n)
  local times, cpus = {}, {}
  for i = 1, n do
    local line = 1 + (i * 37) % 4000
    vim.api.nvim_win_set_cursor(0, { line, 0 })
    local t0, c0 = vim.uv.hrtime(), cpu()
    vim.api.nvim_feedkeys('ix\27', 'nx', false)
    times[#times + 1] = vim.uv.hrtime() - t0
    cpus[#cpus + 1] = cpu() - c0
    vim.api.nvim_feedkeys('x', 'nx', false) -- take it out again (not timed)
    if i % 50 == 0 then
      vim.wait(0)
    end
  end
  return median(times), median(cpus)
end

local function big_file(n)
  local t = {}
  for i = 1, n do
    t[#t + 1] = ('line %d of the benchmark file, with some words to diff'):format(i)
  end
  return table.concat(t, '\n') .. '\n'
end

if what == 'keystroke' then
  local root = H.workspace({ ['big.txt'] = big_file(5000), ['plain.txt'] = big_file(5000) })
  -- Without agentd: the same text, no client, no hunks.
  vim.cmd.edit(root .. '/plain.txt')
  vim.bo.undolevels = -1
  local base, base_cpu = type_keys(1000)
  vim.cmd('bwipeout!')
  H.setup({ notify_steps = false })
  local b = H.open('big.txt')
  vim.bo.undolevels = -1
  local edits = {}
  for i = 1, 200 do
    local l = i * 25 - 5
    edits[#edits + 1] = { oldText = ('line %d of the benchmark file,'):format(l), newText = ('LINE %d of the changed file,'):format(l) }
  end
  local a = require('agentd')
  local pid = a.open_plan(H.plan({ title = 'bench', steps = { { id = 'e', tool = 'edit_file', args = { path = 'big.txt', edits = edits } } } }))
  vim.cmd.buffer(b)
  a.run({ plan_id = pid })
  H.wait(function() return #a.hunks(b) == 200 end, '200 hunks', 60000)
  -- Time each server redraw (agentd/changes/didChange -> extmarks).
  local review = require('agentd.review')
  local redraws = {}
  local orig = review.on_did_change
  review.on_did_change = function(p)
    local t0 = vim.uv.hrtime()
    orig(p)
    redraws[#redraws + 1] = vim.uv.hrtime() - t0
  end
  local with, with_cpu = type_keys(1000)
  vim.wait(2000, function() return false end, 50)
  H.truthy(#a.hunks(b) >= 190, 'hunks still drawn: ' .. #a.hunks(b))
  print(('keystroke median without agentd: %.3f ms'):format(ms(base)))
  print(('keystroke median with 200 pending hunks: %.3f ms'):format(ms(with)))
  print(('keystroke overhead: %.3f ms wall (ratio %.2f); CPU median %.3f ms vs %.3f ms'):format(ms(with - base), with / base, ms(with_cpu), ms(base_cpu)))
  if #redraws > 0 then
    print(('server rebase redraws: %d, median %.3f ms (asynchronous, after the keystroke)'):format(#redraws, ms(median(redraws))))
  end
  H.stop()
elseif what == 'draw' then
  -- One change set of 50 files x 10 hunks (one apply_patch step, review
  -- "before"), every file loaded in a buffer. Measured from the arrival of
  -- the changeProposed notification at the client (its bytes read, before
  -- JSON decoding; with clientFeatures.inlineChanges it carries the change
  -- set) to the extmarks of its hunks: of the displayed buffers, which are
  -- drawn at once; hidden ones are drawn when displayed. Layout 'one': one
  -- window (the other 49 files hidden); 'tabs': every file shown, in its
  -- own tab page, so all 500 hunks are drawn at once. N runs (BENCH_N);
  -- after each, every hunk is rejected and the run ends.
  local layout = _G.arg[2] or 'one'
  local N = tonumber(os.getenv('BENCH_N') or '') or 15
  local files = {}
  for f = 1, 50 do
    files[('f%02d.txt'):format(f)] = big_file(400)
  end
  H.workspace(files)
  H.setup({ notify_steps = false })
  local patch = {}
  for f = 1, 50 do
    local name = ('f%02d.txt'):format(f)
    patch[#patch + 1] = ('--- a/%s\n+++ b/%s\n'):format(name, name)
    for k = 1, 10 do
      local l = k * 35
      patch[#patch + 1] = ('@@ -%d,1 +%d,1 @@\n-line %d of the benchmark file, with some words to diff\n+line %d of the CHANGED file, with more words to diff\n'):format(l, l, l, l)
    end
  end
  H.open('f01.txt') -- starts the client
  local a = require('agentd')
  local review = require('agentd.review')
  local pid = a.open_plan(H.plan({ title = 'draw', steps = { { id = 'p', tool = 'apply_patch', args = { patch = table.concat(patch) } } } }))
  vim.cmd.only() -- the plan buffer stays, hidden
  if layout == 'tabs' then
    vim.o.lines, vim.o.columns = 40, 120
  end
  for f = 2, 50 do
    if layout == 'tabs' then
      vim.cmd.tabnew()
    end
    H.open(('f%02d.txt'):format(f))
  end
  -- The server stamps each event (event.time, wall clock of this machine):
  -- from there to the arrival is the server's hold until the set is
  -- registered, encoding it, and the pipe.
  local function unix_ns(iso)
    local y, mo, d, h, mi, sec, frac = iso:match('^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)%.?(%d*)Z$')
    local t = os.time({ year = y, month = mo, day = d, hour = h, min = mi, sec = sec, isdst = false })
    -- os.time reads the table as local time; the machine runs in UTC (checked below).
    return t * 1e9 + (frac ~= '' and tonumber((frac .. '000000000'):sub(1, 9)) or 0)
  end
  local function now_ns()
    local sec, usec = vim.uv.gettimeofday()
    return sec * 1e9 + usec * 1e3
  end
  -- The clock starts in the LSP client's read loop, when the message's
  -- bytes are handed to the JSON decoder.
  local T
  local decode = vim.json.decode
  vim.json.decode = function(str, opts)
    if T and not T.arrive and str:find('"changeProposed"', 1, true) then
      T.arrive, T.arrive_cpu, T.bytes, T.arrive_wall_ns = vim.uv.hrtime(), cpu(), #str, now_ns()
      local v = decode(str, opts)
      T.decoded = vim.uv.hrtime()
      return v
    end
    return decode(str, opts)
  end
  local utc = os.time(os.date('!*t', 0)) == 0
  local handler = vim.lsp.get_clients({ name = 'agentd' })[1].handlers['agentd/run/didChange']
  vim.lsp.get_clients({ name = 'agentd' })[1].handlers['agentd/run/didChange'] = function(e, p, ctx)
    if T and p.event and p.event.type == 'changeProposed' and utc then
      T.sent = unix_ns(p.event.time)
      T.arrive_wall = T.arrive_wall_ns
    end
    return handler(e, p, ctx)
  end
  local orig_proposed = review.proposed
  review.proposed = function(cs)
    T.handler = vim.uv.hrtime()
    orig_proposed(cs)
    T.drawn, T.drawn_cpu = vim.uv.hrtime(), cpu()
  end
  local function drawn_now()
    local n = 0
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      n = n + #vim.api.nvim_buf_get_extmarks(b, review.ns_anchor, 0, -1, {})
    end
    return n
  end
  local walls, cpus, decodes, queued, at_once, later_ms, transit = {}, {}, {}, {}, nil, {}, {}
  local bytes
  for i = 1, N do
    T = {}
    a.run({ plan_id = pid })
    H.wait(function() return T.drawn ~= nil end, 'the change set drawn', 60000)
    walls[i] = T.drawn - T.arrive
    cpus[i] = T.drawn_cpu - T.arrive_cpu
    decodes[i] = T.decoded - T.arrive
    queued[i] = T.handler - T.decoded
    if T.sent then
      transit[#transit + 1] = T.arrive_wall - T.sent
    end
    bytes = T.bytes
    at_once = drawn_now()
    -- The hidden buffers, drawn as each is shown (BufWinEnter), or here
    -- through hunks(): every hunk must be there.
    local n = 0
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      local t0 = vim.uv.hrtime()
      local k = #a.hunks(b)
      if k > 0 and layout == 'one' and vim.fn.bufwinid(b) == -1 then
        later_ms[#later_ms + 1] = vim.uv.hrtime() - t0
      end
      n = n + k
    end
    H.eq(500, n, 'hunks drawn in run ' .. i)
    a.reject('all', '')
    H.wait_run()
    H.eq(0, drawn_now(), 'hunks left after rejecting all')
  end
  local function stats(t)
    local c = vim.deepcopy(t)
    table.sort(c)
    return ms(c[math.floor(#c / 2) + 1]), ms(c[#c])
  end
  local mw, xw = stats(walls)
  local mc, xc = stats(cpus)
  print(('draw, layout %s: %d of 500 hunks drawn at once (the displayed buffers); %d runs'):format(layout, at_once, N))
  print(('  changeProposed arrival -> extmarks: median %.1f ms, max %.1f ms wall; Neovim CPU over the same span: median %.1f ms, max %.1f ms'):format(mw, xw, mc, xc))
  print(('  of which JSON decoding of the %d KB notification: median %.1f ms; queued until the handler runs: median %.1f ms'):format(math.floor(bytes / 1024), (stats(decodes)), (stats(queued))))
  if #transit > 0 then
    local mt, xt = stats(transit)
    print(('  before the clock: from the event\'s time on the server to its arrival (hold, encoding, pipe): median %.1f ms, max %.1f ms'):format(mt, xt))
  end
  if #later_ms > 0 then
    local ml, xl = stats(later_ms)
    print(('  a hidden buffer drawn when shown (10 hunks): median %.2f ms, max %.2f ms'):format(ml, xl))
  end
  -- Extmark calls of one full draw of every buffer (counted, not timed).
  do
    local set = vim.api.nvim_buf_set_extmark
    local calls = 0
    vim.api.nvim_buf_set_extmark = function(...)
      calls = calls + 1
      return set(...)
    end
    local cs = review.sets[review.order[#review.order]]
    for _, f in ipairs(cs.files) do
      for _, h in ipairs(f.hunks) do
        h.status = 'pending'
      end
    end
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      review.forget(b)
      review.draw(b)
    end
    vim.api.nvim_buf_set_extmark = set
    print(('  extmarks: %d nvim_buf_set_extmark calls to draw the 500 hunks (%.1f per hunk: changed lines, words, virtual lines, anchor with the hint)'):format(calls, calls / 500))
  end
  if os.getenv('PROFILE') then
    -- Sampling profile of drawing every buffer (jit.p, from LuaJIT's
    -- library: LUA_PATH=.../luajit-2.1/?.lua).
    local cs = review.sets[review.order[#review.order]]
    for _, f in ipairs(cs.files) do
      for _, h in ipairs(f.hunks) do
        h.status = 'pending'
      end
    end
    local prof = require('jit.p')
    prof.start(os.getenv('PROFILE'), '/tmp/agentd-prof.txt')
    for _ = 1, 40 do
      for _, b in ipairs(vim.api.nvim_list_bufs()) do
        review.forget(b)
        review.draw(b)
      end
    end
    prof.stop()
  end
  -- The round trip the notification saves: agentd/changes/get of the same set.
  local c = vim.lsp.get_clients({ name = 'agentd' })[1]
  local gt = {}
  for k = 1, 5 do
    local t0 = vim.uv.hrtime()
    require('agentd.client').request_sync(c, 'agentd/changes/get', { changeId = review.order[#review.order] })
    gt[k] = vim.uv.hrtime() - t0
  end
  print(('  (for comparison, an agentd/changes/get round trip of the same set: median %.1f ms)'):format((stats(gt))))
  H.stop()
elseif what == 'startup' then
  local t0 = vim.uv.hrtime()
  require('agentd').setup({ auto_start = false })
  print(('%d'):format(vim.uv.hrtime() - t0))
end
-- Let the daemon go before leaving (a write to its closed pipe would end
-- this Neovim with SIGPIPE).
vim.wait(3000, function() return #vim.lsp.get_clients({ name = 'agentd' }) == 0 end, 20)
os.exit(0)
