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
  -- 50 files x 10 hunks in one change set (one apply_patch step), every
  -- file open in a buffer: time from the changeProposed notification to
  -- the extmarks of all 500 hunks.
  local files = {}
  for f = 1, 50 do
    files[('f%02d.txt'):format(f)] = big_file(400)
  end
  local root = H.workspace(files)
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
  for f = 1, 50 do
    H.open(('f%02d.txt'):format(f))
  end
  local a = require('agentd')
  local pid = a.open_plan(H.plan({ title = 'draw', steps = { { id = 'p', tool = 'apply_patch', args = { patch = table.concat(patch) } } } }))
  local review = require('agentd.review')
  local t_note, t_drawn
  local handlers = require('agentd.handlers').table()
  local c = vim.lsp.get_clients({ name = 'agentd' })[1]
  local orig_handler = c.handlers['agentd/run/didChange']
  c.handlers['agentd/run/didChange'] = function(e, p, ctx)
    if p.event and p.event.type == 'changeProposed' then
      t_note = vim.uv.hrtime()
    end
    return orig_handler(e, p, ctx)
  end
  local orig_fetch = review.fetch
  local fetches = {}
  review.fetch = function(id, cl, tries)
    fetches[#fetches + 1] = { tries or 0, vim.uv.hrtime() }
    return orig_fetch(id, cl, tries)
  end
  local orig_put = review.put
  review.put = function(cs)
    orig_put(cs)
    t_drawn = vim.uv.hrtime()
  end
  a.run({ plan_id = pid })
  H.wait(function() return t_drawn ~= nil end, 'the change set drawn', 60000)
  local n = 0
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    n = n + #a.hunks(b)
  end
  H.eq(500, n, 'hunks drawn')
  print(('draw 50 files / 500 hunks, notification to extmarks: %.1f ms'):format(ms(t_drawn - t_note)))
  -- Of which the round trip of agentd/changes/get (server work, transfer, JSON decoding).
  local gt = {}
  for _ = 1, 5 do
    local t0 = vim.uv.hrtime()
    require('agentd.client').request_sync(c, 'agentd/changes/get', { changeId = review.order[1] })
    gt[#gt + 1] = vim.uv.hrtime() - t0
  end
  print(('  of which agentd/changes/get round trip, median of 5: %.1f ms'):format(ms(median(gt))))
  -- The same drawing alone (no round trip), median of 20 redraws.
  local cs = review.sets[review.order[1]]
  if os.getenv('PROFILE') then
    local prof = require('jit.p')
    prof.start('f', '/tmp/agentd-prof.txt')
    for _ = 1, 5 do
      for _, b in ipairs(vim.api.nvim_list_bufs()) do
        review.forget(b)
      end
      orig_put(cs)
    end
    prof.stop()
  end
  local times, cpus = {}, {}
  for _ = 1, 20 do
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      review.forget(b)
    end
    local t0, c0 = vim.uv.hrtime(), cpu()
    orig_put(cs)
    times[#times + 1] = vim.uv.hrtime() - t0
    cpus[#cpus + 1] = cpu() - c0
  end
  print(('draw 500 hunks from scratch (no round trip), median of 20: %.1f ms wall, %.1f ms CPU'):format(ms(median(times)), ms(median(cpus))))
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
