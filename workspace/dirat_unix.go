//go:build unix

package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/fileset"
	"github.com/agentd/agentd/internal/platform"
)

// fdDir is a directory file descriptor reached from the workspace root
// without following links.
type fdDir struct {
	fd  int
	rel string
}

// openDir opens the symlink-free relative directory rel, one component at
// a time with O_NOFOLLOW, creating missing ones (mode 0755 under the umask)
// when create is set. A component that is a link is refused
// (errLinkSwapped): rel was checked to be free of links, so one found now
// was swapped in since.
func (w *Workspace) openDir(rel string, create bool) (dirHandle, error) {
	steps, err := dirSteps(rel)
	if err != nil {
		return nil, err
	}
	rf, err := w.dir.Open(".")
	if err != nil {
		return nil, unwrapOS(err)
	}
	fd, err := openatRetry(int(rf.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	rf.Close()
	if err != nil {
		return nil, fmt.Errorf("open the workspace root: %w", err)
	}
	for i, comp := range steps {
		next, err := openatRetry(fd, comp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(fd, comp, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = openatRetry(fd, comp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		if err != nil {
			prefix := strings.Join(steps[:i+1], "/")
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				var st unix.Stat_t
				if unix.Fstatat(fd, comp, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && uint32(st.Mode)&unix.S_IFMT == unix.S_IFLNK {
					err = errLinkSwapped
				} else {
					err = fmt.Errorf("is not a directory: %w", unix.ENOTDIR)
				}
			}
			unix.Close(fd)
			return nil, fmt.Errorf("%s: %w", prefix, err)
		}
		unix.Close(fd)
		fd = next
	}
	return &fdDir{fd: fd, rel: rel}, nil
}

func openatRetry(dirfd int, name string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, perm)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func (d *fdDir) lstat(name string) (meta, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return meta{}, err
	}
	return meta{mode: fileset.StatMode(uint32(st.Mode)), uid: int(st.Uid), gid: int(st.Gid)}, nil
}

func (d *fdDir) readlink(name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(d.fd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

func (d *fdDir) create(name string, perm fs.FileMode) (*os.File, error) {
	fd, err := openatRetry(d.fd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), d.rel+"/"+name), nil
}

func (d *fdDir) rename(from, to string) error { return unix.Renameat(d.fd, from, d.fd, to) }

func (d *fdDir) remove(name string) error { return unix.Unlinkat(d.fd, name, 0) }

func (d *fdDir) symlink(target, name string) error { return unix.Symlinkat(target, d.fd, name) }

func (d *fdDir) sync() { _ = unix.Fsync(d.fd) }

func (d *fdDir) close() { unix.Close(d.fd) }

// renameNoReplace moves from in src to to in dst, refusing (fs.ErrExist)
// to replace an existing entry.
func renameNoReplace(src dirHandle, from string, dst dirHandle, to string) error {
	s, d := src.(*fdDir), dst.(*fdDir)
	if err := renameat2NoReplace(s.fd, from, d.fd, to); err != errNoRenameat2 {
		return err
	}
	if _, err := d.lstat(to); err == nil && !(from != to && platform.SameFoldedName(from, to) && sameInode(s.fd, from, d.fd, to)) {
		// (The same inode under another spelling is a rename of the
		// name's case or normalisation on a case-insensitive volume,
		// APFS's default.)
		return unix.EEXIST
	}
	return unix.Renameat(s.fd, from, d.fd, to)
}

// sameInode reports whether from in sfd and to in dfd are one entry.
func sameInode(sfd int, from string, dfd int, to string) bool {
	var a, b unix.Stat_t
	if unix.Fstatat(sfd, from, &a, unix.AT_SYMLINK_NOFOLLOW) != nil || unix.Fstatat(dfd, to, &b, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}
