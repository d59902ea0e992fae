package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/agentd/agentd/internal/platform"
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
		return nil, 0, fmt.Errorf("%w: %d bytes, over the limit of %d (raise the limit with agentd run --max-file-size SIZE, or read a part of it)", ErrTooLarge, fi.Size(), w.max)
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
// (under the umask; 0 means 0644). Missing parent directories are
// created. A symlink inside the workspace is written through (its target
// changes, the link stays); the tools act on links through a Builder
// instead. Writes inside `.git` are refused (ErrGitDir).
func (w *Workspace) WriteFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := w.resolveWrite(p)
	if err != nil {
		return err
	}
	if err := w.writeAtomic(r.real, data, perm, writeOpts{keepMode: true}); err != nil {
		return &PathError{Path: p, Err: err}
	}
	return nil
}

// writeOpts say how writeAtomic treats the file it replaces.
type writeOpts struct {
	// keepMode keeps an existing file's permission bits; otherwise perm
	// replaces them.
	keepMode bool
	// exactNew gives a new file exactly perm; otherwise the umask applies,
	// as it does for any program that creates a file.
	exactNew bool
	// replaceLink replaces a symbolic link at the path by the file;
	// otherwise a link there is refused (never written through).
	replaceLink bool
}

// writeAtomic writes data to the symlink-free rel: a temporary file with a
// short fixed-length name in the same directory, fsync, rename over the
// file, fsync of the directory. Every step goes through a directory handle
// reached without following links (see dirat.go), so nothing can land
// outside the workspace or in another directory than rel's.
func (w *Workspace) writeAtomic(real string, data []byte, perm fs.FileMode, o writeOpts) error {
	dirRel, base := splitReal(real)
	d, err := w.openDir(dirRel, true)
	if err != nil {
		return fmt.Errorf("open the parent directory: %w", err)
	}
	defer d.close()
	if perm == 0 {
		perm = 0o644
	}
	mode := perm.Perm()
	setMode := o.exactNew
	var old *meta
	if m, err := d.lstat(base); err == nil {
		switch {
		case m.isLink() && o.replaceLink:
		case m.isLink():
			return errors.New("is a symbolic link; not writing through it")
		case !m.isRegular():
			return fmt.Errorf("is not a regular file (%s); not replacing it", m.mode.Type())
		default:
			old = &m
			setMode = true
			if o.keepMode {
				mode = m.mode & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}

	tmp, f, err := createTempIn(d, mode.Perm())
	if err != nil {
		return err
	}
	cleanup := func() {
		f.Close()
		d.remove(tmp)
	}
	if _, err := f.Write(data); err != nil {
		cleanup()
		return fmt.Errorf("write temporary file: %w", unwrapOS(err))
	}
	if old != nil {
		keepOwner(f, *old) // before Chmod: chown clears set-id bits
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
		d.remove(tmp)
		return fmt.Errorf("close temporary file: %w", unwrapOS(err))
	}
	if err := platform.RetryBusy(func() error { return d.rename(tmp, base) }); err != nil {
		d.remove(tmp)
		return fmt.Errorf("rename temporary file into place: %w", platform.Explain(err, ""))
	}
	d.sync()
	return nil
}

// Remove deletes a file or a symbolic link (the link, never its target,
// wherever it points). Directories are refused. Removing inside `.git` is
// refused (ErrGitDir).
func (w *Workspace) Remove(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := w.resolveEntryWrite(p)
	if err != nil {
		return err
	}
	if err := w.removeEntry(r.real); err != nil {
		return &PathError{Path: p, Err: err}
	}
	return nil
}

// removeEntry unlinks the entry at real (parents symlink-free) through its
// directory's handle.
func (w *Workspace) removeEntry(real string) error {
	dirRel, base := splitReal(real)
	d, err := w.openDir(dirRel, false)
	if err != nil {
		return err
	}
	defer d.close()
	m, err := d.lstat(base)
	if err != nil {
		return err
	}
	if m.mode.IsDir() {
		return errors.New("is a directory; only files are removed")
	}
	if err := d.remove(base); err != nil {
		return err
	}
	d.sync()
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

// Rename moves a file or a symbolic link (the link itself, its text
// unchanged), creating parent directories of the destination. An existing
// destination is refused (fs.ErrExist): nothing is overwritten. Paths
// inside `.git` are refused.
func (w *Workspace) Rename(ctx context.Context, from, to string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rf, err := w.resolveEntryWrite(from)
	if err != nil {
		return err
	}
	rt, err := w.resolveEntryWrite(to)
	if err != nil {
		return err
	}
	if err := w.renameEntry(rf.real, rt.real); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return &PathError{Path: to, Err: fmt.Errorf("%w: not overwriting it with %s", fs.ErrExist, from)}
		}
		return &PathError{Path: from, Err: err}
	}
	return nil
}

// renameEntry renames the entry src to dst (both with symlink-free
// parents) through directory handles, never replacing an existing dst.
func (w *Workspace) renameEntry(src, dst string) error {
	sDir, sBase := splitReal(src)
	dDir, dBase := splitReal(dst)
	sd, err := w.openDir(sDir, false)
	if err != nil {
		return err
	}
	defer sd.close()
	if _, err := sd.lstat(sBase); err != nil {
		return err
	}
	if src == dst {
		return nil
	}
	dd, err := w.openDir(dDir, true)
	if err != nil {
		return fmt.Errorf("create parent directories of %s: %w", dst, err)
	}
	defer dd.close()
	if err := renameNoReplace(sd, sBase, dd, dBase); err != nil {
		return err
	}
	dd.sync()
	if sDir != dDir {
		sd.sync()
	}
	return nil
}
