package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentd/agentd/internal/platform"
)

// Links are links. A Builder's Write, Delete and Move and Apply act on the
// directory entry a path names: a symbolic link there is deleted, moved or
// replaced by a regular file as the link itself, wherever it points, and
// its change says so (the link's path, mode ModeSymlink, the link's text
// as content, git mode 120000 in the diff). Nothing is ever written through
// a link by Apply: a file that turned into a link since its change was
// computed is a conflict. Reads (ReadFile, Builder.Read) follow links that
// stay inside the workspace.

// linkMode is the mode a change records for a symbolic link.
const linkMode = fs.ModeSymlink | fs.ModePerm

// gitLinkMode is git's mode for a symbolic link.
const gitLinkMode = 0o120000

// entry is current for a directory entry: a symbolic link at real is
// reported as itself (its text as content, mode linkMode), never followed.
func (w *Workspace) entry(real string) (content []byte, exists bool, mode fs.FileMode, err error) {
	if fi, err := w.dir.Lstat(real); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		t, err := w.dir.Readlink(real)
		if err != nil {
			return nil, false, 0, unwrapOS(err)
		}
		return []byte(t), true, linkMode, nil
	}
	return w.current(real)
}

// LinkInfo describes a symbolic link of the workspace.
type LinkInfo struct {
	// Path is the link itself: slash-separated, relative to the root, its
	// parent directories symlink-free.
	Path string
	// Target is the link's text as stored.
	Target string
	// Outside is set when the link leads outside the workspace (or cannot
	// be resolved: a loop); Resolved is then "".
	Outside bool
	// Resolved is the symlink-free relative path the link leads to,
	// through any chain of links.
	Resolved string
	// Missing is set when nothing exists at Resolved (a dangling link).
	Missing bool
	// Mode is the mode of what the link leads to, when it exists inside.
	Mode fs.FileMode
}

// Link describes the symbolic link p names, or returns nil when p's last
// name is not a link (or does not exist). Parent directories are resolved
// as Resolve does; a parent leaving the workspace is an error.
func (w *Workspace) Link(p string) (*LinkInfo, error) {
	r, err := w.resolveEntry(p)
	if err != nil {
		return nil, err
	}
	if r.real == "." {
		return nil, nil
	}
	fi, err := w.dir.Lstat(r.real)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return nil, nil
	}
	t, err := w.dir.Readlink(r.real)
	if err != nil {
		return nil, &PathError{Path: p, Err: unwrapOS(err)}
	}
	li := &LinkInfo{Path: r.real, Target: t}
	rr, err := w.resolve(r.real)
	if err != nil {
		li.Outside = true
		return li, nil
	}
	li.Resolved = rr.real
	if fi, err := w.dir.Lstat(rr.real); err != nil {
		li.Missing = true
	} else {
		li.Mode = fi.Mode()
	}
	return li, nil
}

// IsLink reports whether the change acts on a symbolic link: one that is
// deleted, moved or created as a link, or replaced by a regular file.
func (fc *FileChange) IsLink() bool {
	return fc.Mode&fs.ModeSymlink != 0 || fc.fromLink()
}

// fromLink reports whether the change was computed against a symbolic
// link (known from the diff's old mode).
func (fc *FileChange) fromLink() bool {
	return fc.Diff != nil && fc.Diff.OldMode == gitLinkMode
}

// symlinkEntry creates the link real -> target (parents symlink-free),
// never replacing an existing entry.
func (w *Workspace) symlinkEntry(real, target string) error {
	dirRel, base := splitReal(real)
	d, err := w.openDir(dirRel, true)
	if err != nil {
		return fmt.Errorf("open the parent directory: %w", err)
	}
	defer d.close()
	if err := d.symlink(target, base); err != nil {
		return err
	}
	d.sync()
	return nil
}

// replaceWithLink replaces the regular file at real by the link real ->
// target, atomically (a link with a temporary name renamed over it).
func (w *Workspace) replaceWithLink(real, target string) error {
	dirRel, base := splitReal(real)
	d, err := w.openDir(dirRel, false)
	if err != nil {
		return fmt.Errorf("open the parent directory: %w", err)
	}
	defer d.close()
	m, err := d.lstat(base)
	if err != nil {
		return err
	}
	if !m.isRegular() {
		return fmt.Errorf("is not a regular file (%s); not replacing it", m.mode.Type())
	}
	tmp, err := tempLinkIn(d, target)
	if err != nil {
		return err
	}
	if err := d.rename(tmp, base); err != nil {
		d.remove(tmp)
		return fmt.Errorf("rename the link into place: %w", err)
	}
	d.sync()
	return nil
}

// tempLinkIn creates a link to target with a temporary name in d.
func tempLinkIn(d dirHandle, target string) (string, error) {
	for range 10 {
		name := tempName()
		err := d.symlink(target, name)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("create temporary link: %w", err)
		}
	}
	return "", errors.New("create temporary link: too many name collisions")
}

// sameEntry reports whether the real relative paths a and b, which differ
// only in case or Unicode normalisation (platform.FoldName), name the same
// entry: a case-insensitive or normalising file system (Windows, macOS)
// finds a file under either spelling. On a
// case-sensitive one they are two files, or b is absent.
func (w *Workspace) sameEntry(a, b string) bool {
	if a == b || !platform.SameFoldedName(a, b) {
		return false
	}
	fa, err := os.Lstat(filepath.Join(w.root, filepath.FromSlash(a)))
	if err != nil {
		return false
	}
	fb, err := os.Lstat(filepath.Join(w.root, filepath.FromSlash(b)))
	return err == nil && os.SameFile(fa, fb)
}

// SameEntry reports whether the workspace paths a and b differ only in
// case and name the same file (a case-insensitive file system): moving a
// to b is then a rename of its case, not a move over another file.
func (w *Workspace) SameEntry(a, b string) bool {
	ra, err := w.resolve(a)
	if err != nil {
		return false
	}
	rb, err := w.resolve(b)
	if err != nil {
		return false
	}
	return w.sameEntry(ra.real, rb.real)
}
