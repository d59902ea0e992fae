package gitops

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDamagedPackIndexIsNamed: an unreadable pack index is named, with what
// to do, in the error of a read that needs it (not "object not found"
// alone).
func TestDamagedPackIndexIsNamed(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\n"})
	s := openTestStore(t, root, Options{})
	snap, err := s.Snapshot(context.Background(), SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	idx, _ := filepath.Glob(filepath.Join(s.Dir(), "objects", "pack", "pack-*.idx"))
	if len(idx) != 1 {
		t.Fatalf("packs: %v", idx)
	}
	os.WriteFile(idx[0], []byte("garbage"), 0o644)
	s2 := openTestStore(t, root, s.opts)
	_, err = s2.Files(context.Background(), snap.ID)
	if err == nil || !strings.Contains(err.Error(), filepath.Base(idx[0])) || !strings.Contains(err.Error(), "git index-pack") {
		t.Fatalf("err = %v", err)
	}
}
