package fileset

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// DefaultWorkers is the walk's parallelism when Options.Workers is 0.
var DefaultWorkers = func() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

type walker struct {
	s         *Set
	r         *rules
	ctx       context.Context
	g         *errgroup.Group
	fn        func(Entry) error
	dirFn     func(dir string, files []Entry) error // set instead of fn by WalkDirs
	prefixLen int                                   // Entry.Path is the repository-relative path minus the workspace prefix
	noIgnore  bool
	noStat    bool
	report    func(Note)
	dc        *dirCache // nil: list every directory (NoIgnore)
	// root is the repository's top, open for the walk: directories are
	// stat'ed, and the files of cached ones lstat'ed, by their path from
	// it (nil: each directory is opened).
	root *dirHandle
}

// note reports n (repository-relative path) if the caller asked for it.
func (w *walker) note(rel string, kind NoteKind, err error) {
	if w.report == nil || len(rel) <= w.prefixLen {
		return
	}
	w.report(Note{Path: rel[w.prefixLen:], Kind: kind, Err: err})
}

func (s *Set) walk(ctx context.Context, opts Options, fn func(Entry) error, dirFn func(string, []Entry) error) error {
	dir, err := cleanRel(opts.Dir)
	if err != nil {
		return err
	}
	if hasGitComponent(dir) {
		return nil
	}
	r, err := s.loadRules()
	if err != nil {
		return err
	}
	prefix := ""
	if s.repo != nil {
		prefix = s.repo.prefix
	}
	repoDir := strings.TrimSuffix(prefix+dir, "/")
	if dir == "" {
		repoDir = strings.TrimSuffix(prefix, "/")
	}
	abs := filepath.Join(r.top, filepath.FromSlash(repoDir))
	fi, err := os.Lstat(abs)
	if err != nil || !fi.IsDir() {
		// Nothing to list: a directory from a dirty set may be gone.
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !isNotDir(err) {
			return fmt.Errorf("walk %s: %w", abs, err)
		}
		return nil
	}
	if dir != "" {
		// Options.Dir must not pass through a symlink either.
		for d := path.Dir(dir); d != "."; d = path.Dir(d) {
			if fi, err := os.Lstat(filepath.Join(s.root, filepath.FromSlash(d))); err != nil || !fi.IsDir() {
				return nil
			}
		}
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = DefaultWorkers()
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	w := &walker{s: s, r: r, ctx: gctx, g: g, fn: fn, dirFn: dirFn, prefixLen: len(prefix), noIgnore: opts.NoIgnore, noStat: opts.NoStat, report: opts.Report}
	if !opts.NoIgnore {
		s.dirs.begin(r)
		w.dc = &s.dirs
		if root, err := openDir(r.top); err == nil {
			w.root = root
			defer root.close()
		}
	}
	var node *dirNode
	excluded := false
	if !opts.NoIgnore {
		node, excluded, err = s.chain(r, repoDir)
		if err != nil {
			return err
		}
	}
	g.Go(func() error {
		if excluded {
			return w.trackedUnder(repoDir)
		}
		return w.dir(repoDir, node, nil)
	})
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// dir lists one directory: it emits its files and descends into the
// sub-directories that are not excluded, in new goroutines while the
// worker limit allows and inline otherwise.
// h, if not nil, is rel opened for stat'ing from its parent's handle
// (subdirs); dir closes it.
func (w *walker) dir(rel string, parent *dirNode, h *dirHandle) error {
	if err := w.ctx.Err(); err != nil {
		if h != nil {
			h.close()
		}
		return err
	}
	abs := w.r.top
	if rel != "" {
		abs = w.r.top + string(filepath.Separator) + filepath.FromSlash(rel)
	}
	open := func() *dirHandle {
		f, err := openDir(abs)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && !isNotDir(err) {
				w.s.logger().Warn("fileset: cannot open directory, skipping it", "dir", abs, "err", err)
				w.note(rel, NoteUnreadable, err)
			}
			return nil
		}
		return f
	}
	var f *dirHandle // nil until the directory must be opened
	var st stamp
	cacheable := false
	if h != nil && w.dc == nil {
		h.close()
		h = nil
	}
	if w.dc != nil {
		switch {
		case h != nil:
			// Opened from its parent's handle: one name looked up, not
			// every component of its path from the root.
			f, st, cacheable = handleStamp(h, time.Now())
		case w.root != nil:
			// Opened from the walk's root only for stat'ing (O_PATH where
			// the platform has it): a directory whose listing is cached is
			// never opened for reading (an open, fstat and close per
			// directory were a tenth of a cold no-change walk's system
			// time), and its files are stat'ed from that handle.
			f, st, cacheable = pathDir(w.root, w.r.top, rel, time.Now())
		default:
			if f = open(); f == nil {
				return nil
			}
			st, cacheable = dirStamp(f, time.Now())
		}
		if cacheable {
			if cd := w.dc.get(w.r, rel); cd != nil && cd.st == st {
				node := parent
				var err error
				if cd.hasIgnore {
					if node, err = w.s.dirRules(w.r, parent, rel); err != nil {
						if f != nil {
							f.close()
						}
						return err
					}
				}
				if cd.matches(node) {
					w.dc.hits.Add(1)
					return w.cached(f, abs, rel, node, cd)
				}
			}
		}
	}
	if f != nil && !f.listable() {
		f.close()
		f = nil
	}
	if f == nil {
		if f = open(); f == nil {
			return nil
		}
	}
	ents, err := f.readDir()
	if err != nil && len(ents) == 0 {
		f.close()
		if !errors.Is(err, fs.ErrNotExist) {
			w.s.logger().Warn("fileset: cannot read directory, skipping it", "dir", abs, "err", err)
			w.note(rel, NoteUnreadable, err)
		}
		return nil
	}
	if err != nil {
		cacheable = false // a partial listing
	}
	// In name order, so that a caller matching the files with its own
	// sorted records merges instead of searching (and a cached listing
	// keeps that order).
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	node := parent
	var cd *cachedDir
	if cacheable {
		cd = &cachedDir{st: st}
	}
	if !w.noIgnore {
		for _, e := range ents {
			if e.Name() == ".gitignore" {
				if node, err = w.s.dirRules(w.r, parent, rel); err != nil {
					f.close()
					return err
				}
				if cd != nil {
					cd.hasIgnore = true
				}
				break
			}
		}
	}
	if cd != nil {
		cd.lists = chainLists(node)
	}
	join := func(name string) string {
		if rel == "" {
			return name
		}
		return rel + "/" + name
	}
	var subdirs []string
	var batch []Entry // WalkDirs: this directory's files
	if w.dirFn != nil {
		bp := getBatch()
		defer putBatch(bp)
		batch = (*bp)[:0]
		defer func() { *bp = batch[:0] }()
	}
	listed := 0 // files not excluded
	fd := f.dirfd()
	for _, e := range ents {
		name := e.Name()
		if name == ".git" {
			continue
		}
		p := join(name)
		t := e.Type()
		switch {
		case t.IsDir():
			if w.noIgnore || !w.r.excluded(node, p, true) {
				subdirs = append(subdirs, p)
				if cd != nil {
					cd.subdirs = append(cd.subdirs, name)
				}
			} else {
				if cd != nil {
					cd.excluded = append(cd.excluded, name)
				}
				if err := w.trackedUnder(p); err != nil {
					f.close()
					return err
				}
			}
			continue
		case t.IsRegular(), t&fs.ModeSymlink != 0:
		default:
			// Sockets, pipes, devices: git passes over them too, but the
			// caller is told (unless they are ignored).
			if !w.noIgnore && w.r.excluded(node, p, false) {
				continue
			}
			if cd != nil {
				cd.files = append(cd.files, cachedFileEnt{name: name, path: p, typ: fs.ModeIrregular})
			}
			w.note(p, NoteSpecial, nil)
			continue
		}
		_, tracked := w.r.index.tracked[p]
		if !tracked && !w.noIgnore && w.r.excluded(node, p, false) {
			continue
		}
		listed++
		if cd != nil {
			cd.files = append(cd.files, cachedFileEnt{name: name, path: p, typ: t & fs.ModeSymlink, tracked: tracked})
		}
		if err := w.entry(fd, abs, name, Entry{Path: p[w.prefixLen:], Tracked: tracked, Mode: t & fs.ModeSymlink}, &batch); err != nil {
			f.close()
			return err
		}
	}
	f.close()
	if listed == 0 && len(subdirs) == 0 {
		w.note(rel, NoteEmptyDir, nil)
	}
	if err := w.flush(batch); err != nil {
		return err
	}
	if w.dc != nil {
		// Only a complete listing is kept (fn may have stopped it early).
		w.dc.put(w.r, rel, cd)
	}
	return w.subdirs(subdirs, node, nil)
}

// entry lstats the listed file name (in the directory open as fd) into ent
// and hands it on: into batch for WalkDirs, else to fn. A file gone since
// the listing, or no longer a file or symlink, is left out; the error is
// fn's or the context's.
func (w *walker) entry(fd int, abs, name string, ent Entry, batch *[]Entry) error {
	if !w.noStat {
		if err := lstatAt(fd, abs, name, &ent); err != nil {
			return nil
		}
		if !ent.Mode.IsRegular() && ent.Mode&fs.ModeSymlink == 0 {
			if ent.Mode&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0 {
				if w.report != nil {
					w.report(Note{Path: ent.Path, Kind: NoteSpecial})
				}
			}
			return nil
		}
	}
	if w.dirFn != nil {
		*batch = append(*batch, ent)
		return nil
	}
	if err := w.ctx.Err(); err != nil {
		return err
	}
	return w.fn(ent)
}

// batches are the buffers a directory's files are handed to WalkDirs' fn
// in, reused from one directory to the next: a new one per directory was
// a tenth of a cold no-change snapshot's page faults on a large tree.
var batches = sync.Pool{New: func() any { return new([]Entry) }}

func getBatch() *[]Entry  { return batches.Get().(*[]Entry) }
func putBatch(b *[]Entry) { batches.Put(b) }

// flush hands one directory's files to WalkDirs' fn.
func (w *walker) flush(batch []Entry) error {
	if len(batch) == 0 {
		return nil
	}
	if err := w.ctx.Err(); err != nil {
		return err
	}
	return w.dirFn(entryDir(batch[0].Path), batch)
}

// entryDir is the directory of a slash-separated path ("" for the root).
func entryDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// subdirs walks the sub-directories of a directory, in new goroutines
// while the worker limit allows and inline otherwise. If parent (the
// directory's handle) is not nil, each is opened from it for stat'ing
// just before it is walked (parent stays open meanwhile): looking up
// every component of a directory's path from the root was a third of
// opening it.
func (w *walker) subdirs(subdirs []string, node *dirNode, parent *dirHandle) error {
	for _, sub := range subdirs {
		var h *dirHandle
		if parent != nil {
			h = parent.openSub(sub[strings.LastIndexByte(sub, '/')+1:])
		}
		if w.g.TryGo(func() error { return w.dir(sub, node, h) }) {
			continue
		}
		if err := w.dir(sub, node, h); err != nil {
			return err
		}
	}
	return nil
}

// cached lists directory rel from its cached listing: only its files are
// lstat'ed, relative to f if it is open (then closed), else to the walk's
// root.
func (w *walker) cached(f *dirHandle, abs, rel string, node *dirNode, cd *cachedDir) error {
	join := func(name string) string {
		if rel == "" {
			return name
		}
		return rel + "/" + name
	}
	// Each file by its name in f, or by its path from the root.
	fd, base, byPath := w.root.dirfd(), w.r.top, true
	if f != nil {
		fd, base, byPath = f.dirfd(), abs, false
		defer f.close()
	}
	var batch []Entry // WalkDirs: this directory's files
	if w.dirFn != nil {
		bp := getBatch()
		defer putBatch(bp)
		batch = (*bp)[:0]
		defer func() { *bp = batch[:0] }()
	}
	listed := 0
	for _, cf := range cd.files {
		if cf.typ == fs.ModeIrregular {
			w.note(cf.path, NoteSpecial, nil)
			continue
		}
		listed++
		name := cf.name
		if byPath {
			name = cf.path
		}
		if err := w.entry(fd, base, name, Entry{Path: cf.path[w.prefixLen:], Tracked: cf.tracked, Mode: cf.typ}, &batch); err != nil {
			return err
		}
	}
	if listed == 0 && len(cd.subdirs) == 0 {
		w.note(rel, NoteEmptyDir, nil)
	}
	if err := w.flush(batch); err != nil {
		return err
	}
	for _, name := range cd.excluded {
		if err := w.trackedUnder(join(name)); err != nil {
			return err
		}
	}
	subdirs := make([]string, len(cd.subdirs))
	for i, name := range cd.subdirs {
		subdirs[i] = join(name)
	}
	return w.subdirs(subdirs, node, f)
}

// trackedUnder emits the tracked files below an excluded directory: git
// lists them although it does not look for untracked files there. Every
// leading directory must be a real directory (not a symlink), as git
// requires for a tracked path to exist.
func (w *walker) trackedUnder(dir string) error {
	names := w.r.index.under(dir)
	if len(names) == 0 {
		return nil
	}
	okDirs := map[string]bool{dir: true}
	var realDir func(d string) bool
	realDir = func(d string) bool {
		if ok, seen := okDirs[d]; seen {
			return ok
		}
		ok := realDir(path.Dir(d))
		if ok {
			fi, err := os.Lstat(filepath.Join(w.r.top, filepath.FromSlash(d)))
			ok = err == nil && fi.IsDir()
		}
		okDirs[d] = ok
		return ok
	}
	for _, p := range names {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		if _, ok := w.r.index.tracked[p]; !ok || hasGitComponent(p) {
			continue
		}
		if !realDir(path.Dir(p)) {
			continue
		}
		fi, err := os.Lstat(filepath.Join(w.r.top, filepath.FromSlash(p)))
		if err != nil || (!fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0) {
			continue
		}
		ent := entryFromInfo(p[w.prefixLen:], fi)
		ent.Tracked = true
		if w.dirFn != nil {
			if err := w.flush([]Entry{ent}); err != nil {
				return err
			}
			continue
		}
		if err := w.fn(ent); err != nil {
			return err
		}
	}
	return nil
}

func entryFromInfo(p string, fi fs.FileInfo) Entry {
	st := stampOf(fi)
	return Entry{Path: p, Mode: fi.Mode(), Size: fi.Size(), ModTime: fi.ModTime(), Ino: uint64(st.ino)}
}

// cleanRel validates a slash-separated relative path and returns it clean
// ("" for the root).
func cleanRel(p string) (string, error) {
	if p == "" || p == "." {
		return "", nil
	}
	if strings.HasPrefix(p, "/") || strings.Contains(p, "\\") && filepath.Separator == '\\' {
		return "", fmt.Errorf("path %q: must be relative to the workspace root", p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q: leaves the workspace", p)
	}
	if c == "." {
		return "", nil
	}
	return c, nil
}

func hasGitComponent(p string) bool {
	for p != "" {
		var first string
		first, p, _ = strings.Cut(p, "/")
		if first == ".git" {
			return true
		}
	}
	return false
}
