package fileset

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func stampOf(fi fs.FileInfo) stamp {
	s := stamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = int64(st.Ino)
		s.ctime = ctimeOf(st)
	}
	return s
}

func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// lstatAt stats name (a name, or a slash-separated path below the
// directory) in the directory open as dirfd without following a final
// symlink, and fills the stat part of an Entry.
func lstatAt(dirfd int, _, name string, e *Entry) error {
	var st unix.Stat_t
	if err := fstatatNoFollow(dirfd, name, &st); err != nil {
		return err
	}
	e.Mode = StatMode(uint32(st.Mode))
	e.Size = st.Size
	e.ModTime = time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
	e.Ino = uint64(st.Ino)
	return nil
}

// pathDir opens directory rel ("" = root itself) below the open
// directory root only to stat it and its files (O_PATH: no listing, no
// read permission needed), and returns its stat data and whether it is
// old enough (not racy) for its listing to be cached; nil if it cannot be
// opened as a directory (gone, or a symlink now). Each file of a cached
// directory is then one lookup from it, not one per component of its path
// from the root: path lookups were a quarter of a no-change walk's CPU
// time on a deep tree, and every walker bumped the one root descriptor's
// reference count.
func pathDir(root *dirHandle, _, rel string, now time.Time) (*dirHandle, stamp, bool) {
	if rel == "" {
		rel = "."
	}
	var fd int
	var err error
	for {
		fd, err = unix.Openat(root.fd, rel, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, stamp{}, false
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, stamp{}, false
	}
	s := stamp{ino: int64(st.Ino), size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), mode: StatMode(st.Mode)}
	limit := now.Add(-dirRacyWindow).UnixNano()
	return &dirHandle{fd: fd, pathOnly: true}, s, s.mode.IsDir() && s.mtime < limit && s.ctime < limit
}

// openSub opens the sub-directory name of d for stat'ing (O_PATH, never
// following a symlink); nil if it cannot (the caller opens it by path).
func (d *dirHandle) openSub(name string) *dirHandle {
	for {
		fd, err := unix.Openat(d.fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil
		}
		return &dirHandle{fd: fd, pathOnly: true}
	}
}

// handleStamp is pathDir for a directory already open (openSub): h, its
// stat data and whether its listing may be cached; h is closed and nil
// returned if it cannot be stat'ed.
func handleStamp(h *dirHandle, now time.Time) (*dirHandle, stamp, bool) {
	var st unix.Stat_t
	if err := unix.Fstat(h.fd, &st); err != nil {
		h.close()
		return nil, stamp{}, false
	}
	s := stamp{ino: int64(st.Ino), size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), mode: StatMode(st.Mode)}
	limit := now.Add(-dirRacyWindow).UnixNano()
	return h, s, s.mode.IsDir() && s.mtime < limit && s.ctime < limit
}

// fstatatNoFollow is fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) with
// the name copied into a buffer on the stack: x/sys/unix allocates one
// per call, once per file of every walk.
func fstatatNoFollow(dirfd int, name string, st *unix.Stat_t) error {
	var buf [256]byte
	if len(name) >= len(buf) || strings.IndexByte(name, 0) >= 0 {
		for {
			err := unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
			if err != unix.EINTR {
				return err
			}
		}
	}
	copy(buf[:], name)
	for {
		_, _, errno := syscall.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(&buf[0])),
			uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return errno
	}
}

func ctimeOf(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }

// dirHandle is an open directory. On Linux it is a bare descriptor: a
// cached directory needs only fstat and fstatat on it, and os.Open's extra
// work (poller registration, non-blocking mode) was a tenth of a no-change
// walk's CPU time. It becomes an *os.File only when it must be listed.
type dirHandle struct {
	fd   int
	path string
	f    *os.File
	// pathOnly: opened with O_PATH (pathDir), for fstatat only.
	pathOnly bool
}

func openDir(abs string) (*dirHandle, error) {
	for {
		fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: abs, Err: err}
		}
		return &dirHandle{fd: fd, path: abs}, nil
	}
}

// stat returns the directory's own stat data.
func (d *dirHandle) stat() (stamp, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return stamp{}, err
	}
	return stamp{ino: int64(st.Ino), size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), mode: StatMode(st.Mode)}, nil
}

// readDir lists the directory.
func (d *dirHandle) readDir() ([]fs.DirEntry, error) {
	if d.f == nil {
		d.f = os.NewFile(uintptr(d.fd), d.path)
	}
	return d.f.ReadDir(-1)
}

// listable reports whether the directory can be listed (not O_PATH).
func (d *dirHandle) listable() bool { return !d.pathOnly }

// dirfd is the descriptor lstatAt works relative to.
func (d *dirHandle) dirfd() int { return d.fd }

func (d *dirHandle) close() {
	if d.f != nil {
		d.f.Close()
		return
	}
	unix.Close(d.fd)
}
