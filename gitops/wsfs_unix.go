//go:build unix

package gitops

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"golang.org/x/sys/unix"
)

// The restore changes the workspace only through directory handles: every
// parent directory is opened from the one above it with O_NOFOLLOW and
// O_DIRECTORY, and files are created, renamed and removed relative to the
// handle of their directory (openat, renameat, unlinkat). A directory that
// is swapped for a symlink while a restore runs is therefore never
// followed: the restore either still holds the real directory or fails on
// the symlink. No path is ever resolved twice.

// dirFD is an open directory of the workspace.
type dirFD = int

func openWSRoot(root string) (*wsRoot, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open the workspace %s: %w", root, err)
	}
	return &wsRoot{fd: fd}, nil
}

func (w *wsRoot) close() { unix.Close(w.fd) }

// openDir opens the workspace directory dir ("" = the root; slash
// separated) one component at a time, never following a symlink. With
// create, missing directories are made (0755, before the umask).
func (w *wsRoot) openDir(dir string, create bool) (int, error) {
	fd, err := unix.Dup(w.fd)
	if err != nil {
		return -1, err
	}
	if dir == "" || dir == "." {
		return fd, nil
	}
	done := ""
	for _, part := range strings.Split(dir, "/") {
		if done == "" {
			done = part
		} else {
			done += "/" + part
		}
		next, err := openDirAt(fd, part)
		if errors.Is(err, unix.ENOENT) && create {
			if merr := unix.Mkdirat(fd, part, 0o755); merr != nil && !errors.Is(merr, unix.EEXIST) {
				unix.Close(fd)
				return -1, &fs.PathError{Op: "mkdir", Path: done, Err: merr}
			}
			parent, _ := splitRel(done)
			w.noteMade(parent)
			next, err = openDirAt(fd, part)
		}
		unix.Close(fd)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return -1, fmt.Errorf("%s: %w", done, errNotDir)
			}
			return -1, &fs.PathError{Op: "open", Path: done, Err: err}
		}
		fd = next
	}
	return fd, nil
}

func openDirAt(dirfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return fd, err
	}
}

// lstatAt is fstatat without following a final symlink.
func lstatAt(dirfd int, name string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, err
	}
	return &st, nil
}

func isDirStat(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }
func isRegStat(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFREG }

// writeFileAt writes data as name in dirfd through tmp (created
// exclusively, fsync'd if sync, given perm) and renames it into place. A
// symlink (link) gets data as its target. An empty directory in the way is
// removed; one with files in it is an error.
func writeFileAt(dirfd int, name, tmp string, data []byte, link bool, perm uint32, sync bool) error {
	if st, err := lstatAt(dirfd, name); err == nil && isDirStat(st) {
		if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil {
			return fmt.Errorf("a directory with other (ignored or kept) files is where the file goes; move it away first: %w", err)
		}
	}
	if link {
		if err := unix.Symlinkat(string(data), dirfd, tmp); err != nil {
			return fmt.Errorf("create the temporary link %s: %w", tmp, err)
		}
	} else {
		fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm&0o7777)
		if err != nil {
			return fmt.Errorf("create the temporary file %s: %w", tmp, err)
		}
		err = writeAll(fd, data)
		if err == nil && sync {
			err = unix.Fsync(fd)
		}
		if err == nil {
			err = unix.Fchmod(fd, perm&0o7777) // the umask applied at create
		}
		if cerr := unix.Close(fd); err == nil {
			err = cerr
		}
		if err != nil {
			unix.Unlinkat(dirfd, tmp, 0)
			return err
		}
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return err
	}
	return nil
}

func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// chmodAt sets the permission bits of the regular file name in dirfd,
// never following a symlink.
func chmodAt(dirfd int, name string, perm uint32) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EACCES) {
		return chmodNoFollow(dirfd, name, perm)
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if !isRegStat(&st) {
		return errors.New("not a regular file")
	}
	return unix.Fchmod(fd, perm&0o7777)
}

func closeDir(fd dirFD) { unix.Close(fd) }

// unlinkAt removes the file (not a directory) name in dirfd.
func unlinkAt(dirfd dirFD, name string) error { return unix.Unlinkat(dirfd, name, 0) }

// rmdirAt removes the empty directory name in dirfd.
func rmdirAt(dirfd dirFD, name string) error { return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) }

// fsyncDir makes the entries of an open directory durable; a filesystem
// that cannot sync directories (EINVAL) has nothing to do.
func fsyncDir(fd dirFD) error {
	err := unix.Fsync(fd)
	if errors.Is(err, unix.EINVAL) {
		return nil
	}
	return err
}

// readAt reads name in dirfd without following it: a regular file's
// content and permission bits, or a symlink's target (mode
// fs.ModeSymlink). A directory gives fs.ModeDir and any other kind
// fs.ModeIrregular, without data; a regular file over limit bytes gives
// its size and errTooLarge. fs.ErrNotExist if nothing is there.
func readAt(dirfd dirFD, name string, limit int64) ([]byte, fs.FileMode, int64, error) {
	st, err := lstatAt(dirfd, name)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil, 0, 0, fs.ErrNotExist
	}
	if err != nil {
		return nil, 0, 0, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		buf := make([]byte, 256)
		for {
			n, err := unix.Readlinkat(dirfd, name, buf)
			if err != nil {
				return nil, 0, 0, err
			}
			if n < len(buf) {
				return buf[:n], fs.ModeSymlink, int64(n), nil
			}
			buf = make([]byte, 2*len(buf))
		}
	case unix.S_IFDIR:
		return nil, fs.ModeDir, 0, nil
	case unix.S_IFREG:
	default:
		return nil, fs.ModeIrregular, st.Size, nil
	}
	if st.Size > limit {
		return nil, fs.FileMode(st.Mode & 0o777), st.Size, errTooLarge
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOENT) {
			return nil, 0, 0, fmt.Errorf("replaced while being read: %w", err)
		}
		return nil, 0, 0, err
	}
	defer unix.Close(fd)
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil {
		return nil, 0, 0, err
	}
	if fst.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fs.ModeIrregular, fst.Size, nil
	}
	data := make([]byte, 0, fst.Size+1)
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, 0, 0, err
		}
		if n == 0 {
			break
		}
		data = append(data, buf[:n]...)
		if int64(len(data)) > limit {
			return nil, fs.FileMode(fst.Mode & 0o777), int64(len(data)), errTooLarge
		}
	}
	return data, fs.FileMode(fst.Mode & 0o777), int64(len(data)), nil
}

// samePerm compares permission bits as the platform keeps them.
func samePerm(a, b uint32) bool { return a&0o7777 == b&0o7777 }
