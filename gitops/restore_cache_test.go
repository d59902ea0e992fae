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
	"time"
)

// TestRestoreLeavesCacheItWouldRewrite: a restore that rewrites every file
// changed since the saved stat cache does not save the cache again (the
// next process re-hashes those files whichever it loads), and the next
// process still records the workspace exactly: the restored files, and a
// change the restore left alone.
func TestRestoreLeavesCacheItWouldRewrite(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a": "a\n", "b": "b\n", "c": "c\n"})
	old := time.Now().Add(-time.Hour)
	backdate := func(names ...string) {
		for _, n := range names {
			os.Chtimes(filepath.Join(root, n), old, old)
		}
	}
	backdate("a", "b", "c")
	opts := Options{StateDir: t.TempDir()}
	s, s1 := snapshotIn(t, root, opts)
	cache := saved(t, filepath.Join(s.Dir(), cacheName))

	// A modified and a created file; the restore rewrites both.
	writeTree(t, root, map[string]string{"a": "changed a\n", "d": "new\n"})
	backdate("a", "d")
	s2 := openTestStore(t, root, opts)
	res, err := s2.Restore(ctx, s1.ID, RestoreOptions{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if len(res.Restored) != 1 || len(res.Deleted) != 1 || res.ResultSnapshot == "" {
		t.Fatalf("restore: %+v", res)
	}
	if cache.resaved() {
		t.Fatal("the stat cache was saved again although the restore rewrote every file it differs in")
	}
	_, snap := snapshotIn(t, root, opts)
	if snap.FilesChanged != 0 || snap.Files != 3 {
		t.Fatalf("after the restore the workspace is snapshot %s again, got %+v", s1.ID, snap)
	}

	// A change the restore leaves alone (outside its paths): the next
	// process sees it although the cache was not saved.
	writeTree(t, root, map[string]string{"a": "changed a\n", "c": "changed c, kept\n"})
	backdate("a", "c")
	s4 := openTestStore(t, root, opts)
	if _, err := s4.Restore(ctx, s1.ID, RestoreOptions{Overwrite: true, Paths: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	s4.Close()
	if a, c := readFile(t, root, "a"), readFile(t, root, "c"); a != "a\n" || c != "changed c, kept\n" {
		t.Fatalf("after restoring a only: a %q, c %q", a, c)
	}
	s5 := openTestStore(t, root, opts)
	defer s5.Close()
	snap, err = s5.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := s5.Files(ctx, snap.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("files: %v", files)
	}
	d, err := s5.Diff(ctx, s1.ID, snap.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 1 || d[0].NewPath != "c" {
		t.Fatalf("against %s the workspace differs in c only, got %+v", s1.ID, d)
	}
}

// TestFailedRestoreRecordsNoResult: the result snapshot, written while the
// ops are applied, gets no reference when the restore fails (and is rolled
// back).
func TestFailedRestoreRecordsNoResult(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	s := openTestStore(t, root, Options{})
	defer s.Close()
	s0, err := s.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, map[string]string{"a.txt": "mine a\n", "b.txt": "mine b\n"})
	var writes atomic.Int32
	testHookApply = func(op restoreOp) error {
		if op.Op == "write" && writes.Add(1) == 2 {
			return errors.New("injected failure")
		}
		return nil
	}
	defer func() { testHookApply = nil }()
	if _, err := s.Restore(ctx, s0.ID, RestoreOptions{Overwrite: true}); err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("want the injected failure, got %v", err)
	}
	testHookApply = nil
	if a, b := readFile(t, root, "a.txt"), readFile(t, root, "b.txt"); a != "mine a\n" || b != "mine b\n" {
		t.Fatalf("not rolled back: a.txt %q, b.txt %q", a, b)
	}
	list, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, sn := range list {
		if sn.Kind == KindRestored {
			t.Fatalf("a failed restore recorded a result: %+v", sn)
		}
	}
	// The next restore records one.
	res, err := s.Restore(ctx, s0.ID, RestoreOptions{Overwrite: true})
	if err != nil || res.ResultSnapshot == "" {
		t.Fatalf("restore: %+v, %v", res, err)
	}
}

func readFile(t *testing.T, root, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestChangedSnapshotTreesMatchFresh: after a snapshot in which files
// changed, were added and a whole directory went, the cache's directory
// tree ids are exactly those a store without a cache computes.
func TestChangedSnapshotTreesMatchFresh(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a/x/1": "1\n", "a/y/2": "2\n", "b/3": "3\n", "c/d/4": "4\n", "c/d/e/5": "5\n", "c/6": "6\n", "top": "t\n"})
	s := openTestStore(t, root, Options{StateDir: t.TempDir()})
	defer s.Close()
	if _, err := s.Snapshot(ctx, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, "c", "d")); err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, map[string]string{"a/x/1": "one\n", "f/g/new": "new\n"})
	snap, err := s.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.FilesChanged != 4 {
		t.Fatalf("changes: %+v", snap.Changes)
	}
	fresh := openTestStore(t, root, Options{StateDir: t.TempDir()})
	defer fresh.Close()
	if _, err := fresh.Snapshot(ctx, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	got, want := s.cache.trees, fresh.cache.trees
	if len(got) != len(want) {
		t.Fatalf("tree ids of %d directories, want %d: %v, want %v", len(got), len(want), got, want)
	}
	for d, h := range want {
		if got[d] != h {
			t.Fatalf("directory %q: tree %s, want %s", d, got[d], h)
		}
	}
}

// TestRestoreSavesCacheWhenManyOthersChanged: a restore that leaves more
// changed files than resaveLimits allows for the next process to re-hash
// saves the stat cache after all.
func TestRestoreSavesCacheWhenManyOthersChanged(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	files := map[string]string{"a": "a\n"}
	n, _ := resaveLimits(100)
	for i := range n + 1 {
		files[fmt.Sprintf("d/f%d", i)] = "old\n"
	}
	writeTree(t, root, files)
	old := time.Now().Add(-time.Hour)
	backdate := func() {
		for p := range files {
			os.Chtimes(filepath.Join(root, p), old, old)
		}
	}
	backdate()
	opts := Options{StateDir: t.TempDir()}
	s, s1 := snapshotIn(t, root, opts)
	cache := saved(t, filepath.Join(s.Dir(), cacheName))
	for p := range files {
		files[p] = "new " + p + "\n"
	}
	writeTree(t, root, files)
	backdate()
	s2 := openTestStore(t, root, opts)
	if _, err := s2.Restore(ctx, s1.ID, RestoreOptions{Overwrite: true, Paths: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if !cache.resaved() {
		t.Fatalf("the stat cache was left as it was although %d files outside the restore changed", n+1)
	}
	if got := readFile(t, root, "a"); got != "a\n" {
		t.Fatalf("a = %q after the restore", got)
	}
}

// TestDirCacheSavedWhenManyChanged: a process saves the directory cache
// only when the listings it put or dropped hold more than dirResave
// entries (or an eighth of the directories changed); a few small ones
// are listed again by the next process, which still sees every file.
func TestDirCacheSavedWhenManyChanged(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{}
	for i := range 16 {
		files[fmt.Sprintf("d%d/x", i)] = "x\n"
	}
	for i := range dirResave + 1 {
		files[fmt.Sprintf("big/f%d", i)] = "f\n"
	}
	writeTree(t, root, files)
	// Out of the directories' racy window (their ctime cannot be set
	// back), so that the first snapshot's listings are cached and saved.
	time.Sleep(2100 * time.Millisecond)
	opts := Options{StateDir: t.TempDir()}
	s, _ := snapshotIn(t, root, opts)
	dirCache := saved(t, filepath.Join(s.Dir(), dirCacheName))
	snapshot := func(want int) {
		t.Helper()
		if _, snap := snapshotIn(t, root, opts); snap.Files != want {
			t.Fatalf("snapshot has %d files, want %d", snap.Files, want)
		}
	}

	writeTree(t, root, map[string]string{"d0/new": "n\n"})
	snapshot(len(files) + 1)
	if dirCache.resaved() {
		t.Fatal("the directory cache was saved although one small directory changed")
	}
	snapshot(len(files) + 1) // d0 listed again from its stale saved listing
	writeTree(t, root, map[string]string{"big/new": "n\n"})
	snapshot(len(files) + 2)
	if !dirCache.resaved() {
		t.Fatalf("the directory cache was not saved although a directory of %d files changed", dirResave+2)
	}
}

// TestSnapshotSavesCacheAfterRewrite: files rewritten unchanged (as a
// restore that left the saved stat cache alone does) are hashed by the
// next snapshot, which saves the cache, so that the one after hashes
// nothing.
func TestSnapshotSavesCacheAfterRewrite(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a": "a\n", "b": "b\n", "c": "c\n"})
	old := time.Now().Add(-time.Hour)
	for _, n := range []string{"a", "b", "c"} {
		os.Chtimes(filepath.Join(root, n), old, old)
	}
	opts := Options{StateDir: t.TempDir()}
	snapshotIn(t, root, opts)
	// Rewritten with the same content and an older, other mtime.
	writeTree(t, root, map[string]string{"a": "a\n"})
	os.Chtimes(filepath.Join(root, "a"), old.Add(time.Minute), old.Add(time.Minute))
	for i, want := range []int64{1, 0} {
		s, snap := snapshotIn(t, root, opts)
		if got := s.hashed.Load(); got != want || snap.FilesChanged != 0 {
			t.Fatalf("snapshot %d hashed %d files (want %d), changed %d", i, got, want, snap.FilesChanged)
		}
	}
}
