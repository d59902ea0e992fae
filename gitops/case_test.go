package gitops

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

// listTree is every file under root as "path=content", with each name
// spelled as the directory lists it (so the case a name is written in
// shows, also on a case-insensitive file system).
func listTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(rel)+"="+string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestCaseOnlyRenameSnapshotAndRestore: a file and a directory renamed
// to names that differ only in case are snapshotted under their new
// names, and restoring either snapshot brings back that snapshot's names
// and contents. On a case-insensitive file system (Windows, macOS)
// dir/b.txt, looked up on disk, is Dir/b.txt: taken for the target's file
// already in place, the restore deleted Dir/b.txt and wrote nothing, so
// the file was lost. And the restore deletes A.txt before it writes a.txt,
// the same file there.
func TestCaseOnlyRenameSnapshotAndRestore(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "one\n", "dir/b.txt": "b\n", "keep.txt": "k\n"})
	s := openTestStore(t, root, Options{})
	defer s.Close()
	before, err := s.Snapshot(ctx, SnapshotOptions{Label: "before"})
	if err != nil {
		t.Fatal(err)
	}
	wantBefore := listTree(t, root)

	// Through a temporary name: Wine 8's MoveFileEx of a.txt to A.txt
	// answers success and keeps the old name (Windows renames it).
	for _, mv := range [][2]string{{"a.txt", "A.txt"}, {"dir", "Dir"}} {
		tmp := filepath.Join(root, "renaming.tmp")
		if err := os.Rename(filepath.Join(root, mv[0]), tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(root, mv[1])); err != nil {
			t.Fatal(err)
		}
	}
	writeTree(t, root, map[string]string{"A.txt": "ONE\n"})
	wantAfter := []string{"A.txt=ONE\n", "Dir/b.txt=b\n", "keep.txt=k\n"}
	if got := listTree(t, root); !reflect.DeepEqual(got, wantAfter) {
		t.Fatalf("after the renames the tree is %q, want %q", got, wantAfter)
	}
	after, err := s.Snapshot(ctx, SnapshotOptions{Label: "after"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Files(ctx, after.ID); err != nil || !reflect.DeepEqual(got, []string{"A.txt", "Dir/b.txt", "keep.txt"}) {
		t.Fatalf("the snapshot after the renames holds %q (%v), want A.txt, Dir/b.txt, keep.txt", got, err)
	}

	if _, err := s.Restore(ctx, before.ID, RestoreOptions{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	if got := listTree(t, root); !reflect.DeepEqual(got, wantBefore) {
		t.Fatalf("restored to the snapshot before the renames: %q, want %q", got, wantBefore)
	}
	if _, err := s.Restore(ctx, after.ID, RestoreOptions{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	if got := listTree(t, root); !reflect.DeepEqual(got, wantAfter) {
		t.Fatalf("restored to the snapshot after the renames: %q, want %q", got, wantAfter)
	}
}
