package engine

import (
	"errors"
	"testing"
	"time"
)

func TestRunToUndo(t *testing.T) {
	j, err := OpenJournal(t.TempDir(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.RunToUndo(""); !errors.Is(err, ErrNothingToUndo) {
		t.Fatalf("empty journal: %v, want ErrNothingToUndo", err)
	}
	t0 := time.Now()
	for _, st := range []RunState{
		{RunID: "run-aa1", Status: RunCompleted, StartTime: t0, Snapshots: []string{"s1", "s2"}},
		{RunID: "run-aa2", Status: RunCompleted, StartTime: t0.Add(time.Second), Snapshots: []string{"s3"}},
		{RunID: "run-bb", Status: RunCompleted, StartTime: t0.Add(2 * time.Second)}, // dry run: no snapshot
	} {
		if err := j.SaveRun(st); err != nil {
			t.Fatal(err)
		}
	}
	st, err := j.RunToUndo("")
	if err != nil || st.RunID != "run-aa2" {
		t.Fatalf("newest with snapshots: %v %v, want run-aa2", st, err)
	}
	if st, err := j.RunToUndo("run-aa1"); err != nil || st.Snapshots[0] != "s1" {
		t.Fatalf("by id: %v %v", st, err)
	}
	if _, err := j.RunToUndo("run-aa"); !errors.Is(err, ErrAmbiguousRun) {
		t.Fatalf("prefix of two: %v, want ErrAmbiguousRun", err)
	}
	if _, err := j.RunToUndo("run-bb"); !errors.Is(err, ErrNothingToUndo) {
		t.Fatalf("run without snapshots: %v, want ErrNothingToUndo", err)
	}
	if _, err := j.RunToUndo("nope"); !errors.Is(err, ErrNoSuchRun) {
		t.Fatalf("unknown: %v, want ErrNoSuchRun", err)
	}
}
