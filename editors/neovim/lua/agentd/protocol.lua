-- The agentd protocol version the plugin speaks, and the refusal of a
-- daemon of another one (initialize result,
-- capabilities.experimental.agentd.protocolVersion).
local M = {}

M.VERSION = 2

--- Why a daemon answering initialize with protocol version `got` cannot be
--- used, naming both versions and the fix; nil when it matches.
---@param got any
---@param bin string
---@return string|nil
function M.problem(got, bin)
  if got == M.VERSION then
    return nil
  end
  local theirs = type(got) == 'number' and ('protocol ' .. got) or 'no protocol version (an agentd older than protocol 2)'
  local fix
  if type(got) == 'number' and got > M.VERSION then
    fix = 'update the plugin (:Lazy update agentd), or point cmd at an agentd that speaks protocol ' .. M.VERSION
  else
    fix = 'update agentd (:Lazy build agentd, or `make build` in the checkout), or use the plugin version that matches it'
  end
  return ('agentd: the plugin speaks protocol %d, but %s speaks %s: %s.'):format(M.VERSION, bin, theirs, fix)
end

--- on_init for vim.lsp.start: stops a client whose daemon speaks another
--- protocol, and says so once; true when it did.
function M.on_init(client, result)
  local got = vim.tbl_get(result or {}, 'capabilities', 'experimental', 'agentd', 'protocolVersion')
  local cmd = client.config and client.config.cmd
  local bin = type(cmd) == 'table' and cmd[1] or (require('agentd.client').command() or {})[1] or 'agentd'
  local msg = M.problem(got, bin)
  if msg then
    vim.schedule(function()
      vim.notify(msg, vim.log.levels.ERROR)
      vim.lsp.stop_client(client.id, true)
    end)
    return true
  end
  return false
end

return M
