-- What the plugin knows from the server: the latest run state, step
-- statuses, the log, and the last restore. Change sets live in review.lua.
local M = {
  run = nil, -- the latest compact RunState of the current run
  run_id = nil,
  steps = {}, -- [runId] = { [stepId] = status }
  log = {}, -- lines for :Agent log
  last_plan = nil, -- the plan id last opened or created
  last_undo = nil, -- undoSnapshotId of the last restore
  progress = nil, -- the latest $/progress message
}

local MAX_LOG = 5000

function M.append_log(line)
  for l in tostring(line):gmatch('[^\n]+') do
    M.log[#M.log + 1] = l
  end
  if #M.log > MAX_LOG then
    local drop = #M.log - MAX_LOG
    for _ = 1, drop do
      table.remove(M.log, 1)
    end
  end
end

function M.step_status(run_id, step_id)
  return (M.steps[run_id] or {})[step_id]
end

function M.set_step(run_id, step_id, status)
  M.steps[run_id] = M.steps[run_id] or {}
  M.steps[run_id][step_id] = status
end

function M.on_exit(client_id, code, signal)
  -- 130 and 143: stopped on request (Neovim quitting, :lua client.stop()).
  if code ~= 0 and code ~= nil and code ~= 130 and code ~= 143 then
    vim.notify(('agentd: the server stopped (exit code %s%s); see :checkhealth agentd'):format(code, signal ~= 0 and (', signal ' .. signal) or ''), vim.log.levels.WARN)
  end
end

--- The short status string for the statusline.
function M.statusline()
  local parts = {}
  local r = M.run
  if r then
    local s = r.status or '?'
    if s == 'running' or s == 'paused' then
      s = ('%s %d%%'):format(s, math.floor((r.progress or 0) * 100 + 0.5))
    end
    parts[#parts + 1] = s
  end
  local n = require('agentd.review').pending_count()
  if n > 0 then
    parts[#parts + 1] = ('%d hunk%s'):format(n, n == 1 and '' or 's')
  end
  if #parts == 0 then
    return ''
  end
  return 'agentd: ' .. table.concat(parts, ' · ')
end

return M
