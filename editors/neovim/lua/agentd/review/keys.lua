-- The review keys: buffer-local, only in buffers with something to
-- review, the user's own mappings put back when the hunks are gone.
local config = require('agentd.config')
local S = require('agentd.review.store')

local api = vim.api
local mapped, want_maps, saved_maps = S.mapped, S.want_maps, S.saved_maps

local K = {}

-- The public module, loaded by the time a key is pressed.
local function review()
  return require('agentd.review')
end

local function accept_hunk()
  review().accept('hunk')
end
local function reject_hunk()
  review().reject('hunk')
end
local function accept_file()
  review().accept('file')
end
local function reject_file()
  review().reject('file')
end

local function jump_next()
  review().jump(1)
end
local function jump_prev()
  review().jump(-1)
end
local function preview()
  review().preview()
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
  local want = on and 'all' or ((have and S.pending_count() > 0) and 'nav' or nil)
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

--- Sets or removes the review keymaps of a buffer the user enters.
function K.on_enter(bufnr)
  local on = want_maps[bufnr]
  if on ~= nil then
    want_maps[bufnr] = nil
    set_keymaps(bufnr, on)
  end
end

K.review_maps, K.set_keymaps = review_maps, set_keymaps

return K
