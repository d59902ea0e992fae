//go:build unix

package gitops

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestRestoreSymlinkSwapRace: another process keeps swapping the directory
// d for a symlink to a directory outside while restores run: not one byte
// may land outside (issue 10, point 1).
func TestRestoreSymlinkSwapRace(t *testing.T) {
	rounds := 200 // each restores both snapshots: 400 restores
	if testing.Short() || raceOn {
		rounds = 50
	}
	prev := syncWrites
	syncWrites = false // the race is about paths, not durability
	defer func() { syncWrites = prev }()
	base := t.TempDir()
	root, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	os.MkdirAll(outside, 0o755)
	files := map[string]string{}
	for i := range 60 {
		files[fmt.Sprintf("d/f%03d.txt", i)] = fmt.Sprintf("content %d\n", i)
	}
	writeTree(t, root, files)
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	snap, err := s.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A second state: half the files changed, half deleted, so each
	// restore between the two rewrites, creates and deletes files.
	for j := range 60 {
		p := filepath.Join(root, fmt.Sprintf("d/f%03d.txt", j))
		if j%2 == 0 {
			os.Remove(p)
		} else {
			os.WriteFile(p, []byte("changed\n"), 0o644)
		}
	}
	s1, err := s.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The swapper: a shell loop, as in the report. From here on the test
	// writes nothing itself: only restores do.
	stop := filepath.Join(base, "stop")
	swap := exec.Command("sh", "-c", `cd "$1" && while [ ! -e "$2" ]; do mv -T d d.real 2>/dev/null; ln -sn ../outside d 2>/dev/null; rm -f d 2>/dev/null; mv -T d.real d 2>/dev/null; done`, "sh", root, stop)
	if err := swap.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		os.WriteFile(stop, nil, 0o644)
		swap.Wait()
	}()
	for i := range rounds {
		// Errors are expected (the directory is gone or a link at times);
		// writes outside are not.
		for _, id := range []string{snap.ID, s1.ID} {
			s.Restore(ctx, id, RestoreOptions{Overwrite: true})
		}
		if ents, _ := os.ReadDir(outside); len(ents) > 0 {
			t.Fatalf("round %d: %d entries landed outside the workspace, first %s", i, len(ents), ents[0].Name())
		}
	}
	if s.Problem() != nil {
		t.Logf("problem after the race (expected at times): %v", s.Problem())
	}
}

// TestRestoreUnreadableDirectory runs as a user who cannot read a
// directory (nobody, through a re-exec of the test binary): the snapshot
// reports the directory as skipped and the restore leaves it alone instead
// of failing.
func TestRestoreUnreadableDirectory(t *testing.T) {
	if os.Getenv("AGENTD_TEST_AS_NOBODY") == "1" {
		unreadableAsNobody(t)
		return
	}
	if os.Geteuid() != 0 {
		unreadableAsNobody(t) // already not root: run directly
		return
	}
	// Root reads everything: run the test body as nobody.
	base, err := os.MkdirTemp("", "agentd-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o777)
	exe, _ := os.Executable()
	bin := filepath.Join(base, "gitops.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(bin, data, 0o755)
	cmd := exec.Command(bin, "-test.run", "^TestRestoreUnreadableDirectory$", "-test.v", "-test.count=1")
	cmd.Dir = base
	cmd.Env = append(os.Environ(), "AGENTD_TEST_AS_NOBODY=1", "HOME="+base, "TMPDIR="+base, "GOCOVERDIR=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestRestoreUnreadableDirectory") {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

func unreadableAsNobody(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Fatal("still root: the directory would be readable")
	}
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\n", "locked/f": "f\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	s0, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "locked/f"), []byte("changed\n"), 0o644)
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("changed\n"), 0o644)
	os.Chmod(filepath.Join(root, "locked"), 0o000)
	defer os.Chmod(filepath.Join(root, "locked"), 0o755)
	res, err := s.Restore(ctx, s0.ID, RestoreOptions{Overwrite: true})
	if err != nil {
		t.Fatalf("restore with an unreadable directory: %v", err)
	}
	if len(res.LeftAlone) != 1 || res.LeftAlone[0].Path != "locked/f" {
		t.Fatalf("left alone: %+v", res)
	}
	undo, _ := s.Get(ctx, res.UndoSnapshot)
	found := false
	for _, sk := range undo.Skipped {
		found = found || sk.Path == "locked/"
	}
	if !found {
		t.Fatalf("the unreadable directory is not in the safety snapshot's skipped list: %+v", undo.Skipped)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "a\n" {
		t.Fatalf("a.txt = %q", b)
	}
	if s.Problem() != nil {
		t.Fatal(s.Problem())
	}
}

// TestRestoreKeepsModesAndEmptyDirs: permission bits and empty
// directories come back as they were.
func TestRestoreKeepsModesAndEmptyDirs(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"secret": "s\n", "group": "g\n", "run.sh": "#!/bin/sh\n", "plain": "p\n", "e/keep/f": "f\n"})
	os.Chmod(filepath.Join(root, "secret"), 0o600)
	os.Chmod(filepath.Join(root, "group"), 0o640)
	os.Chmod(filepath.Join(root, "run.sh"), 0o755)
	os.MkdirAll(filepath.Join(root, "empty/inner"), 0o755)
	os.Remove(filepath.Join(root, "e/keep/f"))
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	s0, _ := s.Snapshot(ctx, SnapshotOptions{})
	want := treeState(t, root, false)
	os.Remove(filepath.Join(root, "secret"))
	os.Remove(filepath.Join(root, "group"))
	os.Chmod(filepath.Join(root, "plain"), 0o600)
	os.RemoveAll(filepath.Join(root, "empty"))
	writeTree(t, root, map[string]string{"e/keep/new": "n\n"})
	if _, err := s.Restore(ctx, s0.ID, RestoreOptions{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	for p, perm := range map[string]os.FileMode{"secret": 0o600, "group": 0o640, "run.sh": 0o755, "plain": 0o644} {
		fi, err := os.Stat(filepath.Join(root, p))
		if err != nil || fi.Mode().Perm() != perm {
			t.Errorf("%s: %v %v, want %v", p, fi.Mode(), err, perm)
		}
	}
	for _, d := range []string{"empty/inner", "e/keep"} {
		if fi, err := os.Stat(filepath.Join(root, d)); err != nil || !fi.IsDir() {
			t.Errorf("directory %s not there: %v", d, err)
		}
	}
	if d := diffStates(want, treeState(t, root, false)); len(d) > 0 {
		t.Fatalf("after restore: %v", d)
	}
}

// TestRestoreSkippedReported: special files are reported as skipped, and
// a file left out for its size is never deleted by a restore.
func TestRestoreSkippedReported(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\n", "big": strings.Repeat("x", 2000)})
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := openTestStore(t, root, Options{MaxFileSize: 1000})
	ctx := context.Background()
	s0, _ := s.Snapshot(ctx, SnapshotOptions{RunID: "r"})
	got := map[string]bool{}
	for _, sk := range s0.Skipped {
		got[sk.Path] = true
	}
	if !got["fifo"] || !got["big"] {
		t.Fatalf("skipped: %+v", s0.Skipped)
	}
	// big shrinks and is now in snapshots; restoring s0 (which left it
	// out) must not delete it.
	os.WriteFile(filepath.Join(root, "big"), []byte("small now\n"), 0o644)
	res, err := s.Restore(ctx, s0.ID, RestoreOptions{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "big")); err != nil {
		t.Fatalf("big deleted: %+v", res)
	}
	if len(res.LeftAlone) != 1 || res.LeftAlone[0].Path != "big" || !strings.Contains(res.LeftAlone[0].Message, "left it out") {
		t.Fatalf("left alone: %+v", res.LeftAlone)
	}
}

var _ = sync.Mutex{}
