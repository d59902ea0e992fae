-- What the plugin tells the user. A notification must never queue a
-- "Press ENTER" prompt: one lands between two approval prompts, and the
-- Enter that dismisses it must not answer anything. With Neovim's own
-- vim.notify (which echoes, and stops at a hit-enter prompt for a message
-- longer than the command line), the message is echoed on one line that
-- fits, and the whole text goes to :Agent log. A vim.notify of the user's
-- (nvim-notify, fidget, noice, a test) gets the whole message. A message
-- that must be read whole to act on, and that no prompt can be waiting
-- behind, is echoed whole, one line per line ({ whole = true }): a daemon
-- that refused to start (nothing of it ran), the answer to a key the user
-- just pressed (ga: each conflicting file in full), a run's end naming the
-- files still unsaved.
local M = {}

local hl = {
  [vim.log.levels.ERROR] = 'ErrorMsg',
  [vim.log.levels.WARN] = 'WarningMsg',
}

--- Whether vim.notify is Neovim's own (it echoes).
local function builtin()
  local info = debug.getinfo(vim.notify, 'S')
  return info ~= nil and info.source ~= nil and info.source:find('vim/_editor.lua', 1, true) ~= nil
end
M.builtin = builtin

--- The first line of msg, cut to fit the command line (one screen line),
--- and whether anything was left out.
function M.one_line(msg, width)
  local first = msg:match('^[^\n]*')
  local cut = first ~= msg
  if vim.api.nvim_strwidth(first) > width then
    local n = vim.fn.strchars(first)
    while n > 0 and vim.api.nvim_strwidth(vim.fn.strcharpart(first, 0, n)) > width do
      n = n - 1
    end
    first = vim.fn.strcharpart(first, 0, n)
    cut = true
  end
  return first, cut
end

function M.notify(msg, level, opts)
  level = level or vim.log.levels.INFO
  if not builtin() then
    vim.notify(msg, level)
    return
  end
  if level < vim.log.levels.INFO then
    return
  end
  require('agentd.state').append_log(msg)
  if opts and opts.whole then
    vim.api.nvim_echo({ { msg, hl[level] } }, true, {})
    return
  end
  local more = ' (:Agent log)'
  local width = math.max(vim.v.echospace, 20) - 1
  local line, cut = M.one_line(msg, width)
  if cut then
    line = M.one_line(line, width - #more) .. more
  end
  vim.api.nvim_echo({ { line, hl[level] } }, true, {})
end

return M
