package platform

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGitNameOnWindows: every name Windows opens a real .git directory
// under (trailing dots and spaces, any case) is a .git name here, and so
// are the 8.3 and stream spellings, which Wine does not emulate.
func TestGitNameOnWindows(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, ".git")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{".git.", ".git ", ".GIT", ".git. ."} {
		fi, err := os.Stat(filepath.Join(root, n))
		if err != nil || !os.SameFile(fi, gi) {
			t.Errorf("Windows does not open .git as %q (%v): the alias list is wrong", n, err)
		}
		if !IsGitName(n) {
			t.Errorf("IsGitName(%q) = false on Windows", n)
		}
	}
	for _, n := range []string{"GIT~1", ".git::$INDEX_ALLOCATION"} {
		if !IsGitName(n) {
			t.Errorf("IsGitName(%q) = false on Windows", n)
		}
	}
}

// TestFoldNameFindsWindowsSpellings: a file Windows finds under another
// case is under the same FoldName key.
func TestFoldNameFindsWindowsSpellings(t *testing.T) {
	root := t.TempDir()
	for _, p := range [][2]string{{"\u00e9t\u00e9.txt", "\u00c9T\u00c9.txt"}, {"stra\u00dfe.txt", "STRA\u00dfE.txt"}, {"Readme.MD", "README.md"}} {
		if err := os.WriteFile(filepath.Join(root, p[0]), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		a, err := os.Stat(filepath.Join(root, p[0]))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.Stat(filepath.Join(root, p[1]))
		if err != nil || !os.SameFile(a, b) {
			t.Errorf("Windows does not find %q as %q (%v)", p[0], p[1], err)
			continue
		}
		if !SameFoldedName(p[0], p[1]) {
			t.Errorf("%q and %q are one file on Windows but FoldName keeps them apart", p[0], p[1])
		}
	}
}
