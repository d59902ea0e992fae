package gitops

import (
	"context"
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
		s.drainWatcher()
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
