//go:build unix && undorandom

package session

import (
	"fmt"
	"strings"

	"github.com/agentd/agentd/gitops"
)

// The random undo test reaches undo only through these two calls, so
// that the model and the invariant do not depend on the shape of the
// session's results.

// undoOut is an undo's result as the invariant reads it.
type undoOut struct {
	what        string
	applied     bool
	runID       string   // the run undone, if a run
	conflicts   []string // named as conflicts
	kept        []string // conflicting files left as they are
	overwritten []string // replaced; the safety snapshot keeps them
	leftAlone   []string
	safety      string
}

func (o *undoOut) String() string {
	return fmt.Sprintf("applied=%v run=%s conflicts=%v kept=%v overwritten=%v leftAlone=%v safety=%s",
		o.applied, o.runID, o.conflicts, o.kept, o.overwritten, o.leftAlone, short(o.safety))
}

func (w *world) undoRun(id string, choice gitops.ConflictChoice) (*undoOut, error) {
	res, err := w.s.UndoRun(w.ctx, id, gitops.RestoreOptions{Overwrite: choice == gitops.OverwriteConflicts})
	if err != nil {
		return nil, err
	}
	out := fromRestoreResult(res.Restore)
	out.what, out.runID = "of run "+w.runLabel(res.RunID), res.RunID
	return out, nil
}

func (w *world) undoUndo(choice gitops.ConflictChoice) (*undoOut, error) {
	res, err := w.s.UndoRestore(w.ctx, gitops.RestoreOptions{Overwrite: choice == gitops.OverwriteConflicts})
	if err != nil {
		return nil, err
	}
	out := fromRestoreResult(res.Restore)
	out.what = "of the undo " + short(res.Undid.ID)
	return out, nil
}

// The reset-style undo (before issue 38) applies what it can and leaves
// conflicting files alone: kept.
func fromRestoreResult(r *gitops.RestoreResult) *undoOut {
	out := &undoOut{applied: true, safety: r.UndoSnapshot}
	for _, c := range r.Conflicts {
		out.conflicts = append(out.conflicts, c.Path)
		out.kept = append(out.kept, c.Path)
	}
	for _, c := range r.LeftAlone {
		out.leftAlone = append(out.leftAlone, strings.TrimSpace(c.Path))
	}
	return out
}
