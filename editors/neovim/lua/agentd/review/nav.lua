-- Finding the changes: agentd's one quickfix list (:Agent review), ]h
-- and [h across files.
local client = require('agentd.client')
local S = require('agentd.review.store')
local hunk = require('agentd.review.hunk')
local files = require('agentd.review.files')
local draw = require('agentd.review.draw')
local keys = require('agentd.review.keys')

local api = vim.api
local notify = S.notify
local QF_TITLE = 'agentd review'
local key, is_open, split_lines, loaded_by_uri, hunk_start = S.key, S.is_open, S.split_lines, S.loaded_by_uri, S.hunk_start
local sub_hunks, region = hunk.sub_hunks, hunk.region
local is_whole, proposed_lines = files.is_whole, files.proposed_lines
local drawn_hunks, draw_set = draw.drawn_hunks, draw.draw_set
local set_keymaps = keys.set_keymaps
local anchors, mapped, later = S.anchors, S.mapped, S.later

local M = {}

--- Every open unit, in review order: the quickfix items.
function M.items()
  local items = {}
  local bufs = loaded_by_uri()
  for _, id in ipairs(S.order) do
    local cs = S.sets[id]
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
  if S.pending_count() == 0 then
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
    local cs = S.open_units(s.counts) > 0 and client.request_sync(c, 'agentd/changes/get', { changeId = s.id })
    if cs then
      if not S.sets[cs.id] then
        S.order[#S.order + 1] = cs.id
      end
      S.sets[cs.id] = cs
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
  draw.draw(api.nvim_get_current_buf())
end

--- The preview of the change at the cursor, in a float the user can
--- scroll (a new file's whole content, with its filetype; a hunk as a

return M
