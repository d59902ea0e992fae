package gitops

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWatchSnapshotsWithoutWalking(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{".gitignore": "*.log\n", "a/1": "1\n", "a/2": "2\n", "b/3": "3\n", "c": "c\n"})
	s := openTestStore(t, root, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(ctx, SnapshotOptions{}); err != nil { // the base walk
		t.Fatal(err)
	}
	walks := s.walks.Load()
	writeTree(t, root, map[string]string{"a/1": "changed\n", "new/d": "d\n", "x.log": "ignored\n"})
	os.Remove(filepath.Join(root, "b/3"))
	// Wait until the watcher has reported every change (events are
	// asynchronous); the failure timer only bounds a broken watcher.
	fail := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		s.drainWatcher(ctx)
		_, a := s.pending["a/1"]
		_, n := s.pending["new"]
		_, nd := s.pending["new/d"]
		_, b := s.pending["b/3"]
		s.mu.Unlock()
		if a && (n || nd) && b {
			break
		}
		select {
		case <-s.watcher.Changes():
		case <-fail:
			t.Fatal("the watcher did not report the changes")
		}
	}
	snap, err := s.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.walks.Load() != walks {
		t.Fatalf("the snapshot walked the tree although the watcher runs")
	}
	c, _ := s.readCommit(mustHash(t, snap.ID))
	if got, want := c.TreeHash.String(), gitWriteTree(t, root); got != want || snap.FilesChanged != 3 {
		t.Fatalf("watched snapshot tree %s (changed %d), git %s", got, snap.FilesChanged, want)
	}
	// No change: no walk, same tree.
	snap2, err := s.Snapshot(ctx, SnapshotOptions{})
	if err != nil || snap2.FilesChanged != 0 || s.walks.Load() != walks {
		t.Fatalf("no-change snapshot: %v %+v walks %d", err, snap2, s.walks.Load()-walks)
	}
}

// TestWatchRandomChangesMatchGit makes random changes (files, directories
// created and removed, links, modes, restores) with the watcher running and
// checks every snapshot's tree against git's.
func TestWatchRandomChangesMatchGit(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{".gitignore": "*.log\n", "a/1": "1\n", "b/c/2": "2\n"})
	s := openTestStore(t, root, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	first, err := s.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 25 {
		var touched []string
	ops:
		for range 1 + rng.IntN(4) {
			d := []string{"a", "b/c", "d/e/f", "g"}[rng.IntN(4)]
			p := filepath.Join(d, fmt.Sprintf("f%d", rng.IntN(4)))
			abs := filepath.Join(root, p)
			switch rng.IntN(6) {
			case 0:
				// (Re-creating a directory right after removing it races
				// with inotify; the watcher's owner knows. Not in one round.)
				if _, err := os.Stat(filepath.Join(root, d)); err == nil {
					os.RemoveAll(filepath.Join(root, d))
					touched = append(touched, d)
				}
				break ops
			case 1:
				os.MkdirAll(filepath.Dir(abs), 0o755)
				os.Remove(abs)
				os.Symlink("../x", abs)
			case 2:
				os.MkdirAll(filepath.Dir(abs), 0o755)
				os.WriteFile(abs, []byte("#!/bin/sh\n"), 0o755)
				os.Chmod(abs, 0o755)
			default:
				os.MkdirAll(filepath.Dir(abs), 0o755)
				os.Remove(abs)
				os.WriteFile(abs, []byte(fmt.Sprintf("%d %d\n", round, rng.Int())), 0o644)
			}
			touched = append(touched, p)
		}
		if round%8 == 7 {
			res, err := s.Restore(ctx, first.ID, RestoreOptions{Overwrite: true})
			if err != nil {
				t.Fatal(err)
			}
			// The restore's own snapshots (safety and result) drained the
			// watcher: the result snapshot recorded every path so far.
			if res.ResultSnapshot == "" {
				t.Fatalf("restore recorded no result: %+v", res)
			}
			touched = nil
		}
		waitForEvents(t, s, touched)
		snap, err := s.Snapshot(ctx, SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := s.readCommit(mustHash(t, snap.ID))
		if got, want := c.TreeHash.String(), gitWriteTree(t, root); got != want {
			t.Fatalf("round %d: watched snapshot tree %s, git %s", round, got, want)
		}
	}
	if s.walks.Load() > 4 {
		t.Fatalf("%d full walks in 25 watched snapshots", s.walks.Load())
	}
	fsck(t, s.Dir())
}

// waitForEvents waits until the watcher has reported each path (or one of
// its parent directories).
func waitForEvents(t *testing.T, s *Store, paths []string) {
	t.Helper()
	fail := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		s.drainWatcher(context.Background())
		missing := ""
		for _, p := range paths {
			p = filepath.ToSlash(p)
			found := s.pendingOverflow
			for q := p; !found && q != "." && q != ""; q = filepath.ToSlash(filepath.Dir(q)) {
				_, found = s.pending[q]
			}
			if !found {
				missing = p
				break
			}
		}
		s.mu.Unlock()
		if missing == "" {
			return
		}
		select {
		case <-s.watcher.Changes():
		case <-fail:
			t.Fatalf("the watcher did not report %s (pending %v)", missing, s.pendingPaths())
		}
	}
}

// TestWatchWriteThenSnapshot writes a file and snapshots at once, with no
// wait for the watcher: the drain's flush barrier must still see the write.
func TestWatchWriteThenSnapshot(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{".gitignore": "*.log\n", "a/1": "1\n", "b/2": "2\n"})
	s := openTestStore(t, root, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(ctx, SnapshotOptions{}); err != nil { // the base walk
		t.Fatal(err)
	}
	walks := s.walks.Load()
	const rounds = 40
	for round := range rounds {
		var p string
		switch round % 4 {
		case 0:
			p = "a/1" // same size, new content
		case 1:
			p = fmt.Sprintf("b/new%d", round)
		case 2:
			p = fmt.Sprintf("d%d/e/f", round) // new directories
		default:
			p = fmt.Sprintf("b/x%d.log", round) // ignored: no change
		}
		abs := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(fmt.Sprintf("%d\n", round%10)), 0o644); err != nil {
			t.Fatal(err)
		}
		snap, err := s.Snapshot(ctx, SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := s.readCommit(mustHash(t, snap.ID))
		if got, want := c.TreeHash.String(), gitWriteTree(t, root); got != want {
			t.Fatalf("round %d (%s): watched snapshot tree %s, git %s", round, p, got, want)
		}
	}
	// The watcher was used: only the periodic full walks happened.
	if n := s.walks.Load() - walks; n > int64(rounds/fullScanEvery)+1 {
		t.Fatalf("%d full walks in %d watched snapshots", n, rounds)
	}
}
