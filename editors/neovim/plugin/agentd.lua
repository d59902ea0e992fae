-- agentd.nvim: defines :Agent only. Everything else loads on first use, so
-- the plugin costs next to nothing at startup.
if vim.g.loaded_agentd or vim.fn.has('nvim-0.10') == 0 then
  return
end
vim.g.loaded_agentd = true

vim.api.nvim_create_user_command('Agent', function(o)
  require('agentd.commands').run(o)
end, {
  nargs = '*',
  bang = true,
  range = true, -- :'<,'>Agent chat
  complete = function(arglead, cmdline, pos)
    return require('agentd.commands').complete(arglead, cmdline, pos)
  end,
  desc = 'agentd: plans, runs, review and snapshots (:help agentd)',
})
