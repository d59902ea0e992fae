package gitops

import (
	"context"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestRevertOverwriteKeepsTheUsersOtherLines: overwriting a conflict gives
// way only where the user's edit clashes with the agent's lines; a line
// the user typed elsewhere in the same file stays, and the diff shown
// before says exactly that. (A reset of the file to the agent's Before
// would take it, and the safety snapshot would be the only way back.)
func TestRevertOverwriteKeepsTheUsersOtherLines(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"f.txt": "a\nb\nc\nd\ne\n"})
	s := openTestStore(t, root, Options{})
	agentWrite(t, s, "run/r1", "f.txt", text("a\nAGENT\nc\nd\ne\n"))
	putState(t, root, "f.txt", text("a\nAGENT by user\nc\nd\ne\nUSER LINE\n"))

	dry := revertT(t, s, []string{"run/r1"}, RevertOptions{DryRun: true})
	if len(dry.Conflicts) != 1 || strings.Contains(dry.Conflicts[0].Diff, "-USER LINE") || !strings.Contains(dry.Conflicts[0].Diff, "+b") {
		t.Fatalf("the conflict's diff should replace only the clashing line: %+v", dry.Conflicts)
	}
	res := revertT(t, s, []string{"run/r1"}, RevertOptions{OnConflict: OverwriteConflicts})
	if got := readText(t, root, "f.txt"); !res.Applied || got != "a\nb\nc\nd\ne\nUSER LINE\n" {
		t.Fatalf("overwrite wrote %q (%+v)", got, res)
	}
}

// TestRestoreAfterRevertCountsItsWrites: a restore after an undo treats
// what the undo wrote as agentd's, as it treats a restore's writes: the
// undo records its result (KindRestored), so the file is restored, not
// left alone as "changed by someone else". (Seen in the ACP suite: after
// /undo, /restore of a run's start left the file.)
func TestRestoreAfterRevertCountsItsWrites(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "hello\n", "b.txt": "b\n"})
	s := openTestStore(t, root, Options{})
	if _, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r"}); err != nil {
		t.Fatal(err)
	}
	agentWrite(t, s, "run/r", "a.txt", text("hello world\n"))
	after, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	putState(t, root, "b.txt", text("b by the user\n"))
	if res := revertT(t, s, []string{"run/r"}, RevertOptions{}); !res.Applied || readText(t, root, "a.txt") != "hello\n" {
		t.Fatalf("revert: %+v", res)
	}
	res, err := s.Restore(ctx, after.ID, RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readText(t, root, "a.txt"); got != "hello world\n" || len(res.Conflicts) != 1 || res.Conflicts[0].Path != "b.txt" {
		t.Fatalf("restore after the undo: a.txt %q, conflicts %+v (want a.txt restored, b.txt the user's)", got, res.Conflicts)
	}
	if got := readText(t, root, "b.txt"); got != "b by the user\n" {
		t.Fatalf("b.txt = %q: the user's edit was taken", got)
	}
}

// TestRevertResultIsTheBasePatchedWithItsWrites: the result an undo
// records (built from the protection base and its own writes, without a
// second walk of the workspace) is the tree a snapshot limited to the
// files it wrote, on that base, takes from the disk: a write, a created
// file, a deleted one, an executable bit, in subdirectories, with the
// user's edits elsewhere left as the base has them.
func TestRevertResultIsTheBasePatchedWithItsWrites(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\n", "d/b.txt": "b\n", "d/e/gone.txt": "gone\n", "user.txt": "u\n", "x.sh": "#!/bin/sh\n"})
	s := openTestStore(t, root, Options{})
	base, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	agentWrite(t, s, "run/r", "a.txt", text("a agent\n"))
	agentWrite(t, s, "run/r", "d/b.txt", nil)
	agentWrite(t, s, "run/r", "d/e/new.txt", text("new\n"))
	agentWrite(t, s, "run/r", "d/e/gone.txt", nil)
	agentWrite(t, s, "run/r", "x.sh", &FileState{Data: []byte("#!/bin/sh\necho agent\n"), Mode: 0o755})
	putState(t, root, "user.txt", text("u by the user\n"))
	res := revertT(t, s, []string{"run/r"}, RevertOptions{})
	if !res.Applied || len(res.Conflicts) > 0 {
		t.Fatalf("revert: %+v", res)
	}
	all, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var got *Snapshot
	for _, sn := range all {
		if sn.Kind == KindRestored {
			got = sn
			break
		}
	}
	if got == nil {
		t.Fatal("the undo recorded no result")
	}
	want, err := s.Snapshot(ctx, SnapshotOptions{Label: "limited", Limit: &SnapshotLimit{Base: base.ID, Paths: []string{"a.txt", "d/b.txt", "d/e/new.txt", "d/e/gone.txt", "x.sh"}}})
	if err != nil {
		t.Fatal(err)
	}
	gc, err := s.readCommit(plumbing.NewHash(got.ID))
	if err != nil {
		t.Fatal(err)
	}
	wc, err := s.readCommit(plumbing.NewHash(want.ID))
	if err != nil {
		t.Fatal(err)
	}
	if gc.TreeHash != wc.TreeHash {
		gf, _ := s.snapshotFiles(got.ID)
		wf, _ := s.snapshotFiles(want.ID)
		t.Fatalf("the undo's result tree differs from the limited snapshot's:\n got %v\nwant %v", gf, wf)
	}
	if got.FilesChanged != want.FilesChanged || got.Files != want.Files {
		t.Errorf("the result records %d changes of %d files; the limited snapshot %d of %d", got.FilesChanged, got.Files, want.FilesChanged, want.Files)
	}
}
