package gitops

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// diskState reads p as a FileState (nil: absent).
func diskState(t testing.TB, root, p string) *FileState {
	t.Helper()
	abs := filepath.Join(root, filepath.FromSlash(p))
	fi, err := os.Lstat(abs)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		tgt, _ := os.Readlink(abs)
		return &FileState{Data: []byte(tgt), Mode: fs.ModeSymlink}
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		t.Fatal(err)
	}
	return &FileState{Data: data, Mode: fi.Mode().Perm()}
}

// agentWrite is the agent's write of p (after nil: delete), recorded
// first under owner, as the engine does.
func agentWrite(t testing.TB, s *Store, owner, p string, after *FileState) {
	t.Helper()
	before := diskState(t, s.Root(), p)
	if err := s.RecordEdits(context.Background(), owner, "step", []Edit{{Path: p, Before: before, After: after}}); err != nil {
		t.Fatal(err)
	}
	putState(t, s.Root(), p, after)
}

func putState(t testing.TB, root, p string, st *FileState) {
	t.Helper()
	abs := filepath.Join(root, filepath.FromSlash(p))
	os.Remove(abs)
	if st == nil {
		return
	}
	os.MkdirAll(filepath.Dir(abs), 0o755)
	if st.Mode&fs.ModeSymlink != 0 {
		if err := os.Symlink(string(st.Data), abs); err != nil {
			t.Fatal(err)
		}
		return
	}
	mode := st.Mode.Perm()
	if mode == 0 {
		mode = 0o644
	}
	if err := os.WriteFile(abs, st.Data, mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(abs, mode)
}

func text(s string) *FileState { return &FileState{Data: []byte(s), Mode: 0o644} }

func readText(t testing.TB, root, p string) string {
	t.Helper()
	st := diskState(t, root, p)
	if st == nil {
		return "<absent>"
	}
	return string(st.Data)
}

func revertT(t testing.TB, s *Store, owners []string, opts RevertOptions) *RevertResult {
	t.Helper()
	res, err := s.Revert(context.Background(), owners, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRevertKeepsUserLines(t *testing.T) {
	root := t.TempDir()
	base := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	writeTree(t, root, map[string]string{"f.txt": base})
	s := openTestStore(t, root, Options{})
	agent := strings.Replace(strings.Replace(base, "3\n", "THREE\n", 1), "9\n", "NINE\n", 1)
	agentWrite(t, s, "run/r1", "f.txt", text(agent))
	// The user types above, between and below the agent's hunks.
	user := "top\n" + strings.Replace(strings.Replace(agent, "6\n", "6\nmiddle\n", 1), "12\n", "12\nbottom\n", 1)
	putState(t, root, "f.txt", text(user))
	res := revertT(t, s, []string{"run/r1"}, RevertOptions{})
	want := "top\n" + strings.Replace(strings.Replace(base, "6\n", "6\nmiddle\n", 1), "12\n", "12\nbottom\n", 1)
	if got := readText(t, root, "f.txt"); got != want {
		t.Fatalf("after undo:\n%s\nwant:\n%s", got, want)
	}
	if !res.Applied || !slices.Equal(res.Reverted, []string{"f.txt"}) || len(res.Conflicts) != 0 || res.UndoSnapshot == "" {
		t.Fatalf("result %+v", res)
	}
	// The safety snapshot holds the user's version.
	if d := extract(t, s.Dir(), res.UndoSnapshot); d["f.txt"] == "" {
		t.Fatalf("safety snapshot %v", d)
	}
}

func TestRevertConflictWritesNothingByDefault(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"f.txt": "a\nb\nc\n", "g.txt": "x\n"})
	s := openTestStore(t, root, Options{})
	agentWrite(t, s, "run/r1", "f.txt", text("a\nAGENT\nc\n"))
	agentWrite(t, s, "run/r1", "g.txt", text("X\n"))
	agentWrite(t, s, "run/r1", "new.txt", text("new\n"))
	putState(t, root, "f.txt", text("a\nAGENT by user\nc\n"))
	before := treeState(t, root, true)
	res := revertT(t, s, []string{"run/r1"}, RevertOptions{})
	if res.Applied || len(res.Conflicts) != 1 || res.Conflicts[0].Path != "f.txt" || res.UndoSnapshot != "" {
		t.Fatalf("result %+v", res)
	}
	c := res.Conflicts[0]
	if !slices.Equal(c.Owners, []string{"run/r1"}) || !strings.Contains(c.Reason, "you changed lines the agent wrote") ||
		!strings.Contains(c.Diff, "-AGENT by user") || !strings.Contains(c.Diff, "+b") {
		t.Fatalf("conflict %+v", c)
	}
	if !slices.Equal(res.Reverted, []string{"g.txt"}) || !slices.Equal(res.Deleted, []string{"new.txt"}) {
		t.Fatalf("what would be reverted: %+v", res)
	}
	if d := diffStates(before, treeState(t, root, true)); len(d) > 0 {
		t.Fatalf("a refused undo changed %v", d)
	}

	// Keep: the rest is reverted, the conflict stays as it is.
	res = revertT(t, s, []string{"run/r1"}, RevertOptions{OnConflict: KeepConflicts})
	if !res.Applied || len(res.Conflicts) != 1 || readText(t, root, "f.txt") != "a\nAGENT by user\nc\n" || readText(t, root, "g.txt") != "x\n" || readText(t, root, "new.txt") != "<absent>" {
		t.Fatalf("keep: %+v", res)
	}
	// Overwrite: the conflict gets the agent's Before; the safety
	// snapshot keeps the user's version.
	res = revertT(t, s, []string{"run/r1"}, RevertOptions{OnConflict: OverwriteConflicts})
	if !res.Applied || !slices.Equal(res.Overwritten, []string{"f.txt"}) || readText(t, root, "f.txt") != "a\nb\nc\n" {
		t.Fatalf("overwrite: %+v", res)
	}
	if got := string(mustBlob(t, s, res.UndoSnapshot, "f.txt")); got != "a\nAGENT by user\nc\n" {
		t.Fatalf("safety snapshot holds %q", got)
	}
}

func mustBlob(t testing.TB, s *Store, snap, p string) []byte {
	t.Helper()
	files, err := s.snapshotFiles(snap)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := files[p]
	if !ok {
		t.Fatalf("%s not in snapshot %s", p, snap)
	}
	data, err := s.readBlob(f.hash)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestRevertCreatesDeletesMoves(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"old.txt": "content\n", "del.txt": "d\n", "keep.txt": "k\n"})
	s := openTestStore(t, root, Options{})
	agentWrite(t, s, "run/r", "dir/created.txt", text("c\n"))
	agentWrite(t, s, "run/r", "del.txt", nil)
	// A move is two edits.
	agentWrite(t, s, "run/r", "moved/new.txt", text("content\n"))
	agentWrite(t, s, "run/r", "old.txt", nil)
	res := revertT(t, s, []string{"run/r"}, RevertOptions{})
	if !res.Applied || len(res.Conflicts) != 0 {
		t.Fatalf("%+v", res)
	}
	if readText(t, root, "old.txt") != "content\n" || readText(t, root, "del.txt") != "d\n" || readText(t, root, "moved/new.txt") != "<absent>" || readText(t, root, "dir/created.txt") != "<absent>" {
		t.Fatalf("state %v", treeState(t, root, true))
	}
	if _, err := os.Stat(filepath.Join(root, "dir")); !os.IsNotExist(err) {
		t.Fatalf("the emptied directory stays: %v", err)
	}
	if !slices.Equal(res.Created, []string{"del.txt", "old.txt"}) || !slices.Equal(res.Deleted, []string{"dir/created.txt", "moved/new.txt"}) {
		t.Fatalf("%+v", res)
	}

	// A file where the agent deleted one, and a changed created file:
	// conflicts.
	agentWrite(t, s, "run/r2", "del.txt", nil)
	agentWrite(t, s, "run/r2", "made.txt", text("agent\n"))
	putState(t, root, "del.txt", text("user's new file\n"))
	putState(t, root, "made.txt", text("agent\nuser\n"))
	res = revertT(t, s, []string{"run/r2"}, RevertOptions{})
	if res.Applied || len(res.Conflicts) != 2 || !strings.Contains(res.Conflicts[0].Reason, "where the agent deleted") || !strings.Contains(res.Conflicts[1].Reason, "created") {
		t.Fatalf("%+v", res)
	}
	// A created file the user deleted is nothing to do.
	os.Remove(filepath.Join(root, "made.txt"))
	os.Remove(filepath.Join(root, "del.txt"))
	res = revertT(t, s, []string{"run/r2"}, RevertOptions{})
	if !res.Applied || len(res.Conflicts) != 0 || !slices.Equal(res.Created, []string{"del.txt"}) || len(res.Deleted) != 0 {
		t.Fatalf("%+v", res)
	}
}

func TestRevertBinarySymlinkExec(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"b.bin": "\x00\x01old", "l": "->a", "x.sh": "echo\n", "c.bin": "\x00c"})
	s := openTestStore(t, root, Options{})
	agentWrite(t, s, "run/r", "b.bin", text("\x00\x01new"))
	agentWrite(t, s, "run/r", "c.bin", text("\x00C"))
	agentWrite(t, s, "run/r", "l", &FileState{Data: []byte("b"), Mode: fs.ModeSymlink})
	agentWrite(t, s, "run/r", "x.sh", &FileState{Data: []byte("echo hi\n"), Mode: 0o755})
	putState(t, root, "c.bin", text("\x00user"))
	// The user edits another line of x.sh: merged; the exec bit reverts.
	putState(t, root, "x.sh", &FileState{Data: []byte("#!/bin/sh\necho hi\n"), Mode: 0o755})
	res := revertT(t, s, []string{"run/r"}, RevertOptions{OnConflict: KeepConflicts})
	if len(res.Conflicts) != 1 || res.Conflicts[0].Path != "c.bin" || !strings.Contains(res.Conflicts[0].Reason, "binary") {
		t.Fatalf("%+v", res)
	}
	if readText(t, root, "b.bin") != "\x00\x01old" || readText(t, root, "c.bin") != "\x00user" {
		t.Fatal("binary")
	}
	if st := diskState(t, root, "l"); st.Mode&fs.ModeSymlink == 0 || string(st.Data) != "a" {
		t.Fatalf("link %+v", st)
	}
	if st := diskState(t, root, "x.sh"); string(st.Data) != "#!/bin/sh\necho\n" || st.Mode&0o111 != 0 {
		t.Fatalf("x.sh %q %v", st.Data, st.Mode)
	}
	// A symlink the user changed since is a conflict.
	agentWrite(t, s, "run/r2", "l", &FileState{Data: []byte("c"), Mode: fs.ModeSymlink})
	putState(t, root, "l", &FileState{Data: []byte("d"), Mode: fs.ModeSymlink})
	if res := revertT(t, s, []string{"run/r2"}, RevertOptions{}); len(res.Conflicts) != 1 || res.Applied {
		t.Fatalf("%+v", res)
	}
}

func TestRevertIgnoredAndTooLarge(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{".gitignore": "node_modules/\n*.big\n", "node_modules/x/a.js": "a\n"})
	s := openTestStore(t, root, Options{MaxFileSize: 100})
	agentWrite(t, s, "run/r", "node_modules/x/a.js", text("A\n"))
	agentWrite(t, s, "run/r", "node_modules/x/other.js", text("created by a command\n"))
	agentWrite(t, s, "run/r", "f.big", text("small\n"))
	putState(t, root, "f.big", text(strings.Repeat("big\n", 100)))
	res := revertT(t, s, []string{"run/r"}, RevertOptions{})
	if !res.Applied || readText(t, root, "node_modules/x/a.js") != "a\n" || readText(t, root, "node_modules/x/other.js") != "<absent>" {
		t.Fatalf("%+v", res)
	}
	if len(res.LeftAlone) != 1 || res.LeftAlone[0].Path != "f.big" || !strings.Contains(res.LeftAlone[0].Message, "too large") {
		t.Fatalf("left alone %+v", res.LeftAlone)
	}
	// The safety snapshot holds the ignored files as they were.
	if got := string(mustBlob(t, s, res.UndoSnapshot, "node_modules/x/a.js")); got != "A\n" {
		t.Fatalf("safety %q", got)
	}
}

// Two owners: undoing the older run where a newer run changed the same
// lines conflicts, naming the newer run; undoing both, newest first, is
// clean.
func TestRevertOlderRunNamesNewer(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "1\n2\n3\n", "b.txt": "b\n"})
	s := openTestStore(t, root, Options{})
	agentWrite(t, s, "run/r1", "a.txt", text("1\nR1\n3\n"))
	agentWrite(t, s, "run/r2", "a.txt", text("1\nR2\n3\n"))
	agentWrite(t, s, "run/r2", "b.txt", text("B\n"))
	res := revertT(t, s, []string{"run/r1"}, RevertOptions{})
	if res.Applied || len(res.Conflicts) != 1 || !slices.Equal(res.Conflicts[0].Owners, []string{"run/r2"}) || !strings.Contains(res.Conflicts[0].Reason, "run/r2") {
		t.Fatalf("%+v", res)
	}
	if readText(t, root, "b.txt") != "B\n" {
		t.Fatal("undo of r1 touched r2's file")
	}
	res = revertT(t, s, []string{"run/r2", "run/r1"}, RevertOptions{})
	if !res.Applied || readText(t, root, "a.txt") != "1\n2\n3\n" || readText(t, root, "b.txt") != "b\n" {
		t.Fatalf("%+v", res)
	}
}

func TestRevertUndoOfUndoKeepsLaterEdit(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"f.txt": "1\n2\n3\n4\n5\n6\n7\n"})
	s := openTestStore(t, root, Options{})
	agentWrite(t, s, "run/r", "f.txt", text("1\nAGENT\n3\n4\n5\n6\n7\n"))
	res := revertT(t, s, []string{"run/r"}, RevertOptions{RecordAs: "undo/u1"})
	if !res.Applied || res.RecordedAs != "undo/u1" || readText(t, root, "f.txt") != "1\n2\n3\n4\n5\n6\n7\n" {
		t.Fatalf("%+v", res)
	}
	putState(t, root, "f.txt", text("1\n2\n3\n4\n5\n6\nUSER\n"))
	res = revertT(t, s, []string{"undo/u1"}, RevertOptions{})
	if !res.Applied || readText(t, root, "f.txt") != "1\nAGENT\n3\n4\n5\n6\nUSER\n" {
		t.Fatalf("undo of undo: %q %+v", readText(t, root, "f.txt"), res)
	}
}

func TestRevertDryRunWritesNothing(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"f.txt": "a\n"})
	s := openTestStore(t, root, Options{})
	agentWrite(t, s, "run/r", "f.txt", text("A\n"))
	agentWrite(t, s, "run/r", "n.txt", text("n\n"))
	before := treeState(t, root, true)
	snaps, _ := s.List(context.Background(), "")
	res := revertT(t, s, []string{"run/r"}, RevertOptions{DryRun: true, RecordAs: "undo/x"})
	if res.Applied || !slices.Equal(res.Reverted, []string{"f.txt"}) || !slices.Equal(res.Deleted, []string{"n.txt"}) || res.UndoSnapshot != "" {
		t.Fatalf("%+v", res)
	}
	if d := diffStates(before, treeState(t, root, true)); len(d) > 0 {
		t.Fatalf("dry run changed %v", d)
	}
	after, _ := s.List(context.Background(), "")
	if len(after) != len(snaps) {
		t.Fatal("dry run took a snapshot")
	}
	if es, _ := s.Ledger(context.Background(), "undo/x"); es != nil {
		t.Fatal("dry run recorded")
	}
}

func TestRevertPathsLimit(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a/f": "a\n", "b/f": "b\n"})
	s := openTestStore(t, root, Options{})
	agentWrite(t, s, "run/r", "a/f", text("A\n"))
	agentWrite(t, s, "run/r", "b/f", text("B\n"))
	res := revertT(t, s, []string{"run/r"}, RevertOptions{Paths: []string{"a"}})
	if !res.Applied || readText(t, root, "a/f") != "a\n" || readText(t, root, "b/f") != "B\n" {
		t.Fatalf("%+v", res)
	}
}

// An undo with nothing left to write (the agent's edits are taken back
// already, or every conflicting file is kept) is applied: a caller that
// marks the run undone only when Applied would otherwise be stuck on it,
// refused with no conflict to resolve (found by the random undo test in
// session).
func TestRevertNothingLeftToWriteIsApplied(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"f.txt": "a\n", "g.txt": "1\nX\n3\n"})
	s := openTestStore(t, root, Options{})
	agentWrite(t, s, "run/r1", "f.txt", text("A\n"))
	putState(t, root, "f.txt", text("a\n")) // rejected in review: back as it was
	res := revertT(t, s, []string{"run/r1"}, RevertOptions{RecordAs: "undo/u1"})
	if !res.Applied || len(res.Conflicts) != 0 || len(res.Reverted) != 0 || res.UndoSnapshot != "" || readText(t, root, "f.txt") != "a\n" {
		t.Fatalf("nothing to write: want applied, nothing written: %+v", res)
	}
	agentWrite(t, s, "run/r2", "g.txt", text("1\nAGENT\n3\n"))
	putState(t, root, "g.txt", text("1\nUSER\n3\n")) // the user changed the agent's line
	if res := revertT(t, s, []string{"run/r2"}, RevertOptions{}); res.Applied || len(res.Conflicts) != 1 {
		t.Fatalf("a conflict and no choice: want refused: %+v", res)
	}
	res = revertT(t, s, []string{"run/r2"}, RevertOptions{OnConflict: KeepConflicts})
	if !res.Applied || len(res.Conflicts) != 1 || readText(t, root, "g.txt") != "1\nUSER\n3\n" {
		t.Fatalf("every conflict kept: want applied, the file as it is: %+v", res)
	}
}

// Undoing an older run whose new file a newer run moved on is a conflict
// naming the newer run: the older run's lines live on in the moved file,
// so saying they were taken back would be false (random undo test). A
// created file the user deleted is simply gone.
func TestRevertOfACreatedFileANewerRunMovedNamesIt(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"keep.txt": "k\n"})
	s := openTestStore(t, root, Options{})
	agentWrite(t, s, "run/r1", "n.txt", text("AGENT\n"))
	agentWrite(t, s, "run/r2", "n.txt", nil) // r2 moves n.txt to m.txt
	agentWrite(t, s, "run/r2", "m.txt", text("AGENT\n"))
	res := revertT(t, s, []string{"run/r1"}, RevertOptions{})
	if res.Applied || len(res.Conflicts) != 1 || res.Conflicts[0].Path != "n.txt" || !slices.Equal(res.Conflicts[0].Owners, []string{"run/r2"}) || readText(t, root, "m.txt") != "AGENT\n" {
		t.Fatalf("want a conflict on n.txt naming run/r2, nothing written: %+v", res)
	}
	agentWrite(t, s, "run/r3", "u.txt", text("AGENT\n"))
	putState(t, root, "u.txt", nil) // the user deleted it
	if res := revertT(t, s, []string{"run/r3"}, RevertOptions{}); !res.Applied || len(res.Conflicts) != 0 {
		t.Fatalf("a created file the user deleted: want applied, no conflict: %+v", res)
	}
}

// RevertFinished is what a caller that recorded an undo as under way and
// died asks at the next open: true only once the revert made all its
// writes, whatever the files hold since; a revert that failed and was
// rolled back, or made no write, is not finished.
func TestRevertFinishedIsMarkedByTheStoreNotGuessedFromFiles(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	agentWrite(t, s, "run/r1", "a.txt", text("agent a\n"))
	agentWrite(t, s, "run/r1", "b.txt", text("agent b\n"))
	finished := func(owner string) bool {
		t.Helper()
		fin, err := s.RevertFinished(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		return fin != nil
	}
	if finished("undo/u1") {
		t.Fatal("an undo never made is finished")
	}
	// A revert failing at its second write is rolled back: not finished.
	var writes int
	testHookApply = func(op restoreOp) error {
		if writes++; writes == 2 { // the rollback's writes go through
			return fmt.Errorf("injected failure")
		}
		return nil
	}
	restoreWorkers = 1
	_, err := s.Revert(ctx, []string{"run/r1"}, RevertOptions{RecordAs: "undo/u1"})
	testHookApply, restoreWorkers = nil, 8
	if err == nil || finished("undo/u1") {
		t.Fatalf("a revert that failed and was rolled back (%v) is finished", err)
	}
	res, err := s.Revert(ctx, []string{"run/r1"}, RevertOptions{RecordAs: "undo/u2"})
	if err != nil || !res.Applied {
		t.Fatalf("revert: %+v, %v", res, err)
	}
	// The user changes every file it wrote: still finished.
	writeTree(t, root, map[string]string{"a.txt": "a\nmine\n", "b.txt": "mine\n"})
	if !finished("undo/u2") {
		t.Fatal("a revert that made all its writes is not finished once the user changed them")
	}
	if _, err := s.RevertFinished(ctx, "../x"); err == nil {
		t.Fatal("a bad owner name is accepted")
	}
}
