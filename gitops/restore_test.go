package gitops

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

func baseTree() map[string]string {
	return map[string]string{
		".gitignore":   "*.log\n",
		"keep.txt":     "keep\n",
		"mod1.txt":     "one\n",
		"mod2.txt":     "two\n",
		"del/gone.txt": "gone\n",
		"run.sh":       "#!/bin/sh\n",
		"link":         "->keep.txt",
		"chmod.sh":     "#!/bin/sh\nexit 0\n",
	}
}

func TestRestoreWritesOnlyWhatDiffers(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, baseTree())
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	snap, err := s.Snapshot(ctx, SnapshotOptions{Label: "base"})
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	keep := filepath.Join(root, "keep.txt")
	os.Chtimes(keep, old, old)
	want := treeState(t, root, false)

	// Modify, create, delete, chmod, relink; add an ignored file.
	writeTree(t, root, map[string]string{"mod1.txt": "ONE\n", "mod2.txt": "two, longer\n", "new.txt": "new\n",
		"newdir/a/b.txt": "nested new\n", "link": "->mod1.txt", "debug.log": "ignored\n"})
	os.RemoveAll(filepath.Join(root, "del"))
	os.Chmod(filepath.Join(root, "chmod.sh"), 0o644)
	os.Chmod(filepath.Join(root, "run.sh"), 0o644)
	os.WriteFile(filepath.Join(root, "run.sh"), []byte("#!/bin/sh\necho changed\n"), 0o644)
	changed := treeState(t, root, false)

	// A manual snapshot only: no protection base, so the restore refuses
	// unless asked to overwrite.
	if _, err := s.Restore(ctx, snap.ID, RestoreOptions{DryRun: true}); !errors.Is(err, ErrNoProtectionBase) || !strings.Contains(err.Error(), short(snap.ID)) || !strings.Contains(err.Error(), "overwrite") {
		t.Fatalf("restore without a protection base: %v", err)
	}
	dry, err := s.Restore(ctx, snap.ID, RestoreOptions{DryRun: true, Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	refsBefore, _ := s.refs()
	wantRes := &RestoreResult{
		Restored:  []string{"chmod.sh", "link", "mod1.txt", "mod2.txt", "run.sh"},
		Created:   []string{"del/gone.txt"},
		Deleted:   []string{"new.txt", "newdir/a/b.txt"},
		Conflicts: []RestoreConflict{},
		LeftAlone: []RestoreConflict{},
	}
	if !reflect.DeepEqual(dry, wantRes) {
		t.Fatalf("dry run:\n got %+v\nwant %+v", dry, wantRes)
	}
	if d := diffStates(changed, treeState(t, root, false)); len(d) > 0 {
		t.Fatalf("dry run wrote: %v", d)
	}
	if refsAfter, _ := s.refs(); len(refsAfter) != len(refsBefore) {
		t.Fatalf("dry run took a snapshot")
	}

	res, err := s.Restore(ctx, snap.ID, RestoreOptions{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	undo := res.UndoSnapshot
	res.UndoSnapshot = ""
	if res.ResultSnapshot == "" {
		t.Fatalf("no result snapshot: %+v", res)
	}
	res.ResultSnapshot = ""
	if !reflect.DeepEqual(res, wantRes) || undo == "" {
		t.Fatalf("restore: %+v (undo %q)", res, undo)
	}
	got := treeState(t, root, false)
	want["debug.log"] = changed["debug.log"] // ignored: never deleted
	if d := diffStates(want, got); len(d) > 0 {
		t.Fatalf("after restore: %v", d)
	}
	if fi, _ := os.Stat(keep); !fi.ModTime().Equal(old) {
		t.Fatalf("unchanged file was rewritten: mtime %v, want %v", fi.ModTime(), old)
	}
	if _, err := os.Stat(filepath.Join(root, "newdir")); !os.IsNotExist(err) {
		t.Fatalf("emptied directory left behind: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), journalName)); !os.IsNotExist(err) {
		t.Fatalf("journal left behind")
	}

	// The safety snapshot undoes the restore, protected by the restore's
	// result (no overwrite needed: every file is as the restore left it).
	if _, err := s.Restore(ctx, undo, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := diffStates(changed, treeState(t, root, false)); len(d) > 0 {
		t.Fatalf("undo: %v", d)
	}
	fsck(t, s.Dir())
}

func TestRestorePathsAndConflicts(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a/1": "1\n", "a/2": "2\n", "b/1": "b1\n", "c": "c\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	base, _ := s.Snapshot(ctx, SnapshotOptions{RunID: "run"})
	// The agent changes a/1, b/1 and c, and snapshots.
	writeTree(t, root, map[string]string{"a/1": "agent\n", "b/1": "agent\n", "c": "agent\n"})
	agent, _ := s.Snapshot(ctx, SnapshotOptions{RunID: "run"})
	// The user then edits c and creates a/3.
	writeTree(t, root, map[string]string{"c": "user\n", "a/3": "user\n"})

	res, err := s.Restore(ctx, base.ID, RestoreOptions{Paths: []string{"a", filepath.Join(root, "c")}, Since: agent.ID})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(res.Conflicts, func(i, j int) bool { return res.Conflicts[i].Path < res.Conflicts[j].Path })
	if !reflect.DeepEqual(res.Restored, []string{"a/1"}) || len(res.Deleted) != 0 || len(res.Conflicts) != 2 ||
		res.Conflicts[0].Path != "a/3" || res.Conflicts[1].Path != "c" {
		t.Fatalf("restore: %+v", res)
	}
	for p, want := range map[string]string{"a/1": "1\n", "b/1": "agent\n", "c": "user\n", "a/3": "user\n"} {
		if b, _ := os.ReadFile(filepath.Join(root, p)); string(b) != want {
			t.Fatalf("%s = %q, want %q", p, b, want)
		}
	}
	// Overwrite restores them anyway (a/3 is deleted: created since).
	res, err = s.Restore(ctx, base.ID, RestoreOptions{Paths: []string{"a", "c"}, Since: agent.ID, Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Restored, []string{"c"}) || !reflect.DeepEqual(res.Deleted, []string{"a/3"}) || len(res.Conflicts) != 0 {
		t.Fatalf("overwrite: %+v", res)
	}
	if _, err := s.Restore(ctx, base.ID, RestoreOptions{Paths: []string{"../x"}}); err == nil {
		t.Fatal("a path outside the workspace was accepted")
	}
}

func TestRestoreLeavesBlockedPathsAlone(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{".gitignore": "blocker\n", "a.txt": "a\n", "blocker/f": "f\n", "z.txt": "z\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	// blocker/f is ignored; make a snapshot that has it by listing it
	// without the ignore file.
	os.Remove(filepath.Join(root, ".gitignore"))
	snap, _ := s.Snapshot(ctx, SnapshotOptions{})
	writeTree(t, root, map[string]string{".gitignore": "blocker\n"})
	// Now "blocker" is an ignored regular file: blocker/f cannot be
	// written; the rest is restored and blocker/f is reported.
	os.RemoveAll(filepath.Join(root, "blocker"))
	writeTree(t, root, map[string]string{"blocker": "ignored file\n", "a.txt": "A\n", "z.txt": "Z\n"})
	res, err := s.Restore(ctx, snap.ID, RestoreOptions{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.LeftAlone) != 1 || res.LeftAlone[0].Path != "blocker/f" || !strings.Contains(res.LeftAlone[0].Message, "blocker") {
		t.Fatalf("left alone: %+v", res)
	}
	for p, want := range map[string]string{"a.txt": "a\n", "z.txt": "z\n", "blocker": "ignored file\n"} {
		if b, _ := os.ReadFile(filepath.Join(root, p)); string(b) != want {
			t.Fatalf("%s = %q, want %q", p, b, want)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), journalName)); !os.IsNotExist(err) {
		t.Fatalf("journal left behind")
	}
}

func TestOpenFinishesInterruptedRestore(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a": "a\n", "b": "b\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	snap, _ := s.Snapshot(ctx, SnapshotOptions{})
	files, _ := s.snapshotFiles(snap.ID)
	writeTree(t, root, map[string]string{"a": "changed\n", "c": "created\n"})
	// A journal as Restore writes it, as if the process died right after.
	j := restoreJournal{Target: snap.ID, Nonce: "n0", Phase: phaseApply, Ops: []restoreOp{
		{Path: "c", Op: "delete"},
		{Path: "a", Op: "write", Mode: uint32(files["a"].mode), Hash: files["a"].hash.String()},
	}}
	data, _ := json.Marshal(j)
	os.WriteFile(filepath.Join(s.Dir(), journalName), data, 0o644)
	os.WriteFile(filepath.Join(root, tmpName("n0", "a")), []byte("half"), 0o644)
	// A user's file that merely looks like a temporary file is kept.
	os.WriteFile(filepath.Join(root, tmpName("other", "a")), []byte("user\n"), 0o644)
	s.Close()
	s2 := openTestStore(t, root, s.opts)
	_ = s2
	if s2.Problem() != nil {
		t.Fatalf("problem after recovery: %v", s2.Problem())
	}
	if b, err := os.ReadFile(filepath.Join(root, tmpName("other", "a"))); err != nil || string(b) != "user\n" {
		t.Fatalf("a user's file named like a temporary file was touched: %q %v", b, err)
	}
	os.Remove(filepath.Join(root, tmpName("other", "a")))
	got := treeState(t, root, false)
	if len(got) != 2 || !strings.Contains(got["a"], ":") || got["c"] != "" {
		t.Fatalf("after recovery: %v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a")); string(b) != "a\n" {
		t.Fatalf("a = %q", b)
	}
}

func TestRestoreNeverWritesThroughSymlinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	writeTree(t, root, map[string]string{"a/f": "mine\n", "b": "b\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	snap, err := s.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Replace the directory a with a link to a directory outside.
	writeTree(t, outside, map[string]string{"f": "outside\n", "g": "outside g\n"})
	os.RemoveAll(filepath.Join(root, "a"))
	os.Symlink(outside, filepath.Join(root, "a"))
	before := treeState(t, outside, false)
	res, err := s.Restore(ctx, snap.ID, RestoreOptions{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := diffStates(before, treeState(t, outside, false)); len(d) > 0 {
		t.Fatalf("restore wrote outside the workspace: %v (%+v)", d, res)
	}
	if fi, err := os.Lstat(filepath.Join(root, "a")); err != nil || !fi.IsDir() {
		t.Fatalf("a is not a directory again: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a/f")); string(b) != "mine\n" {
		t.Fatalf("a/f = %q", b)
	}
}
