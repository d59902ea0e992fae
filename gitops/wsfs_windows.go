//go:build windows

package gitops

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/agentd/agentd/internal/platform"
)

// On Windows the restore goes through os.Root handles instead of openat
// and friends: every directory is opened from the handle of the one above
// it (Go opens each component relative to its parent's handle and refuses
// any path that would leave the root), and each component is checked with
// Lstat first, so a symlink or junction already in the way is refused as on
// POSIX. The difference, documented in docs/architecture.md ("Restores on
// Windows"): a directory swapped for a symlink or junction between that
// check and the open is followed when it points inside the workspace (it
// can never point outside it: os.Root refuses that), where POSIX's
// O_NOFOLLOW refuses it outright. Windows cannot fsync a directory handle
// either; NTFS journals its metadata, so fsyncDir has nothing to do.

// dirFD is an open directory of the workspace.
type dirFD = *os.Root

func openWSRoot(root string) (*wsRoot, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open the workspace %s: %w", root, err)
	}
	return &wsRoot{fd: r}, nil
}

func (w *wsRoot) close() { w.fd.Close() }

// isLinkLike: a symlink, junction or other reparse point, never entered.
func isLinkLike(fi fs.FileInfo) bool {
	return fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0
}

// openDir opens the workspace directory dir ("" = the root; slash
// separated) one component at a time, refusing symlinks and junctions.
// With create, missing directories are made.
func (w *wsRoot) openDir(dir string, create bool) (dirFD, error) {
	cur, err := w.fd.OpenRoot(".")
	if err != nil {
		return nil, err
	}
	if dir == "" || dir == "." {
		return cur, nil
	}
	done := ""
	for _, part := range strings.Split(dir, "/") {
		if done == "" {
			done = part
		} else {
			done += "/" + part
		}
		if p := platform.NameProblem(part); p != "" {
			cur.Close()
			return nil, fmt.Errorf("%s: %s", done, p)
		}
		fi, err := cur.Lstat(part)
		if errors.Is(err, fs.ErrNotExist) && create {
			if merr := cur.Mkdir(part, 0o755); merr != nil && !errors.Is(merr, fs.ErrExist) {
				cur.Close()
				return nil, &fs.PathError{Op: "mkdir", Path: done, Err: platform.Explain(merr, "")}
			}
			parent, _ := splitRel(done)
			w.noteMade(parent)
			fi, err = cur.Lstat(part)
		}
		if err != nil {
			cur.Close()
			return nil, &fs.PathError{Op: "open", Path: done, Err: platform.Explain(err, "")}
		}
		if !fi.IsDir() || isLinkLike(fi) {
			cur.Close()
			return nil, fmt.Errorf("%s: %w", done, errNotDir)
		}
		next, err := cur.OpenRoot(part)
		cur.Close()
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: done, Err: platform.Explain(err, "")}
		}
		cur = next
	}
	return cur, nil
}

// lstatAt is Lstat of name in dirfd, without following a final symlink.
func lstatAt(dirfd dirFD, name string) (fs.FileInfo, error) { return dirfd.Lstat(name) }

func isDirStat(fi fs.FileInfo) bool { return fi.IsDir() && !isLinkLike(fi) }

func closeDir(d dirFD) { d.Close() }

// unlinkAt removes the file (not a directory) name in dirfd. A read-only
// file (Windows refuses to delete one) is made writable first, as git for
// Windows does.
func unlinkAt(dirfd dirFD, name string) error {
	fi, err := dirfd.Lstat(name)
	if err != nil {
		return err
	}
	if fi.IsDir() && !isLinkLike(fi) {
		return fmt.Errorf("%s: is a directory", name)
	}
	err = dirfd.Remove(name)
	if errors.Is(err, fs.ErrPermission) && fi.Mode().Perm()&0o200 == 0 && !isLinkLike(fi) {
		if cerr := dirfd.Chmod(name, 0o644); cerr == nil {
			err = dirfd.Remove(name)
		}
	}
	return platform.Explain(err, "")
}

// rmdirAt removes the empty directory name in dirfd.
func rmdirAt(dirfd dirFD, name string) error {
	fi, err := dirfd.Lstat(name)
	if err != nil {
		return err
	}
	if !fi.IsDir() || isLinkLike(fi) {
		return fmt.Errorf("%s: %w", name, errNotDir)
	}
	return dirfd.Remove(name)
}

// fsyncDir: Windows cannot flush a directory handle (FlushFileBuffers
// needs write access to a file); NTFS journals directory entries itself.
func fsyncDir(dirFD) error { return nil }

// writeFileAt writes data as name in dirfd through tmp (created
// exclusively, flushed if sync) and renames it over name. A symlink
// (link) gets data as its target; Windows allows creating one only with
// Developer Mode or the privilege, and says so. A file another program
// holds open without sharing is reported and left as it was: the
// temporary file is removed and nothing is half written.
func writeFileAt(dirfd dirFD, name, tmp string, data []byte, link bool, perm uint32, sync bool) error {
	if p := platform.NameProblem(name); p != "" {
		return errors.New(p)
	}
	if fi, err := dirfd.Lstat(name); err == nil && isDirStat(fi) {
		if err := dirfd.Remove(name); err != nil {
			return fmt.Errorf("a directory with other (ignored or kept) files is where the file goes; move it away first: %w", err)
		}
	}
	if link {
		if err := dirfd.Symlink(strings.ReplaceAll(string(data), "/", `\`), tmp); err != nil {
			return fmt.Errorf("create the symlink %s (Windows needs Developer Mode or the SeCreateSymbolicLinkPrivilege for symlinks): %w", name, err)
		}
	} else {
		f, err := dirfd.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fs.FileMode(perm&0o777))
		if err != nil {
			return fmt.Errorf("create the temporary file %s: %w", tmp, platform.Explain(err, ""))
		}
		_, err = f.Write(data)
		if err == nil && sync {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = dirfd.Remove(tmp)
			return err
		}
	}
	if err := renameOver(dirfd, tmp, name); err != nil {
		_ = dirfd.Remove(tmp)
		return platform.Explain(err, "")
	}
	return nil
}

// renameOver renames tmp over name, first clearing a read-only target's
// attribute (MoveFileEx refuses to replace a read-only file).
func renameOver(dirfd dirFD, tmp, name string) error {
	err := platform.RetryBusy(func() error { return dirfd.Rename(tmp, name) })
	if errors.Is(err, fs.ErrPermission) {
		if fi, lerr := dirfd.Lstat(name); lerr == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o200 == 0 {
			if cerr := dirfd.Chmod(name, 0o644); cerr == nil {
				err = dirfd.Rename(tmp, name)
			}
		}
	}
	return err
}

// chmodAt sets the permission bits of the regular file name in dirfd.
// Windows keeps only the owner's write bit (the read-only attribute).
func chmodAt(dirfd dirFD, name string, perm uint32) error {
	fi, err := dirfd.Lstat(name)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	return dirfd.Chmod(name, fs.FileMode(perm&0o777))
}

// readAt reads name in dirfd without following it: a regular file's
// content and permission bits, or a symlink's target (mode
// fs.ModeSymlink). A directory gives fs.ModeDir and any other kind
// (a junction, another reparse point) fs.ModeIrregular, without data; a
// regular file over limit bytes gives its size and errTooLarge.
// fs.ErrNotExist if nothing is there.
func readAt(dirfd dirFD, name string, limit int64) ([]byte, fs.FileMode, int64, error) {
	fi, err := dirfd.Lstat(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, 0, 0, fs.ErrNotExist
		}
		return nil, 0, 0, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := dirfd.Readlink(name)
		if err != nil {
			return nil, 0, 0, err
		}
		t = strings.ReplaceAll(t, `\`, "/")
		return []byte(t), fs.ModeSymlink, int64(len(t)), nil
	case isLinkLike(fi):
		return nil, fs.ModeIrregular, fi.Size(), nil
	case fi.IsDir():
		return nil, fs.ModeDir, 0, nil
	case !fi.Mode().IsRegular():
		return nil, fs.ModeIrregular, fi.Size(), nil
	}
	if fi.Size() > limit {
		return nil, fi.Mode().Perm(), fi.Size(), errTooLarge
	}
	f, err := dirfd.Open(name)
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, 0, 0, err
	}
	if int64(len(data)) > limit {
		return nil, fi.Mode().Perm(), int64(len(data)), errTooLarge
	}
	return data, fi.Mode().Perm(), int64(len(data)), nil
}

// samePerm compares permission bits as Windows keeps them: only the
// owner's write bit (the read-only attribute).
func samePerm(a, b uint32) bool { return a&0o200 == b&0o200 }
