package engine

import (
	"errors"
	"fmt"
	"strings"
)

// Why a run cannot be undone (RunToUndo). Front ends add how to go on
// (the command that lists runs, say) in their own words.
var (
	ErrNoSuchRun      = errors.New("no such run in this workspace's journal")
	ErrAmbiguousRun   = errors.New("the ID is the start of several runs' IDs; give more of it")
	ErrNothingToUndo  = errors.New("nothing to undo: no snapshot of the run (it ran with --dry-run or --no-snapshots, or no run took one)")
	ErrRunStillActive = errors.New("the run is still going; cancel it first, then undo it")
)

// RunToUndo is the run an "undo" restores the start of, the one rule for
// every front end: the run whose ID is id or starts with it, or with id ""
// the newest run that took snapshots. Its first snapshot (Snapshots[0]) is
// the workspace before it. A run still running or paused is refused.
func (j *Journal) RunToUndo(id string) (*RunState, error) {
	runs, err := j.Runs()
	if err != nil {
		return nil, err
	}
	var st *RunState
	if id == "" {
		for i := range runs {
			if len(runs[i].Snapshots) > 0 {
				st = &runs[i]
				break
			}
		}
		if st == nil {
			return nil, ErrNothingToUndo
		}
	} else {
		var found []*RunState
		for i := range runs {
			if runs[i].RunID == id {
				found = []*RunState{&runs[i]}
				break
			}
			if strings.HasPrefix(runs[i].RunID, id) {
				found = append(found, &runs[i])
			}
		}
		switch len(found) {
		case 0:
			return nil, fmt.Errorf("run %q: %w", id, ErrNoSuchRun)
		case 1:
			st = found[0]
		default:
			return nil, fmt.Errorf("%q matches %d runs: %w", id, len(found), ErrAmbiguousRun)
		}
		if len(st.Snapshots) == 0 {
			return nil, fmt.Errorf("run %s: %w", st.RunID, ErrNothingToUndo)
		}
	}
	if st.Status == RunRunning || st.Status == RunPaused {
		return nil, fmt.Errorf("run %s is %s: %w", st.RunID, st.Status, ErrRunStillActive)
	}
	return st, nil
}
