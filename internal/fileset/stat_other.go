//go:build !linux

package fileset

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Portable fallbacks; Linux uses fstatat relative to the open directory.

func stampOf(fi fs.FileInfo) stamp {
	return stamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode(), ino: inoOf(fi)}
}

func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

func lstatAt(_ int, dir, name string, e *Entry) error {
	fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		return err
	}
	e.Mode = fi.Mode()
	e.Size = fi.Size()
	e.ModTime = fi.ModTime()
	e.Ino = uint64(inoOf(fi))
	return nil
}

// dirHandle is an open directory.
type dirHandle struct{ f *os.File }

func openDir(abs string) (*dirHandle, error) {
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	return &dirHandle{f: f}, nil
}

func (d *dirHandle) stat() (stamp, error) {
	fi, err := d.f.Stat()
	if err != nil {
		return stamp{}, err
	}
	return stampOf(fi), nil
}

func (d *dirHandle) readDir() ([]fs.DirEntry, error) { return d.f.ReadDir(-1) }

func (d *dirHandle) dirfd() int { return int(d.f.Fd()) }

func (d *dirHandle) close() { d.f.Close() }

func (d *dirHandle) listable() bool { return true }

// pathDir returns the stat data of directory rel below top and whether it
// is old enough (not racy) for its listing to be cached; its files are
// then stat'ed by their path from top (no handle is returned).
func pathDir(_ *dirHandle, top, rel string, now time.Time) (*dirHandle, stamp, bool) {
	st, ok := relStamp(top, rel, now)
	return nil, st, ok
}

// relStamp returns the stat data of directory rel below top and whether it
// is old enough (not racy) for its listing to be cached.
func relStamp(top, rel string, now time.Time) (stamp, bool) {
	fi, err := os.Lstat(filepath.Join(top, filepath.FromSlash(rel)))
	if err != nil {
		return stamp{}, false
	}
	st := stampOf(fi)
	limit := now.Add(-dirRacyWindow).UnixNano()
	return st, fi.IsDir() && st.mtime < limit
}

// openSub is not used on this platform: sub-directories are stat'ed by
// path (pathDir).
func (d *dirHandle) openSub(string) *dirHandle { return nil }

// handleStamp is never called here (openSub returns nil).
func handleStamp(h *dirHandle, now time.Time) (*dirHandle, stamp, bool) {
	st, err := h.stat()
	if err != nil {
		h.close()
		return nil, stamp{}, false
	}
	return h, st, st.mode.IsDir() && st.mtime < now.Add(-dirRacyWindow).UnixNano()
}
