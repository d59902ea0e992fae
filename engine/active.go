package engine

import (
	"fmt"
	"sync"
)

// One run at a time per workspace: a run started while another of the same
// workspace is running or paused (in this process or another: the journal
// knows both) would race it for the same files and leave one of them
// orphaned in the user's lists. Start refuses it with an *ActiveRunError
// unless RunOptions.Concurrent asks for a second run. Dry runs change
// nothing and are never refused. Every front end gets the rule here and
// words the way out its own way (resume or cancel, or a flag).

// ActiveRunError is Start's error when a run of the workspace is running
// or paused.
type ActiveRunError struct {
	RunID  string
	Status RunStatus
}

func (e *ActiveRunError) Error() string {
	return fmt.Sprintf("run %s of this workspace is %s", e.RunID, e.Status)
}

// startMu serialises Start's check for an active run with the journal
// record that makes the new run active, within this process.
var startMu sync.Mutex

// activeRun returns the newest running or paused run of the journal, if
// any.
func activeRun(j *Journal) (*RunState, error) {
	runs, err := j.Runs()
	if err != nil {
		return nil, err
	}
	for i := range runs {
		if runs[i].Status == RunRunning || runs[i].Status == RunPaused {
			return &runs[i], nil
		}
	}
	return nil, nil
}
