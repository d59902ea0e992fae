-- The check harness of the standalone scripts (install.lua, protocol.lua):
-- each check prints ok or FAIL with its detail; done() prints the counts and
-- exits non-zero when any failed. Loaded with dofile from the script's folder.
local M = { passed = 0, failed = 0 }

function M.check(name, ok, detail)
  if ok then
    M.passed = M.passed + 1
    print('ok   ' .. name)
  else
    M.failed = M.failed + 1
    print('FAIL ' .. name .. ': ' .. tostring(detail))
  end
end

function M.done()
  print(('%d passed, %d failed'):format(M.passed, M.failed))
  os.exit(M.failed == 0 and 0 or 1)
end

return M
