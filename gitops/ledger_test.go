package gitops

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestLedgerRecordsInOrderAndDurably(t *testing.T) {
	root := t.TempDir()
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	if es, err := s.Ledger(ctx, "run/r1"); err != nil || es != nil {
		t.Fatalf("empty ledger: %v %v", es, err)
	}
	err := s.RecordEdits(ctx, "run/r1", "s1", []Edit{
		{Path: "a.txt", Before: &FileState{Data: []byte("a\n")}, After: &FileState{Data: []byte("A\n"), Mode: 0o644}},
		{Path: "new.sh", After: &FileState{Data: []byte("#!/bin/sh\n"), Mode: 0o700}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordEdits(ctx, "run/r1", "s2", []Edit{{Path: "a.txt", Before: &FileState{Data: []byte("A\n")}}}); err != nil {
		t.Fatal(err)
	}
	es, err := s.Ledger(ctx, "run/r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 || es[0].Seq != 1 || es[2].Seq != 3 || es[1].Path != "new.sh" || es[1].Before != nil || es[2].After != nil || es[1].Step != "s1" || es[2].Step != "s2" {
		t.Fatalf("ledger: %+v", es)
	}
	if es[1].After.Mode != 0o755 || es[0].Before.Mode != 0o644 {
		t.Fatalf("modes: %+v %+v", es[1].After, es[0].Before)
	}
	// The blobs are in the store, readable by git.
	out := runGit(t, root, "--git-dir="+s.Dir(), "cat-file", "-p", es[1].After.Hash)
	if out != "#!/bin/sh\n" {
		t.Fatalf("blob: %q", out)
	}
	// A torn last line (a crash in an append) is skipped, then cut off.
	name := s.ledgerPath("run/r1")
	f, _ := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"seq":4,"owner":"run/r1","pa`)
	f.Close()
	if es, err := s.Ledger(ctx, "run/r1"); err != nil || len(es) != 3 {
		t.Fatalf("after a torn line: %d %v", len(es), err)
	}
	if err := s.RecordEdits(ctx, "run/r1", "s3", []Edit{{Path: "b.txt", After: &FileState{Data: []byte("b")}}}); err != nil {
		t.Fatal(err)
	}
	if es, err := s.Ledger(ctx, "run/r1"); err != nil || len(es) != 4 || es[3].Seq != 4 || es[3].Path != "b.txt" {
		t.Fatalf("after an append past a torn line: %+v %v", es, err)
	}
	// Another owner is another ledger.
	if es, _ := s.Ledger(ctx, "undo/u1"); es != nil {
		t.Fatalf("undo/u1: %+v", es)
	}
	owners, _ := s.LedgerOwners(ctx)
	if fmt.Sprint(owners) != "[run/r1]" {
		t.Fatalf("owners %v", owners)
	}
	fsck(t, s.Dir())
}

func TestLedgerRefusesBadOwnersAndPaths(t *testing.T) {
	s := openTestStore(t, t.TempDir(), Options{})
	ctx := context.Background()
	for _, o := range []string{"", "../x", "run/../../x", "run/.hidden", "/abs", "run//x", "a/b/c/d", "run/x y", `run\x`, strings.Repeat("x", 201)} {
		if err := s.RecordEdits(ctx, o, "", []Edit{{Path: "a", After: &FileState{}}}); err == nil {
			t.Errorf("owner %q accepted", o)
		}
		if _, err := s.Ledger(ctx, o); err == nil {
			t.Errorf("ledger of owner %q read", o)
		}
	}
	for _, p := range []string{"", "../a", "/a", "a/../b", ".git/config", "x/.GIT/y"} {
		if err := s.RecordEdits(ctx, "run/r", "", []Edit{{Path: p, After: &FileState{}}}); err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), ledgerDir)); err == nil {
		t.Fatal("a refused record wrote a ledger")
	}
}

// Several processes share a store: each appends under the store lock, so
// no entry is lost or numbered twice.
func TestLedgerSharedByStores(t *testing.T) {
	root := t.TempDir()
	state := t.TempDir()
	a := openTestStore(t, root, Options{StateDir: state})
	b := openTestStore(t, root, Options{StateDir: state})
	ctx := context.Background()
	var wg sync.WaitGroup
	for i, s := range []*Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				if err := s.RecordEdits(ctx, "run/r", fmt.Sprint(i), []Edit{{Path: fmt.Sprintf("f%d-%d", i, j), After: &FileState{Data: []byte(fmt.Sprint(i, j))}}}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	es, err := a.Ledger(ctx, "run/r")
	if err != nil || len(es) != 40 {
		t.Fatalf("%d entries, %v", len(es), err)
	}
	seen := map[string]bool{}
	for i, e := range es {
		if e.Seq != i+1 || seen[e.Path] {
			t.Fatalf("entry %d: %+v", i, e)
		}
		seen[e.Path] = true
		if _, err := b.readBlob(mustHash(t, e.After.Hash)); err != nil {
			t.Fatalf("blob of %s: %v", e.Path, err)
		}
	}
}

func TestRecordSnapshotEdits(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\n", "gone.txt": "g\n", "d/x.sh": "echo\n", "other.txt": "o\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	from, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, map[string]string{"a.txt": "A\n", "new.txt": "n\n", "other.txt": "O\n"})
	os.Remove(filepath.Join(root, "gone.txt"))
	os.Chmod(filepath.Join(root, "d/x.sh"), 0o755)
	to, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordSnapshotEdits(ctx, "run/r", "cmd", from.ID, to.ID, []string{"a.txt", "new.txt", "gone.txt", "d"}); err != nil {
		t.Fatal(err)
	}
	es, err := s.Ledger(ctx, "run/r")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]LedgerEntry{}
	for _, e := range es {
		got[e.Path] = e
	}
	if len(es) != 4 || got["other.txt"].Path != "" {
		t.Fatalf("entries %+v", es)
	}
	blob := func(r *BlobRef) string {
		if r == nil {
			return "<absent>"
		}
		d, err := s.readBlob(mustHash(t, r.Hash))
		if err != nil {
			t.Fatal(err)
		}
		return string(d)
	}
	if blob(got["a.txt"].Before) != "a\n" || blob(got["a.txt"].After) != "A\n" || blob(got["new.txt"].Before) != "<absent>" ||
		blob(got["gone.txt"].After) != "<absent>" || got["d/x.sh"].Before.Mode != 0o644 || got["d/x.sh"].After.Mode != 0o755 {
		t.Fatalf("entries %+v", got)
	}
}

// A command's effect is recorded against the disk as the snapshot before
// it scanned it, not against the limited tree, which keeps the run's
// earlier version of a file the user typed into meanwhile: the user's
// line is not the command's, and undo keeps it. A gc between the two
// snapshots keeps the disk's tree (the user's version is in no
// snapshot's tree).
func TestRecordSnapshotEditsCountsUserLinesBeforeTheCommand(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "one\ntwo\n", "b.txt": "b\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	start, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r", Label: "start"})
	if err != nil {
		t.Fatal(err)
	}
	// The user types a line into a.txt and b.txt while an earlier step waits.
	writeTree(t, root, map[string]string{"a.txt": "one\nUSER\ntwo\n", "b.txt": "b\nUSER-B\n"})
	from, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r", Label: "before a command", Limit: &SnapshotLimit{Base: start.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GC(ctx); err != nil {
		t.Fatal(err)
	}
	// The command appends a line to a.txt.
	writeTree(t, root, map[string]string{"a.txt": "one\nUSER\ntwo\nCMD\n"})
	to, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r", Label: "after", Limit: &SnapshotLimit{Base: from.ID, ChangedOnDisk: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordSnapshotEdits(ctx, "run/r", "cmd", from.ID, to.ID, nil); err != nil {
		t.Fatal(err)
	}
	es, err := s.Ledger(ctx, "run/r")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Path != "a.txt" {
		t.Fatalf("want one entry for a.txt (b.txt is the user's alone), got %+v", es)
	}
	d, err := s.readBlob(mustHash(t, es[0].Before.Hash))
	if err != nil || string(d) != "one\nUSER\ntwo\n" {
		t.Fatalf("the command's before state: %q %v (want the disk's, with the user's line)", d, err)
	}
	if _, err := s.Revert(ctx, []string{"run/r"}, RevertOptions{}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"a.txt": "one\nUSER\ntwo\n", "b.txt": "b\nUSER-B\n"} {
		if got, _ := os.ReadFile(filepath.Join(root, p)); string(got) != want {
			t.Fatalf("after the undo %s holds %q, want %q", p, got, want)
		}
	}
}

// gc keeps every blob a ledger names, and drops the ledger of a run it
// prunes.
func TestGCKeepsLedgerBlobs(t *testing.T) {
	root := t.TempDir()
	s := openTestStore(t, root, Options{KeepRuns: 1})
	ctx := context.Background()
	for _, r := range []string{"r1", "r2"} {
		writeTree(t, root, map[string]string{"f.txt": r})
		if _, err := s.Snapshot(ctx, SnapshotOptions{RunID: r}); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordEdits(ctx, "run/"+r, "", []Edit{{Path: "only-in-ledger.txt", Before: &FileState{Data: []byte("before " + r)}, After: &FileState{Data: []byte("after " + r)}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordEdits(ctx, "undo/u1", "", []Edit{{Path: "u.txt", After: &FileState{Data: []byte("undo's own")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GC(ctx); err != nil {
		t.Fatal(err)
	}
	if es, _ := s.Ledger(ctx, "run/r1"); es != nil {
		t.Fatalf("the pruned run's ledger stays: %+v", es)
	}
	for _, o := range []string{"run/r2", "undo/u1"} {
		es, err := s.Ledger(ctx, o)
		if err != nil || len(es) != 1 {
			t.Fatalf("%s: %+v %v", o, es, err)
		}
		for _, r := range []*BlobRef{es[0].Before, es[0].After} {
			if r == nil {
				continue
			}
			if err := exec.Command(gitBin(t), "--git-dir="+s.Dir(), "cat-file", "-e", r.Hash).Run(); err != nil {
				t.Fatalf("%s: blob %s pruned by gc", o, r.Hash)
			}
		}
	}
	fsck(t, s.Dir())
	if _, err := os.Stat(s.ledgerPath("run/r1")); !os.IsNotExist(err) {
		t.Fatalf("ledger file: %v", err)
	}
	_ = fs.ModeSymlink
}
