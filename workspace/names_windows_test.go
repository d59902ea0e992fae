package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestGitAliasesRefusedOnWindows: Windows opens the .git directory under
// names other than ".git" (Win32 strips trailing dots and spaces; NTFS
// gives it the 8.3 name GIT~1); every one is refused as .git itself is,
// and nothing reaches .git. (A stream spelling, .git::$INDEX_ALLOCATION,
// is refused before: a colon is not in a workspace path.)
func TestGitAliasesRefusedOnWindows(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".git", "config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := t.Context()
	for _, p := range []string{".git./config", ".git /config", ".GIT. ./config", "GIT~1/config", "git~1/hooks/pre-commit",
		"sub/.git./HEAD"} {
		if err := w.WriteFile(ctx, p, []byte("pwned\n"), 0o644); !errors.Is(err, ErrGitDir) {
			t.Errorf("WriteFile(%q) = %v; want ErrGitDir", p, err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Rename(ctx, "a.txt", ".git /a.txt"); !errors.Is(err, ErrGitDir) {
		t.Errorf("Rename to .git /a.txt = %v; want ErrGitDir", err)
	}
	if data, err := os.ReadFile(filepath.Join(root, ".git", "config")); err != nil || string(data) != "[core]\n" {
		t.Errorf(".git/config is %q (%v): a write reached .git through an alias", data, err)
	}
	entries, _ := os.ReadDir(filepath.Join(root, ".git"))
	if len(entries) != 1 {
		t.Errorf(".git holds %d entries, want only config", len(entries))
	}
}

// TestCaseMoveFoldsAsWindows: a move that changes only the case of a
// non-ASCII name ("été.txt" to "ÉTÉ.txt") is the same file on Windows:
// it is renamed, not refused as an existing destination, and the
// directory lists the new spelling.
func TestCaseMoveFoldsAsWindows(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "\u00e9t\u00e9.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if !w.SameEntry("\u00e9t\u00e9.txt", "\u00c9T\u00c9.txt") {
		t.Fatal(`SameEntry("été.txt", "ÉTÉ.txt") = false on Windows`)
	}
	if err := w.Rename(t.Context(), "\u00e9t\u00e9.txt", "\u00c9T\u00c9.txt"); err != nil {
		t.Fatalf("case-only move: %v", err)
	}
	names, err := os.ReadDir(root)
	if err != nil || len(names) != 1 || names[0].Name() != "\u00c9T\u00c9.txt" {
		t.Errorf("after the move the folder lists %v (%v); want ÉTÉ.txt alone", names, err)
	}
}
