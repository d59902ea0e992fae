package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
)

// ReadFile returns the overlay content if the file is open in the editor,
// otherwise the file on disk. A file over MaxFileSize is an error wrapping
// ErrTooLarge; a directory is an error too. Symlinks inside the workspace
// are followed; reading inside `.git` is allowed.
func (w *Workspace) ReadFile(ctx context.Context, p string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := w.resolve(p)
	if err != nil {
		return nil, err
	}
	if text, _, ok := w.overlayOf(r.real); ok {
		return text, nil
	}
	data, _, err := w.readDisk(r.real)
	if err != nil {
		return nil, &PathError{Path: p, Err: err}
	}
	return data, nil
}

// readDisk reads a symlink-free rel from disk, bounded by MaxFileSize, and
// returns its mode.
func (w *Workspace) readDisk(real string) ([]byte, fs.FileMode, error) {
	// Check the type first: opening a FIFO would block.
	if fi, err := w.dir.Lstat(real); err != nil {
		return nil, 0, unwrapOS(err)
	} else if !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil, 0, fmt.Errorf("is not a regular file (%s)", fi.Mode().Type())
	}
	f, err := w.dir.OpenFile(real, readFlags, 0)
	if err != nil {
		return nil, 0, unwrapOS(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, unwrapOS(err)
	}
	if fi.IsDir() {
		return nil, 0, fmt.Errorf("is a directory, not a file")
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("is not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Size() > w.max {
		return nil, 0, fmt.Errorf("%w: %d bytes, over the limit of %d (raise maxFileSize or read a part of it)", ErrTooLarge, fi.Size(), w.max)
	}
	data, err := io.ReadAll(io.LimitReader(f, w.max+1))
	if err != nil {
		return nil, 0, unwrapOS(err)
	}
	if int64(len(data)) > w.max {
		return nil, 0, fmt.Errorf("%w: grew over the limit of %d bytes while being read", ErrTooLarge, w.max)
	}
	return data, fi.Mode(), nil
}

// unwrapOS drops the *fs.PathError of os calls, whose path is the internal
// one; callers wrap the result in a PathError naming the caller's path.
func unwrapOS(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return fmt.Errorf("%s: %w", le.Op, le.Err)
	}
	return err
}

// Stat is os.Lstat on a resolved path.
func (w *Workspace) Stat(p string) (fs.FileInfo, error) {
	r, err := w.resolve(p)
	if err != nil {
		return nil, err
	}
	// Lstat of the last name as given (so a link inside the root is
	// reported as a link) in its symlink-free parent, through the root
	// handle: a parent swapped since for a link that leaves the root is
	// refused by os.Root.
	name, err := w.lastLinkOnly(r)
	if err != nil {
		return nil, &PathError{Path: p, Err: err}
	}
	fi, err := w.dir.Lstat(name)
	if err != nil {
		return nil, &PathError{Path: p, Err: unwrapOS(err)}
	}
	return fi, nil
}

// WriteFile writes atomically (temp file in the same directory, fsync,
// rename), keeping an existing file's mode; perm applies to new files
// (before the umask; 0 means 0644). Missing parent directories are
// created. A symlink inside the workspace is written through (its target
// changes, the link stays). Writes inside `.git` are refused (ErrGitDir).
func (w *Workspace) WriteFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := w.resolveWrite(p)
	if err != nil {
		return err
	}
	if err := w.writeAtomic(r.real, data, perm, false); err != nil {
		return &PathError{Path: p, Err: err}
	}
	return nil
}

// writeAtomic writes data to the symlink-free rel. With exactMode, perm is
// applied as is even to a new file (ignoring the umask) and also replaces an
// existing file's mode.
func (w *Workspace) writeAtomic(real string, data []byte, perm fs.FileMode, exactMode bool) error {
	dir := path.Dir(real)
	if dir != "." {
		if err := w.dir.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create parent directories: %w", unwrapOS(err))
		}
	}
	if perm == 0 {
		perm = 0o644
	}
	mode := perm.Perm()
	setMode := exactMode
	var old fs.FileInfo
	if fi, err := w.dir.Lstat(real); err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("is not a regular file (%s); not replacing it", fi.Mode().Type())
		}
		old = fi
		if !exactMode {
			mode = fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
			setMode = true
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return unwrapOS(err)
	}

	tmp, f, err := w.createTemp(dir, path.Base(real), mode.Perm())
	if err != nil {
		return err
	}
	cleanup := func() {
		f.Close()
		w.dir.Remove(tmp)
	}
	if _, err := f.Write(data); err != nil {
		cleanup()
		return fmt.Errorf("write temporary file: %w", unwrapOS(err))
	}
	if old != nil {
		keepOwner(f, old) // before Chmod: chown clears set-id bits
	}
	if setMode {
		if err := f.Chmod(mode); err != nil {
			cleanup()
			return fmt.Errorf("set mode %v: %w", mode, unwrapOS(err))
		}
	}
	if err := f.Sync(); err != nil {
		cleanup()
		return fmt.Errorf("sync temporary file: %w", unwrapOS(err))
	}
	if err := f.Close(); err != nil {
		w.dir.Remove(tmp)
		return fmt.Errorf("close temporary file: %w", unwrapOS(err))
	}
	if err := w.dir.Rename(tmp, real); err != nil {
		w.dir.Remove(tmp)
		return fmt.Errorf("rename temporary file into place: %w", unwrapOS(err))
	}
	w.syncDir(dir)
	return nil
}

// createTemp creates a new hidden temporary file beside name in dir.
func (w *Workspace) createTemp(dir, name string, perm fs.FileMode) (string, *os.File, error) {
	for range 10 {
		var b [6]byte
		rand.Read(b[:])
		tmp := path.Join(dir, "."+name+".agentd-"+hex.EncodeToString(b[:])+".tmp")
		f, err := w.dir.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if err == nil {
			return tmp, f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", nil, fmt.Errorf("create temporary file: %w", unwrapOS(err))
		}
	}
	return "", nil, errors.New("create temporary file: too many name collisions")
}

// syncDir makes a rename or removal in dir durable. Failure is ignored:
// some file systems cannot sync directories, and the data is written.
func (w *Workspace) syncDir(dir string) {
	d, err := w.dir.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}

// Remove deletes a file (or a symlink, not its target). Directories are
// refused. Removing inside `.git` is refused (ErrGitDir).
func (w *Workspace) Remove(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := w.resolveWrite(p)
	if err != nil {
		return err
	}
	// The path as given: removing a link removes the link. Its parent
	// directories must be real, as resolve checked.
	name, err := w.lastLinkOnly(r)
	if err != nil {
		return &PathError{Path: p, Err: err}
	}
	fi, err := w.dir.Lstat(name)
	if err != nil {
		return &PathError{Path: p, Err: unwrapOS(err)}
	}
	if fi.IsDir() {
		return &PathError{Path: p, Err: errors.New("is a directory; only files are removed")}
	}
	if err := w.dir.Remove(name); err != nil {
		return &PathError{Path: p, Err: unwrapOS(err)}
	}
	w.syncDir(path.Dir(name))
	return nil
}

// lastLinkOnly returns the path that names r's final component itself (not
// its target): the real parent joined with the last name.
func (w *Workspace) lastLinkOnly(r resolved) (string, error) {
	dir, base := path.Split(r.rel)
	if dir == "" {
		return base, nil
	}
	pr, err := w.resolve(path.Clean(dir))
	if err != nil {
		return "", err
	}
	if pr.real == "." {
		return base, nil
	}
	return pr.real + "/" + base, nil
}

// Rename moves a file, creating parent directories of the destination. An
// existing destination is refused (fs.ErrExist): nothing is overwritten.
// A symlink is moved as a link. Paths inside `.git` are refused.
func (w *Workspace) Rename(ctx context.Context, from, to string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rf, err := w.resolveWrite(from)
	if err != nil {
		return err
	}
	rt, err := w.resolveWrite(to)
	if err != nil {
		return err
	}
	src, err := w.lastLinkOnly(rf)
	if err != nil {
		return &PathError{Path: from, Err: err}
	}
	dst, err := w.lastLinkOnly(rt)
	if err != nil {
		return &PathError{Path: to, Err: err}
	}
	if _, err := w.dir.Lstat(src); err != nil {
		return &PathError{Path: from, Err: unwrapOS(err)}
	}
	if src == dst {
		return nil
	}
	if _, err := w.dir.Lstat(dst); err == nil {
		return &PathError{Path: to, Err: fmt.Errorf("%w: not overwriting it with %s", fs.ErrExist, from)}
	}
	if dir := path.Dir(dst); dir != "." {
		if err := w.dir.MkdirAll(dir, 0o755); err != nil {
			return &PathError{Path: to, Err: fmt.Errorf("create parent directories: %w", unwrapOS(err))}
		}
	}
	if err := w.dir.Rename(src, dst); err != nil {
		return &PathError{Path: from, Err: unwrapOS(err)}
	}
	w.syncDir(path.Dir(dst))
	if path.Dir(src) != path.Dir(dst) {
		w.syncDir(path.Dir(src))
	}
	return nil
}
