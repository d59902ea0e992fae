package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readDiskFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestWriteFileKeepsMode(t *testing.T) {
	w, root := newWS(t, map[string]string{"run.sh": "#!/bin/sh\n", "plain.txt": "x\n", "ro.txt": "r\n"})
	ctx := t.Context()
	for name, mode := range map[string]fs.FileMode{"run.sh": 0o755, "plain.txt": 0o640, "ro.txt": 0o444} {
		p := filepath.Join(root, name)
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteFile(ctx, name, []byte("new "+name), 0o600); err != nil {
			t.Fatalf("WriteFile(%s): %v", name, err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode after write = %v; want %v kept", name, fi.Mode().Perm(), mode)
		}
		if got := readDiskFile(t, p); got != "new "+name {
			t.Errorf("%s: content = %q", name, got)
		}
	}
	// A new file gets perm (under the umask: 0600 has nothing it masks).
	if err := w.WriteFile(ctx, "new/dir/file.txt", []byte("n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(root, "new", "dir", "file.txt"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("new file: %v, %v; want mode 0600 and parents created", fi, err)
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".agentd-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func TestWriteFileIsAtomicRename(t *testing.T) {
	w, root := newWS(t, map[string]string{"f.txt": "old\n"})
	p := filepath.Join(root, "f.txt")
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	// A reader holding the old file keeps seeing the old content: the new
	// content arrived as a new inode.
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := w.WriteFile(t.Context(), "f.txt", []byte("new\n"), 0); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, after) {
		t.Fatal("WriteFile wrote in place; want a rename of a new file")
	}
	buf := make([]byte, 10)
	n, _ := f.Read(buf)
	if string(buf[:n]) != "old\n" {
		t.Fatalf("old handle reads %q", buf[:n])
	}
	if got := readDiskFile(t, p); got != "new\n" {
		t.Fatalf("content = %q", got)
	}
}

func TestWriteThroughSymlinks(t *testing.T) {
	w, root, outside := escapeTree(t)
	ctx := t.Context()
	// A link inside the root is written through and stays a link.
	if err := w.WriteFile(ctx, "in_file", []byte("via link\n"), 0); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "in_file")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("in_file is no longer a symlink: %v, %v", fi, err)
	}
	if got := readDiskFile(t, filepath.Join(root, "file.txt")); got != "via link\n" {
		t.Fatalf("target content = %q", got)
	}
	// A dangling link inside the root creates its target.
	if err := w.WriteFile(ctx, "dangling_in", []byte("created\n"), 0); err != nil {
		t.Fatal(err)
	}
	if got := readDiskFile(t, filepath.Join(root, "missing.txt")); got != "created\n" {
		t.Fatalf("missing.txt = %q", got)
	}
	// Nothing is ever written outside: through a parent that leads out,
	// every operation is refused.
	for _, p := range []string{"to_outside_abs/secret", "chain1/secret", "to_outside_rel/new.txt"} {
		if err := w.WriteFile(ctx, p, []byte("pwned"), 0); !errors.Is(err, ErrOutsideRoot) {
			t.Errorf("WriteFile(%q) error = %v; want ErrOutsideRoot", p, err)
		}
		if err := w.Remove(ctx, p); !errors.Is(err, ErrOutsideRoot) {
			t.Errorf("Remove(%q) error = %v; want ErrOutsideRoot", p, err)
		}
		if err := w.Rename(ctx, "file.txt", p); !errors.Is(err, ErrOutsideRoot) {
			t.Errorf("Rename(file.txt, %q) error = %v; want ErrOutsideRoot", p, err)
		}
	}
	// A link to outside as the last name: WriteFile (which writes through
	// links) refuses it, Rename does not replace it, Remove removes the
	// link itself and never its target.
	for _, p := range []string{"to_secret", "dangling_out", "dir/sub/deep"} {
		if err := w.WriteFile(ctx, p, []byte("pwned"), 0); !errors.Is(err, ErrOutsideRoot) {
			t.Errorf("WriteFile(%q) error = %v; want ErrOutsideRoot", p, err)
		}
		if err := w.Rename(ctx, "file.txt", p); !errors.Is(err, fs.ErrExist) {
			t.Errorf("Rename(file.txt, %q) error = %v; want ErrExist", p, err)
		}
		if err := w.Remove(ctx, p); err != nil {
			t.Errorf("Remove(%q) = %v; want the link removed", p, err)
		}
		if _, err := os.Lstat(filepath.Join(root, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("link %s still there after Remove: %v", p, err)
		}
	}
	if got := readDiskFile(t, filepath.Join(outside, "secret")); got != "secret\n" {
		t.Fatalf("outside/secret = %q", got)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Fatalf("outside has %d entries; want only secret", len(entries))
	}
	if _, err := os.Lstat("/nonexistent-agentd-test"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a dangling link's outside target was created")
	}
}

func TestRemoveAndRename(t *testing.T) {
	w, root := newWS(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "d/x.txt": "x\n"})
	ctx := t.Context()
	if err := os.Symlink("b.txt", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := w.Remove(ctx, "link"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "link")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("link not removed")
	}
	if got := readDiskFile(t, filepath.Join(root, "b.txt")); got != "b\n" {
		t.Fatal("removing a link touched its target")
	}
	if err := w.Remove(ctx, "d"); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("Remove(dir) error = %v; want a refusal", err)
	}
	if err := w.Remove(ctx, "nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Remove(missing) error = %v", err)
	}
	if err := w.Rename(ctx, "a.txt", "deep/new/a.txt"); err != nil {
		t.Fatal(err)
	}
	if got := readDiskFile(t, filepath.Join(root, "deep", "new", "a.txt")); got != "a\n" {
		t.Fatalf("moved content = %q", got)
	}
	if err := w.Rename(ctx, "b.txt", "d/x.txt"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Rename over an existing file: %v; want ErrExist", err)
	}
	if got := readDiskFile(t, filepath.Join(root, "d", "x.txt")); got != "x\n" {
		t.Fatal("Rename overwrote the destination")
	}
	if err := w.Rename(ctx, "b.txt", ".git/b.txt"); !errors.Is(err, ErrGitDir) {
		t.Fatalf("Rename into .git: %v", err)
	}
}
