local H = require('helpers')
local C = {}

local function numbered(n)
  local t = {}
  for i = 1, n do
    t[#t + 1] = 'line ' .. i
  end
  return table.concat(t, '\n') .. '\n'
end
C.numbered = numbered

--- A plan with one edit_file step on path with the given edits.
local function edit_plan(path, edits, extra)
  local steps = { { id = 'edit', description = 'edit ' .. path, tool = 'edit_file', args = { path = path, edits = edits } } }
  for _, s in ipairs(extra or {}) do
    steps[#steps + 1] = s
  end
  return H.plan({ title = 'edit ' .. path, steps = steps })
end
C._edit_plan = edit_plan

function C.smoke()
  H.workspace({ ['a.txt'] = numbered(20) })
  H.setup()
  local b = H.open('a.txt')
  local a = require('agentd')
  local pid = H.truthy(a.open_plan(edit_plan('a.txt', { { oldText = 'line 3\n', newText = 'line three\n' }, { oldText = 'line 15\n', newText = 'line 15\nline 15b\n' } })))
  vim.cmd.buffer(b)
  local rid = H.truthy(a.run({ plan_id = pid }))
  local hs = H.wait_hunks(b, 2)
  print(vim.inspect(hs))


end

return C
