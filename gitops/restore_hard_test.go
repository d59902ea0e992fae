package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// The restore's hard cases that hold on every platform (restore_attack_test.go
// has the POSIX-only ones: symlink races, FIFOs, modes, unreadable directories).

// TestRestoreFileWhereIgnoredDirectory is the report's repro: a restore
// that must put a file where a directory with ignored files is leaves it
// alone, restores the rest, and leaves no journal behind.
func TestRestoreFileWhereIgnoredDirectory(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{".gitignore": "*.log\n", "out": "f\n", "a.txt": "a\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	s0, _ := s.Snapshot(ctx, SnapshotOptions{RunID: "r"})
	os.Remove(filepath.Join(root, "out"))
	writeTree(t, root, map[string]string{"out/x.log": "x\n", "a.txt": "mine\n"})
	res, err := s.Restore(ctx, s0.ID, RestoreOptions{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.LeftAlone) != 1 || res.LeftAlone[0].Path != "out" {
		t.Fatalf("left alone: %+v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "out/x.log")); string(b) != "x\n" {
		t.Fatalf("the ignored file was touched: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "a\n" {
		t.Fatalf("a.txt = %q", b)
	}
	if _, err := s.List(ctx, ""); err != nil || s.Problem() != nil {
		t.Fatalf("list: %v, problem %v", err, s.Problem())
	}
}

// TestRestoreLongNames: names of 241 to 255 bytes restore (the temporary
// name does not grow with the file's).
func TestRestoreLongNames(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{}
	for n := 241; n <= 255; n++ {
		files["d/"+strings.Repeat("x", n-4)+".txt"] = fmt.Sprintf("%d\n", n)
	}
	writeTree(t, root, files)
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	snap, _ := s.Snapshot(ctx, SnapshotOptions{})
	for p := range files {
		os.WriteFile(filepath.Join(root, p), []byte("changed\n"), 0o644)
	}
	os.Remove(filepath.Join(root, "d/"+strings.Repeat("x", 251)+".txt"))
	if _, err := s.Restore(ctx, snap.ID, RestoreOptions{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	if d := diffStates(mapState(t, root, files), treeState(t, root, false)); len(d) > 0 {
		t.Fatalf("after restore: %v", d)
	}
}

func mapState(t *testing.T, root string, files map[string]string) map[string]string {
	t.Helper()
	tmp := t.TempDir()
	writeTree(t, tmp, files)
	return treeState(t, tmp, false)
}

// TestRestoreRollbackFailsThenRecovers: a restore fails half-way and its
// rollback fails too. The store still lists, says what it could not do and
// which snapshot holds the user's state, refuses protected restores, and
// the next start rolls back (never re-applies the failed restore).
func TestRestoreRollbackFailsThenRecovers(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	s0, _ := s.Snapshot(ctx, SnapshotOptions{RunID: "r"})
	writeTree(t, root, map[string]string{"a.txt": "mine a\n", "b.txt": "mine b\n", "c.txt": "mine c\n"})
	before := treeState(t, root, false)
	var writes atomic.Int32
	testHookApply = func(op restoreOp) error {
		if op.Op == "write" && writes.Add(1) > 1 {
			return errors.New("injected failure")
		}
		return nil
	}
	defer func() { testHookApply = nil }()
	restoreWorkers = 1
	defer func() { restoreWorkers = 8 }()
	_, err := s.Restore(ctx, s0.ID, RestoreOptions{Overwrite: true})
	if err == nil || !strings.Contains(err.Error(), "rolling back failed too") {
		t.Fatalf("want a failed rollback, got %v", err)
	}
	prob := s.Problem()
	if !errors.Is(prob, ErrInterruptedRestore) || !strings.Contains(prob.Error(), "overwriting") || !strings.Contains(prob.Error(), "snapshot store") {
		t.Fatalf("problem: %v", prob)
	}
	if _, err := s.List(ctx, ""); err != nil {
		t.Fatalf("list while stuck: %v", err)
	}
	if _, err := s.Restore(ctx, s0.ID, RestoreOptions{}); !errors.Is(err, ErrInterruptedRestore) {
		t.Fatalf("protected restore while stuck: %v", err)
	}
	testHookApply = nil
	s.Close()
	// The next start rolls back: the user's edits are back.
	s2 := openTestStore(t, root, s.opts)
	if s2.Problem() != nil {
		t.Fatalf("problem after the next start: %v", s2.Problem())
	}
	if d := diffStates(before, treeState(t, root, false)); len(d) > 0 {
		t.Fatalf("not rolled back: %v", d)
	}
}

// TestRestoreStuckThenOverwrite: when the journal cannot be rolled back at
// the next start either, restore --overwrite and Doctor still get the user
// out.
func TestRestoreStuckThenOverwrite(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	s0, _ := s.Snapshot(ctx, SnapshotOptions{RunID: "r"})
	writeTree(t, root, map[string]string{"a.txt": "mine a\n", "b.txt": "mine b\n"})
	testHookApply = func(op restoreOp) error {
		if op.Path == "b.txt" {
			return errors.New("injected failure")
		}
		return nil
	}
	defer func() { testHookApply = nil }()
	res, err := s.Restore(ctx, s0.ID, RestoreOptions{Overwrite: true})
	if err == nil {
		t.Fatalf("restore succeeded: %+v", res)
	}
	s.Close()
	s2 := openTestStore(t, root, s.opts) // the hook still fails b.txt
	if s2.Problem() == nil {
		t.Fatalf("no problem reported although the journal could not be run")
	}
	rep, err := s2.Doctor(ctx)
	if err == nil || rep == nil || !strings.Contains(err.Error(), "snapshot") {
		t.Fatalf("doctor while the cause persists: %+v %v", rep, err)
	}
	testHookApply = nil
	rep, err = s2.Doctor(ctx)
	if err != nil || s2.Problem() != nil || len(rep.Repaired) == 0 {
		t.Fatalf("doctor after the cause is gone: %+v %v (problem %v)", rep, err, s2.Problem())
	}
	for p, want := range map[string]string{"a.txt": "mine a\n", "b.txt": "mine b\n"} {
		if b, _ := os.ReadFile(filepath.Join(root, p)); string(b) != want {
			t.Fatalf("%s = %q, want %q", p, b, want)
		}
	}
}

// TestRestoreNeverDeletesIgnored: a run rewrote .gitignore; restoring its
// start keeps the files the old rules ignored (issue 10, point 5).
func TestRestoreNeverDeletesIgnored(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{".gitignore": ".env\n*.log\n", ".env": "SECRET=1\n", "app.log": "log\n", "a.txt": "a\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	start, _ := s.Snapshot(ctx, SnapshotOptions{RunID: "r"})
	writeTree(t, root, map[string]string{".gitignore": "node_modules/\n"})
	if _, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r", StepID: "s"}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Restore(ctx, start.ID, RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".env", "app.log"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s deleted: %v (%+v)", p, err, res)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".gitignore")); string(b) != ".env\n*.log\n" {
		t.Errorf(".gitignore = %q", b)
	}
}

// TestUndoOfIgnoredNowFile is the report's "undo that cannot undo".
func TestUndoOfIgnoredNowFile(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{".gitignore": "node_modules/\n", "notes.log": "v1\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	s0, _ := s.Snapshot(ctx, SnapshotOptions{})
	writeTree(t, root, map[string]string{".gitignore": "node_modules/\n*.log\n", "notes.log": "v2\n"})
	before := treeState(t, root, true)
	res, err := s.Restore(ctx, s0.ID, RestoreOptions{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "notes.log")); string(b) != "v1\n" {
		t.Fatalf("notes.log = %q after restore", b)
	}
	if _, err := s.Restore(ctx, res.UndoSnapshot, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := diffStates(before, treeState(t, root, true)); len(d) > 0 {
		t.Fatalf("undo is not exact: %v", d)
	}
}
