package fileset

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"

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

// modeOf converts st_mode to an fs.FileMode as os.Lstat does.
func modeOf(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// lstatAt stats name in the directory open as dirfd without following a
// final symlink, and fills the stat part of an Entry.
func lstatAt(dirfd int, _, name string, e *Entry) error {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	e.Mode = modeOf(uint32(st.Mode))
	e.Size = st.Size
	e.ModTime = time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
	e.Ino = uint64(st.Ino)
	return nil
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
	return stamp{ino: int64(st.Ino), size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), mode: modeOf(st.Mode)}, nil
}

// readDir lists the directory.
func (d *dirHandle) readDir() ([]fs.DirEntry, error) {
	if d.f == nil {
		d.f = os.NewFile(uintptr(d.fd), d.path)
	}
	return d.f.ReadDir(-1)
}

// dirfd is the descriptor lstatAt works relative to.
func (d *dirHandle) dirfd() int { return d.fd }

func (d *dirHandle) close() {
	if d.f != nil {
		d.f.Close()
		return
	}
	unix.Close(d.fd)
}
