-- :Agent preview: the change at the cursor in a float the user can
-- scroll, with the review keys.
local config = require('agentd.config')
local S = require('agentd.review.store')
local draw = require('agentd.review.draw')
local files = require('agentd.review.files')
local keys = require('agentd.review.keys')

local api = vim.api
local notify = S.notify
local split_lines, buf_uri = S.split_lines, S.buf_uri
local is_whole, whole_units, proposed_lines = files.is_whole, files.whole_units, files.proposed_lines
local hunk_at_cursor, file_of_hunk = draw.hunk_at_cursor, draw.file_of_hunk

local M = {}

--- The preview of the change at the cursor, in a float the user can
--- scroll (a new file's whole content, with its filetype; a hunk as a
--- diff); the review keys work in it, q closes it.
function M.preview()
  local bufnr = api.nvim_get_current_buf()
  local uri = buf_uri(bufnr)
  local lines, ft, unit, title
  local h = uri and hunk_at_cursor(bufnr)
  local f = h and file_of_hunk(S.sets[h.change_id], h.id)
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
  S.mapped[pb] = nil
  keys.set_keymaps(pb, true)
  return win, pb
end


return M
