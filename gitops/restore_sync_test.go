package gitops

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// TestDirsToSync: a restore that applied its ops itself syncs each op's
// directory, the parents of the directories it made or removed, and the
// root, not every directory on the ops' way; a journal finished by
// another applier (after a crash) syncs every directory on the way.
func TestDirsToSync(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"x/y/old": "old\n", "p/q/r/gone": "gone\n", "m/n/f": "f\n", "keep/k": "k\n"})
	s := openTestStore(t, root, Options{})
	data := []byte("new\n")
	h := hashObject(plumbing.BlobObject, data)
	sink := &lazyPackSink{s: s, pw: new(*packWriter)}
	if err := sink.put(plumbing.BlobObject, h, data); err != nil {
		t.Fatal(err)
	}
	if pw := *sink.pw; pw != nil {
		idx, err := pw.finish()
		if err != nil {
			t.Fatal(err)
		}
		s.packWritten(idx)
	}
	ops := []restoreOp{
		{Path: "p/q/r/gone", Op: "delete"},                                                 // removes r and q (emptied): p's and q's entries change
		{Path: "a/b/c/new", Op: "write", Mode: uint32(filemode.Regular), Hash: h.String()}, // makes a, a/b, a/b/c
		{Path: "x/y/old", Op: "write", Mode: uint32(filemode.Regular), Hash: h.String()},
		{Path: "m/n/f", Op: "chmod", Mode: uint32(filemode.Regular), Perm: 0o600},
	}
	a, err := s.newApplier("0123456789abcdef", func(d string) bool { return d == "p" })
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	a.own = true
	if _, err := a.applyOps(t.Context(), ops); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "p/q")); !os.IsNotExist(err) {
		t.Fatalf("p/q should be removed as emptied: %v", err)
	}
	keys := func(m map[string]struct{}) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	want := []string{"", "a", "a/b", "a/b/c", "m/n", "p", "p/q", "p/q/r", "x/y"}
	if got := keys(a.dirsToSync(ops)); !slices.Equal(got, want) {
		t.Fatalf("own applier syncs %q, want %q", got, want)
	}
	b, err := s.newApplier("fedcba9876543210", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	want = []string{"", "a", "a/b", "a/b/c", "m", "m/n", "p", "p/q", "p/q/r", "x", "x/y"}
	if got := keys(b.dirsToSync(ops)); !slices.Equal(got, want) {
		t.Fatalf("a journal's applier syncs %q, want %q", got, want)
	}
}
