package gitops

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// gitWriteTree is the tree id the git CLI computes for the same files.
func gitWriteTree(t *testing.T, root string) string {
	gd := t.TempDir()
	runGit(t, root, "--git-dir="+gd, "--work-tree="+root, "init", "-q")
	runGit(t, root, "--git-dir="+gd, "--work-tree="+root, "add", "-A")
	return strings.TrimSpace(runGit(t, root, "--git-dir="+gd, "--work-tree="+root, "write-tree"))
}

func TestSnapshotTreeEqualsGit(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"a.c":             "a dot c\n",
		"a/b":             "in a\n",
		"a-b":             "dash\n",
		"a0":              "zero\n",
		"a/deep/x/y.txt":  "deep\n",
		"run.sh":          "#!/bin/sh\necho hi\n",
		"link":            "->a/b",
		"out-link":        "->../../etc/passwd",
		".gitignore":      "*.log\nbuild/\n",
		"debug.log":       "ignored\n",
		"build/out.o":     "ignored\n",
		"src/main.go":     "package main\n",
		"src/empty":       "",
		"sp ace/ü.txt":    "unicode\n",
		"src/.gitignore":  "!keep.log\n",
		"src/keep.log":    "kept\n",
		"src/sub/tmp.log": "ignored\n",
	})
	s := openTestStore(t, root, Options{})
	before := treeState(t, root, false)
	snap, err := s.Snapshot(context.Background(), SnapshotOptions{Label: "first"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.readCommit(mustHash(t, snap.ID))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.TreeHash.String(), gitWriteTree(t, root); got != want {
		t.Fatalf("snapshot tree %s, git write-tree %s", got, want)
	}
	if d := diffStates(before, treeState(t, root, false)); len(d) > 0 {
		t.Fatalf("the snapshot wrote inside the workspace: %v", d)
	}
	fsck(t, s.Dir())
	files, err := s.Files(context.Background(), snap.ID[:8])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(files, ",") != ".gitignore,a-b,a.c,a/b,a/deep/x/y.txt,a0,link,out-link,run.sh,sp ace/ü.txt,src/.gitignore,src/empty,src/keep.log,src/main.go" {
		t.Fatalf("files: %q", files)
	}
	if snap.Files != len(files) || snap.FilesChanged != len(files) || snap.Label != "first" {
		t.Fatalf("metadata: %+v", snap)
	}
	// Modes as git stores them.
	ls := runGit(t, root, "--git-dir="+s.Dir(), "ls-tree", "-r", snap.ID)
	for _, want := range []string{"100755 blob", "120000 blob"} {
		if !strings.Contains(ls, want) {
			t.Fatalf("ls-tree lacks %q:\n%s", want, ls)
		}
	}
	if got := runGit(t, root, "--git-dir="+s.Dir(), "cat-file", "-p", snap.ID+":out-link"); got != "../../etc/passwd" {
		t.Fatalf("symlink target %q", got)
	}
}

func TestSnapshotIncrementalAndCache(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{}
	for i := range 100 {
		files[filepath.ToSlash(filepath.Join("d"+string(rune('a'+i%5)), "f"+string(rune('a'+i%26))+string(rune('a'+i/26))))] = strings.Repeat("x", i) + "\n"
	}
	writeTree(t, root, files)
	// Old mtimes, so nothing is racy.
	old := time.Now().Add(-time.Hour)
	for p := range files {
		os.Chtimes(filepath.Join(root, p), old, old)
	}
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	first, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r1", StepID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	packs, _ := filepath.Glob(filepath.Join(s.Dir(), "objects", "pack", "*.pack"))
	if len(packs) != 1 {
		t.Fatalf("initial snapshot of 100 files: want one pack, got %v", packs)
	}
	hashed := s.hashed.Load()
	second, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r1", StepID: "s2"})
	if err != nil {
		t.Fatal(err)
	}
	if n := s.hashed.Load() - hashed; n != 0 {
		t.Fatalf("unchanged files were re-hashed: %d", n)
	}
	if second.FilesChanged != 0 || second.Ref != "refs/agentd/runs/r1/2" || first.Ref != "refs/agentd/runs/r1/1" {
		t.Fatalf("second: %+v first: %+v", second, first)
	}
	// A reopened store (new process) uses the persisted cache too.
	s.Close()
	s2, err := openStore(ctx, root, s.files, s.opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	writeTree(t, root, map[string]string{"da/faa": "changed\n", "new.txt": "new\n"})
	os.Remove(filepath.Join(root, "db/fba"))
	third, err := s2.Snapshot(ctx, SnapshotOptions{RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if n := s2.hashed.Load(); n != 2 {
		t.Fatalf("hashed %d files after changing 2, want 2", n)
	}
	if third.FilesChanged != 3 || third.Files != 100 {
		t.Fatalf("third: %+v", third)
	}
	c, _ := s2.readCommit(mustHash(t, third.ID))
	if got, want := c.TreeHash.String(), gitWriteTree(t, root); got != want {
		t.Fatalf("incremental tree %s, git %s", got, want)
	}
	list, err := s2.List(ctx, "r1")
	if err != nil || len(list) != 3 || list[0].ID != third.ID || list[2].ID != first.ID {
		t.Fatalf("list: %v %+v", err, list)
	}
	fsck(t, s2.Dir())
}

func TestRacyFileIsRehashed(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"f": "aaaa\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	if _, err := s.Snapshot(ctx, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	rewriteSameStat(t, filepath.Join(root, "f"), "bbbb\n")
	snap, err := s.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.FilesChanged != 1 {
		t.Fatalf("a file changed within the timestamp granularity was missed: %+v", snap)
	}
}

func TestSkippedLargeFile(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"small": "x\n", "big.bin": strings.Repeat("y", 5000)})
	s := openTestStore(t, root, Options{MaxFileSize: 1000})
	snap, err := s.Snapshot(context.Background(), SnapshotOptions{Label: "l"})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Skipped) != 1 || snap.Skipped[0].Path != "big.bin" || snap.Skipped[0].Size != 5000 || snap.Files != 1 {
		t.Fatalf("skipped: %+v", snap)
	}
	s.metaCache = map[plumbing.Hash]*Snapshot{}
	got, err := s.Get(context.Background(), snap.ID)
	if err != nil || len(got.Skipped) != 1 || got.Skipped[0].Reason == "" {
		t.Fatalf("metadata from the commit: %v %+v", err, got)
	}
}

func TestNestedRepositoryIsPlainFiles(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"top.txt": "top\n", "sub/lib.go": "package lib\n"})
	runGit(t, filepath.Join(root, "sub"), "init", "-q")
	runGit(t, filepath.Join(root, "sub"), "add", "-A")
	runGit(t, filepath.Join(root, "sub"), "commit", "-qm", "x")
	before := treeState(t, filepath.Join(root, "sub", ".git"), false)
	s := openTestStore(t, root, Options{})
	snap, err := s.Snapshot(context.Background(), SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := s.Files(context.Background(), snap.ID)
	if strings.Join(files, ",") != "sub/lib.go,top.txt" {
		t.Fatalf("files %v", files)
	}
	writeTree(t, root, map[string]string{"sub/lib.go": "changed\n"})
	if _, err := s.Restore(context.Background(), snap.ID, RestoreOptions{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	if d := diffStates(before, treeState(t, filepath.Join(root, "sub", ".git"), false)); len(d) > 0 {
		t.Fatalf("nested .git changed: %v", d)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "sub/lib.go")); string(b) != "package lib\n" {
		t.Fatalf("restored %q", b)
	}
}

func TestUnknownIDError(t *testing.T) {
	root := t.TempDir()
	s := openTestStore(t, root, Options{})
	_, err := s.Get(context.Background(), "deadbeef")
	if err == nil || !strings.Contains(err.Error(), `"deadbeef"`) || !strings.Contains(err.Error(), "agentd snapshot list") {
		t.Fatalf("error %v", err)
	}
}

func TestRunIDsThatCannotNameARef(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"f": "f\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	for _, id := range []string{"run 1: fix/bug", "..x.lock", "run 1: fix:bug"} {
		snap, err := s.Snapshot(ctx, SnapshotOptions{RunID: id})
		if err != nil {
			t.Fatalf("run id %q: %v", id, err)
		}
		list, err := s.List(ctx, id)
		if err != nil || len(list) != 1 || list[0].ID != snap.ID || list[0].RunID != id {
			t.Fatalf("list %q: %v %+v", id, err, list)
		}
	}
	fsck(t, s.Dir())
}

// TestDirCacheAcrossStores takes snapshots from successive stores on the
// same state dir (as successive CLI commands do, each with a new file set
// that loads the directory cache the last one saved), with the tree and its
// ignore rules changed in between and the directories' timestamps old
// enough for their listings to be reused: each snapshot must be exactly
// what git would commit.
func TestDirCacheAcrossStores(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	writeTree(t, root, map[string]string{
		".gitignore": "*.log\n", "a/x.go": "x\n", "a/old.log": "log\n", "b/c/y.go": "y\n", "b/keep.txt": "k\n",
	})
	// A directory's listing is kept only once its last change is older
	// than the racy window (2 s), as for files.
	age := func() { time.Sleep(2100 * time.Millisecond) }
	steps := []struct {
		change func()
		reuse  bool // some listings stay valid
	}{
		{func() {}, false},
		{func() { writeTree(t, root, map[string]string{"a/new.go": "n\n"}) }, true},            // a new file in a listed directory
		{func() { writeTree(t, root, map[string]string{"b/.gitignore": "keep.txt\n"}) }, true}, // a new ignore file
		// The top ignore file edited in place: every listing is stale.
		{func() { writeTree(t, root, map[string]string{".gitignore": "*.go\n!a/*.go\n"}) }, false},
		{func() { os.Remove(filepath.Join(root, "b", "c", "y.go")) }, true},
	}
	for i, step := range steps {
		step.change()
		age()
		s := openTestStore(t, root, Options{StateDir: state})
		snap, err := s.Snapshot(context.Background(), SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if hits := s.files.(interface{ DirCacheHits() int64 }).DirCacheHits(); (hits > 0) != step.reuse {
			t.Fatalf("step %d: %d saved directory listings were used", i, hits)
		}
		c, err := s.readCommit(mustHash(t, snap.ID))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.TreeHash.String(), gitWriteTree(t, root); got != want {
			t.Fatalf("step %d: snapshot tree %s, git write-tree %s", i, got, want)
		}
		s.Close()
		if _, err := os.Stat(filepath.Join(s.Dir(), dirCacheName)); err != nil {
			t.Fatalf("step %d: no directory cache saved: %v", i, err)
		}
	}
}

// TestRefFilesMatchGoGit: the snapshot references read straight from
// their files are exactly those go-git reads; with a packed-refs file
// the store leaves the reading to go-git.
func TestRefFilesMatchGoGit(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeTree(t, root, map[string]string{"f": "1\n"})
	s := openTestStore(t, root, Options{})
	for i, run := range []string{"", "run-a", "run-b", "", "run-a"} {
		writeTree(t, root, map[string]string{"f": fmt.Sprintf("%d\n", i)})
		if _, err := s.Snapshot(ctx, SnapshotOptions{RunID: run}); err != nil {
			t.Fatal(err)
		}
	}
	goGit := func() map[string]plumbing.Hash {
		it, err := s.st.IterReferences()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]plumbing.Hash{}
		it.ForEach(func(r *plumbing.Reference) error {
			if strings.HasPrefix(r.Name().String(), agentdRefRoot) {
				out[r.Name().String()] = r.Hash()
			}
			return nil
		})
		return out
	}
	got, ok := s.readRefFiles()
	want := goGit()
	if !ok || len(want) != 5 || !maps.Equal(got, want) {
		t.Fatalf("read %v (ok %v), go-git reads %v", got, ok, want)
	}
	if err := os.WriteFile(filepath.Join(s.Dir(), "packed-refs"), []byte("# pack-refs with: peeled fully-peeled sorted \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.readRefFiles(); ok {
		t.Fatal("references read from their files although a packed-refs file may hold others")
	}
}
