local M = {}
function M.setup(opts) end
function M:start() end
local function helper() end
M.stop = function() end
return M
