package main

import (
	"fmt"
	"io"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/session"
)

// printUndoLeftovers is what agentd undo adds after restoring a run:
// what it could not take back (commits, staged files, files left out of
// snapshots), in the session's words (session.Leftovers, the same in
// every front end), and the terminal's own way to raise the size limit.
func printUndoLeftovers(w io.Writer, l *session.Leftovers) {
	if l == nil {
		return
	}
	fmt.Fprintln(w, l.Text)
	if len(l.BigFiles) > 0 {
		fmt.Fprintln(w, "  (for one run: agentd run --max-file-size SIZE)")
	}
}

// mayHaveChanged reports whether the run may have changed the workspace:
// files changed, or a step that writes or runs commands started. A run of
// read-only steps (failed or not) has nothing to undo.
func mayHaveChanged(st *engine.RunState) bool {
	if len(st.FilesChanged) > 0 {
		return true
	}
	plan := st.FinalPlan
	if plan == nil {
		plan = st.OriginalPlan
	}
	if plan == nil {
		return true
	}
	started := map[string]bool{}
	for _, s := range st.Steps {
		started[s.ID] = s.Attempts > 0
	}
	reg := session.BuiltinTools()
	for _, s := range plan.Steps {
		if !started[s.ID] {
			continue
		}
		if s.EffectiveKind() != plans.KindTool {
			if s.EffectiveKind() == plans.KindAgent {
				return true
			}
			continue
		}
		if t, ok := reg.Get(s.Tool); !ok || t.Category() != session.CategoryRead {
			return true
		}
	}
	return false
}
