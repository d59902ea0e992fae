package engine

import (
	"errors"
	"testing"
	"time"
)

// One run at a time per workspace: while a run is running or paused, a
// second Start on the same journal is refused, naming the run; with
// Concurrent, or as a dry run, it starts; once the first ends, a new one
// starts.
func TestStartRefusesWhileARunIsActive(t *testing.T) {
	h := newHarness()
	j, err := OpenJournal(t.TempDir(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := New(Config{Tools: h.reg, Journal: j})
	slow := mkPlan(t, `[{"id":"a","tool":"op","args":{"sleep":"30s"}}]`)
	quick := mkPlan(t, `[{"id":"b","tool":"op","args":{}}]`)
	first, err := e.Start(t.Context(), slow, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var active *ActiveRunError
	if _, err := e.Start(t.Context(), quick, RunOptions{}); !errors.As(err, &active) || active.RunID != first.ID() || active.Status != RunRunning {
		t.Fatalf("second start while %s runs: %v; want an ActiveRunError naming it as running", first.ID(), err)
	}
	first.Pause()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) { // the journal records the pause
		if a, _ := activeRun(j); a != nil && a.Status == RunPaused {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := e.Start(t.Context(), quick, RunOptions{}); !errors.As(err, &active) || active.Status != RunPaused {
		t.Fatalf("second start while %s is paused: %v; want an ActiveRunError naming it as paused", first.ID(), err)
	}
	for _, opts := range []RunOptions{{Concurrent: true}, {DryRun: true}} {
		r, err := e.Start(t.Context(), quick, opts)
		if err != nil {
			t.Fatalf("start with %+v while a run is paused: %v", opts, err)
		}
		if _, err := r.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	first.Cancel()
	if _, err := first.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st, _ := runPlan(t, e, quick, RunOptions{}); st.Status != RunCompleted {
		t.Fatalf("a run after the active one ended: %s", st.Status)
	}
}
