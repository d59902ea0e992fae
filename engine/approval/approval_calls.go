package approval

import (
	"encoding/json"

	"github.com/agentd/agentd/engine/tools"
)

// riskOf is the risk of one call: the tool's RiskOf when it assesses calls
// (git: reads low, commit and apply high), else its fixed Risk.
func RiskOf(t tools.Tool, args json.RawMessage) tools.Risk {
	if ra, ok := t.(tools.RiskAssessor); ok {
		if r := ra.RiskOf(args); r != "" {
			return r
		}
	}
	return t.Risk()
}

// mayChangeFiles reports whether a call may change the workspace other than
// through a change set: commands may write anything, and git's actions
// other than its low-risk reads (status, diff, log) change the working tree
// or the repository; a tool that runs in another process (an MCP server's:
// tools.UncheckedWriter) may write anything whatever its category. Such
// calls get a snapshot after their step, so that restore and rollback
// know the agent's own work from the user's.
func MayChangeFiles(t tools.Tool, cat tools.Category, args json.RawMessage) bool {
	if u, ok := t.(tools.UncheckedWriter); ok && u.WritesUnchecked() {
		return true
	}
	switch cat {
	case tools.CategoryCommand:
		return true
	case tools.CategoryGit:
		return RiskOf(t, args) != tools.RiskLow
	}
	return false
}
