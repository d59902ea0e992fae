//go:build !unix

package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
)

// rootDir is a directory of the workspace reached through the os.Root,
// which refuses any path that leaves the root, also through a link.
type rootDir struct {
	w   *Workspace
	rel string
}

func (w *Workspace) openDir(rel string, create bool) (dirHandle, error) {
	if _, err := dirSteps(rel); err != nil {
		return nil, err
	}
	if create && rel != "." {
		if err := w.dir.MkdirAll(rel, 0o755); err != nil {
			return nil, unwrapOS(err)
		}
	}
	fi, err := w.dir.Lstat(rel)
	if err != nil {
		return nil, unwrapOS(err)
	}
	if !fi.IsDir() {
		return nil, errors.New(rel + ": " + errLinkSwapped.Error())
	}
	return &rootDir{w: w, rel: rel}, nil
}

func (d *rootDir) name(n string) string { return path.Join(d.rel, n) }

func (d *rootDir) lstat(name string) (meta, error) {
	fi, err := d.w.dir.Lstat(d.name(name))
	if err != nil {
		return meta{}, unwrapOS(err)
	}
	return meta{mode: fi.Mode()}, nil
}

func (d *rootDir) readlink(name string) (string, error) {
	t, err := d.w.dir.Readlink(d.name(name))
	return t, unwrapOS(err)
}

func (d *rootDir) create(name string, perm fs.FileMode) (*os.File, error) {
	f, err := d.w.dir.OpenFile(d.name(name), os.O_RDWR|os.O_CREATE|os.O_EXCL, perm.Perm())
	return f, unwrapOS(err)
}

func (d *rootDir) rename(from, to string) error {
	return unwrapOS(d.w.dir.Rename(d.name(from), d.name(to)))
}

func (d *rootDir) remove(name string) error { return unwrapOS(d.w.dir.Remove(d.name(name))) }

func (d *rootDir) symlink(target, name string) error {
	return unwrapOS(d.w.dir.Symlink(target, d.name(name)))
}

func (d *rootDir) sync() {
	if f, err := d.w.dir.Open(d.rel); err == nil {
		f.Sync()
		f.Close()
	}
}

func (d *rootDir) close() {}

func renameNoReplace(src dirHandle, from string, dst dirHandle, to string) error {
	s, d := src.(*rootDir), dst.(*rootDir)
	if _, err := d.lstat(to); err == nil {
		if s.w.sameEntry(s.name(from), d.name(to)) {
			return s.w.renameCase(s.name(from), d.name(to))
		}
		return fs.ErrExist
	}
	return unwrapOS(s.w.dir.Rename(s.name(from), d.name(to)))
}

// renameCase renames from to to, a name that differs from it only in
// case (the same file, on a case-insensitive file system). Windows does
// it in one rename; Wine 8 answers success and keeps the old name, so
// when the directory does not list to afterwards it goes through a
// temporary name.
func (w *Workspace) renameCase(from, to string) error {
	if err := w.dir.Rename(from, to); err != nil {
		return unwrapOS(err)
	}
	if w.listsName(to) {
		return nil
	}
	tmp := path.Join(path.Dir(to), tempName())
	if err := w.dir.Rename(from, tmp); err != nil {
		return unwrapOS(err)
	}
	if err := w.dir.Rename(tmp, to); err != nil {
		_ = w.dir.Rename(tmp, from)
		return unwrapOS(err)
	}
	return nil
}

// listsName reports whether rel's directory lists its name spelled
// exactly so.
func (w *Workspace) listsName(rel string) bool {
	f, err := w.dir.Open(path.Dir(rel))
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	return slices.Contains(names, path.Base(rel))
}
