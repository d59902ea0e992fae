package main

import (
	"fmt"

	"github.com/agentd/agentd/review"
)

// pendingSets counts the change sets of run runID (every run: "") that
// still have something pending review, per run. A run with --review after
// (or one stopped at a prompt) leaves its changes pending until agentd
// review or an editor decides them.
func pendingSets(sets []*review.Set, runID string) map[string]int {
	n := map[string]int{}
	for _, s := range sets {
		if (runID == "" || s.RunID == runID) && s.Counts().Pending > 0 {
			n[s.RunID]++
		}
	}
	return n
}

// pendingNote is what the run's summary says of its pending change sets:
// how many, and the command that reviews them ("" when none is pending).
func pendingNote(n int, reviewCmd string) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d change set%s pending review (applied, yours to keep or take out): %s", n, plural(n), reviewCmd)
}

// pendingStatus is a run's status in agentd runs with its pending change
// sets: "completed, 2 changes pending review".
func pendingStatus(status string, n int) string {
	if n == 0 {
		return status
	}
	return fmt.Sprintf("%s, %d change%s pending review", status, n, plural(n))
}

// runPending counts the run's change sets still pending in the book.
func (t *terminal) runPending(runID string) int {
	if t.book == nil {
		return 0
	}
	sets := t.book.List()
	n := 0
	t.book.Read(func() { n = pendingSets(sets, runID)[runID] })
	return n
}
