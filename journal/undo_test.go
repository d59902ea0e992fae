package journal

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Undo steps back: the newest run not yet undone, then the one before; a
// run without snapshots is named, never skipped over.
func TestRunToUndo(t *testing.T) {
	if _, err := RunToUndo(nil, ""); !errors.Is(err, ErrNothingToUndo) {
		t.Fatalf("no runs: %v, want ErrNothingToUndo", err)
	}
	t0 := time.Now()
	runs := []RunHead{ // newest first
		{RunID: "run-dry", Status: "completed", StartTime: t0.Add(3 * time.Second), DryRun: true}, // changed nothing: passed over
		{RunID: "run-bb", Status: "completed", StartTime: t0.Add(2 * time.Second)},                // changed files without snapshots
		{RunID: "run-aa2", Status: "completed", StartTime: t0.Add(time.Second), Snapshots: []string{"s3"}},
		{RunID: "run-aa1", Status: "completed", StartTime: t0, Snapshots: []string{"s1", "s2"}},
	}
	var ns *NoSnapshotsError
	if _, err := RunToUndo(runs, ""); !errors.As(err, &ns) || ns.RunID != "run-bb" || err.Error() != "the last run (run-bb) took no snapshots" {
		t.Fatalf("newest without snapshots: %v, want it named", err)
	}
	runs = runs[1:]
	runs[0].Undone = &Undone{How: HowUndo}
	if st, err := RunToUndo(runs, ""); err != nil || st.RunID != "run-aa2" {
		t.Fatalf("after the newest is undone: %v %v, want run-aa2", st, err)
	}
	runs[1].Undone = &Undone{How: HowRollback}
	if st, err := RunToUndo(runs, ""); err != nil || st.RunID != "run-aa1" {
		t.Fatalf("stepping back: %v %v, want run-aa1", st, err)
	}
	runs[2].Undone = &Undone{How: HowUndo}
	if _, err := RunToUndo(runs, ""); !errors.Is(err, ErrNothingToUndo) {
		t.Fatalf("all undone: %v, want ErrNothingToUndo", err)
	}
	// By id: a run undone already is refused, naming it (its way back is
	// the undo of its undo); one whose undo kept files as the user had
	// them may be undone again (that takes them back too).
	if _, err := RunToUndo(runs, "run-aa1"); !errors.Is(err, ErrNothingToUndo) || !strings.Contains(err.Error(), "run run-aa1 is undone already") {
		t.Fatalf("by id, undone already: %v, want it refused and named", err)
	}
	runs[2].Undone.Kept = []string{"a.txt"}
	if st, err := RunToUndo(runs, "run-aa1"); err != nil || st.Snapshots[0] != "s1" {
		t.Fatalf("by id, undone with files kept: %v %v", st, err)
	}
	if _, err := RunToUndo(runs, "run-aa"); !errors.Is(err, ErrAmbiguousRun) {
		t.Fatalf("prefix of two: %v, want ErrAmbiguousRun", err)
	}
	if _, err := RunToUndo(runs, "nope"); !errors.Is(err, ErrNoSuchRun) {
		t.Fatalf("unknown: %v, want ErrNoSuchRun", err)
	}
	runs[0].Status, runs[0].Undone = "running", nil
	if _, err := RunToUndo(runs, ""); !errors.Is(err, ErrRunStillActive) {
		t.Fatalf("running: %v, want ErrRunStillActive", err)
	}
}

// The restore "undo restore" means is the newest not yet undone, and the
// record survives reopening the journal.
func TestRestoreToUndo(t *testing.T) {
	state, root := t.TempDir(), t.TempDir()
	j, err := Open(state, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.RestoreToUndo(""); !errors.Is(err, ErrNoRestoreToUndo) {
		t.Fatalf("none: %v", err)
	}
	t0 := time.Now().UTC()
	a, _ := j.RecordRestore(Restore{At: t0, SnapshotID: "s1", Before: "b1"})
	b, _ := j.RecordRestore(Restore{At: t0.Add(time.Second), SnapshotID: "s2", Before: "b2"})
	if _, err := j.RecordRestore(Restore{At: t0.Add(2 * time.Second), SnapshotID: "b2", Before: "b3", Undo: b.ID}); err != nil {
		t.Fatal(err)
	}
	j2, _ := Open(state, root, nil)
	r, err := j2.RestoreToUndo("")
	if err != nil || r.ID != b.ID {
		t.Fatalf("newest: %+v %v, want %s (an undo's own restore does not count)", r, err, b.ID)
	}
	if err := j2.MarkRestoreUndone(*r); err != nil {
		t.Fatal(err)
	}
	if r, err := j2.RestoreToUndo(""); err != nil || r.ID != a.ID {
		t.Fatalf("after undoing it: %+v %v, want %s", r, err, a.ID)
	}
}

// An older run undone out of order (agentd undo RUN) is passed over by
// the plain undo, which walks back over the runs still standing.
func TestRunToUndoAfterAnOlderRunWasUndone(t *testing.T) {
	t0 := time.Now()
	runs := []RunHead{ // newest first
		{RunID: "run-3", Status: "completed", StartTime: t0.Add(2 * time.Second), Snapshots: []string{"s3"}},
		{RunID: "run-2", Status: "completed", StartTime: t0.Add(time.Second), Snapshots: []string{"s2"}, Undone: &Undone{How: HowUndo, Kept: []string{"a.txt"}}},
		{RunID: "run-1", Status: "completed", StartTime: t0, Snapshots: []string{"s1"}},
	}
	for _, want := range []string{"run-3", "run-1"} {
		st, err := RunToUndo(runs, "")
		if err != nil || st.RunID != want {
			t.Fatalf("undo: %v %v, want %s", st, err, want)
		}
		st.Undone = &Undone{How: HowUndo}
	}
	if _, err := RunToUndo(runs, ""); !errors.Is(err, ErrNothingToUndo) {
		t.Fatalf("all undone: %v", err)
	}
}
