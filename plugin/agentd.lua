-- The Neovim plugin lives in editors/neovim. A plugin manager that loads the
-- repository's root (lazy.nvim: { 'agentd/agentd', main = 'agentd', opts = {} })
-- gets it through this file: editors/neovim joins the runtimepath, and its
-- plugin/ scripts run once. A spec can also point `dir` at editors/neovim.
local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
local sub = root .. '/editors/neovim'
if vim.g.loaded_agentd_root or vim.fn.isdirectory(sub) == 0 then
  return
end
vim.g.loaded_agentd_root = true
if not vim.tbl_contains(vim.opt.rtp:get(), sub) then
  vim.opt.rtp:append(sub)
end
for _, f in ipairs(vim.fn.glob(sub .. '/plugin/*.lua', false, true)) do
  dofile(f)
end
