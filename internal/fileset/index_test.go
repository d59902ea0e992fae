package fileset

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

// The index reader agrees with `git ls-files --cached` for every index
// version, intent-to-add entries (extended flags), long names and a
// split index.
func TestIndexVersionsMatchGit(t *testing.T) {
	env := newGitEnv(t)
	for _, tc := range []struct {
		name  string
		setup [][]string
	}{
		{"v2", [][]string{{"update-index", "--index-version", "2"}}},
		{"v3-intent-to-add", [][]string{{"add", "-N", "itn.txt"}}},
		{"v4", [][]string{{"update-index", "--index-version", "4"}}},
		{"split", [][]string{{"update-index", "--split-index"}, {"add", "late.txt"}, {"rm", "-q", "--cached", "d/1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			env.git(t, root, "", false, "init", "-q")
			long := ""
			for range 30 {
				long += "very-long-directory-name/"
			}
			for i := range 20 {
				writeFile(t, filepath.Join(root, "d", fmt.Sprint(i)), "x")
			}
			writeFile(t, filepath.Join(root, filepath.FromSlash(long), "f"), "x")
			writeFile(t, filepath.Join(root, "itn.txt"), "x")
			writeFile(t, filepath.Join(root, "late.txt"), "x")
			writeFile(t, filepath.Join(root, "a b", "ü.txt"), "x")
			env.git(t, root, "", false, "add", "d", "very-long-directory-name", "a b")
			for _, args := range tc.setup {
				env.git(t, root, "", false, args...)
			}
			want := splitNUL(env.git(t, root, "", false, "ls-files", "-z", "--cached"))
			sort.Strings(want)
			s := env.open(t, root)
			r, err := s.loadRules()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.index.names, want) {
				t.Errorf("index names = %q\nwant %q", r.index.names, want)
			}
			if tc.name == "split" {
				if m, _ := filepath.Glob(filepath.Join(root, ".git", "sharedindex.*")); len(m) == 0 {
					t.Fatalf("test setup: no shared index written")
				}
			}
		})
	}
}

func TestCorruptIndexIsAnError(t *testing.T) {
	env := newGitEnv(t)
	root := t.TempDir()
	env.git(t, root, "", false, "init", "-q")
	if err := os.WriteFile(filepath.Join(root, ".git", "index"), []byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x05garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := env.open(t, root)
	if err := s.Walk(t.Context(), Options{}, func(Entry) error { return nil }); err == nil {
		t.Fatal("Walk with a corrupt index: no error")
	}
}
