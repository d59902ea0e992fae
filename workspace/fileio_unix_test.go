//go:build unix

package workspace

// POSIX-only: a FIFO (no such file on Windows) and file owners (uid/gid).

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestStat(t *testing.T) {
	w, root := newWS(t, map[string]string{"f": "x"})
	if err := os.Symlink("f", filepath.Join(root, "l")); err != nil {
		t.Fatal(err)
	}
	fi, err := w.Stat("l")
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("Stat(link) = %v, %v; want the link itself", fi, err)
	}
	if err := os.MkdirAll(filepath.Join(root, "d", "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "d"), filepath.Join(root, "abs")); err != nil {
		t.Fatal(err)
	}
	if fi, err := w.Stat("abs/e"); err != nil || !fi.IsDir() {
		t.Fatalf("Stat through an absolute link inside = %v, %v", fi, err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ReadFile(t.Context(), "fifo"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("ReadFile(fifo) = %v; want a refusal (and no hang)", err)
	}
	if _, err := w.Stat("../x"); !errors.Is(err, ErrOutsideRoot) {
		t.Fatalf("Stat outside: %v", err)
	}
	if _, err := w.Stat("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat missing: %v", err)
	}
}

func TestWriteFileKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Log("not root: only the mode is kept (checked elsewhere)")
		return
	}
	w, root := newWS(t, map[string]string{"f": "x"})
	p := filepath.Join(root, "f")
	if err := os.Chown(p, 1234, 5678); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(t.Context(), "f", []byte("y"), 0); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 1234 || st.Gid != 5678 {
		t.Fatalf("owner after write = %d:%d; want 1234:5678", st.Uid, st.Gid)
	}
}
