-- Whole-file units: a creation, deletion, move or binary file, decided
-- as one unit (the server's `whole`; its id is the file's uri). Drawn as a
-- hint on the first line, a creation's content below it.
local config = require('agentd.config')
local client = require('agentd.client')
local S = require('agentd.review.store')
local pad = require('agentd.review.hunk').pad

local api = vim.api
local ns_whole = S.ns_whole
local is_open, files_for_uri, split_lines = S.is_open, S.files_for_uri, S.split_lines

local F = {}

--- Whether a file is decided as one unit (the server's `whole`: a create,
--- delete, move or binary file). Its hunks, if listed, are for display; its
--- unit id is its path relative to the workspace, and a decision names it
--- by uri.
local function is_whole(f)
  return f.whole == true
end

--- The whole-file units still open for uri.
local function whole_units(uri)
  local out = {}
  for _, sf in ipairs(files_for_uri(uri)) do
    local f = sf.file
    if is_whole(f) and is_open(f.status) then
      out[#out + 1] = sf
    end
  end
  return out
end

--- The proposed text of a whole file (a create's content), from the hunks
--- listed for display.
local function proposed_lines(f)
  local lines = {}
  for _, h in ipairs(f.hunks or {}) do
    vim.list_extend(lines, split_lines(h.newText))
  end
  return lines
end

--- Draws the open whole-file units of a buffer: a hint on the first line;
--- a create's content below it (visible at once: virtual lines above line
--- 1 are not), a delete's lines marked as going. Returns the units.
local function draw_whole(bufnr, uri)
  api.nvim_buf_clear_namespace(bufnr, ns_whole, 0, -1)
  local wholes = whole_units(uri)
  local count = api.nvim_buf_line_count(bufnr)
  for _, sf in ipairs(wholes) do
    local f, cs = sf.file, sf.set
    local km = config.options.keymaps
    local keys = {}
    for _, k in ipairs({ { km.accept, 'accept' }, { km.reject, 'reject' }, { km.preview, 'preview' } }) do
      if k[1] then
        keys[#keys + 1] = k[1] .. ' ' .. k[2]
      end
    end
    local what = ({
      create = cs.review == 'after' and 'created this file' or ('proposes this new file (%d lines)'):format(#proposed_lines(f)),
      delete = cs.review == 'after' and 'deleted this file' or 'deletes this file',
      move = ('moves %s here'):format(f.oldUri and vim.fn.fnamemodify(vim.uri_to_fname(f.oldUri), ':~:.') or 'a file'),
    })[f.op] or (f.op .. ' (decided as a whole)')
    local opts = {
      virt_text = { { ('  agentd: step %s %s  %s'):format(cs.stepId or cs.id, what, table.concat(keys, '  ')), f.status == 'stale' and 'AgentdStale' or 'AgentdHint' } },
      virt_text_pos = 'eol',
    }
    local empty = count == 1 and (api.nvim_buf_get_lines(bufnr, 0, 1, false)[1] or '') == ''
    if f.op == 'create' and cs.review ~= 'after' and empty then
      local lines = proposed_lines(f)
      if #lines > 0 then
        local vl = {}
        for _, l in ipairs(lines) do
          vl[#vl + 1] = pad({ { l, 'AgentdAdd' } }, 'AgentdAdd')
        end
        opts.virt_lines = vl
      end
    end
    api.nvim_buf_set_extmark(bufnr, ns_whole, 0, 0, opts)
    local mark_all = (f.op == 'delete' and cs.review ~= 'after') and 'AgentdDelete' or ((f.op == 'create' and cs.review == 'after') and 'AgentdAdd' or nil)
    if mark_all and not empty then
      api.nvim_buf_set_extmark(bufnr, ns_whole, 0, 0, { end_row = count - 1, end_col = #(api.nvim_buf_get_lines(bufnr, count - 1, count, false)[1] or ''), hl_group = mark_all, hl_eol = true, priority = 90, strict = false })
    end
  end
  return wholes
end

--- The loaded buffer of a file a decision changed on disk while the buffer
--- was not shown to the server (a new file opened before it existed): read
--- again when the user has not edited it, so the buffer shows what is on
--- disk; then it is shown to the server. Buffers the server sees get the
--- change themselves (workspace/applyEdit).
local function reload_unshown(f)
  local b = vim.fn.bufnr(vim.uri_to_fname(f.uri))
  if b <= 0 or not api.nvim_buf_is_loaded(b) or vim.bo[b].modified then
    return
  end
  local c = client.get(client.root_of(b))
  if c and vim.lsp.buf_is_attached(b, c.id) then
    return -- the server edits it itself (workspace/applyEdit)
  end
  if vim.uv.fs_stat(vim.uri_to_fname(f.uri)) then
    api.nvim_buf_call(b, function()
      vim.cmd('silent edit!')
    end)
  end
end


F.is_whole, F.whole_units, F.proposed_lines, F.draw_whole, F.reload_unshown = is_whole, whole_units, proposed_lines, draw_whole, reload_unshown

return F
