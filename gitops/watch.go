package gitops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/agentd/agentd/internal/fileset"
)

// fullScanEvery bounds how many snapshots in a row may trust the watcher:
// the periodic full walk stays the truth.
var fullScanEvery = 20

// Watch starts the fsnotify watcher (daemon) so snapshots need not walk.
func (s *Store) Watch(ctx context.Context) error {
	w, ok := s.files.(watchable)
	if !ok {
		return errors.New("gitops: this workspace's file set cannot be watched")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watcher != nil {
		return nil
	}
	wt, err := w.Watch(ctx)
	if err != nil {
		return fmt.Errorf("gitops: watch %s: %w", s.root, err)
	}
	s.watcher = wt
	s.watchBase = nil // the next snapshot walks; later ones use the dirty set
	return nil
}

// drainWatcher moves the watcher's dirty set into s.pending.
// DrainContext waits for the events queued before it, so a file written
// just before the snapshot is in the dirty set.
func (s *Store) drainWatcher(ctx context.Context) {
	paths, overflow := s.watcher.DrainContext(ctx)
	if s.pending == nil {
		s.pending = make(map[string]struct{})
	}
	for _, p := range paths {
		s.pending[p] = struct{}{}
	}
	s.pendingOverflow = s.pendingOverflow || overflow
}

func (s *Store) pendingPaths() []string {
	out := make([]string, 0, len(s.pending))
	for p := range s.pending {
		out = append(out, p)
	}
	return out
}

// snapshotWatched takes a snapshot from the watcher's dirty set: only the
// paths it reports are re-stat'ed (and re-hashed if their stat changed),
// the cache is updated in place and only the trees above changed files are
// rebuilt. ok is false when a full walk is needed (no base yet, overflow,
// ignore rules changed, periodic full scan).
func (s *Store) snapshotWatched(ctx context.Context, opts SnapshotOptions, refPrefix string) (snap *Snapshot, res *scanResult, ok bool, err error) {
	cache := s.cache
	s.drainWatcher(ctx)
	dirtyPaths, overflow := s.pendingPaths(), s.pendingOverflow
	s.pending, s.pendingOverflow = nil, false
	if overflow || cache == nil || s.watchBase != cache || cache.skipped == nil || s.watchFull >= fullScanEvery {
		s.watchFull = 0
		return nil, nil, false, nil
	}
	for _, p := range dirtyPaths {
		base := path.Base(p)
		if p == "" || p == "." || base == ".gitignore" || base == ".git" || strings.HasPrefix(p, ".git/") || strings.Contains(p, "/.git/") {
			return nil, nil, false, nil // ignore rules or a repository changed: walk
		}
	}
	// From here on the cache is changed in place: on failure drop it, so
	// the next snapshot starts again from the persisted one and a walk.
	defer func() {
		if err != nil {
			s.cache, s.watchBase, s.treesKnown = nil, nil, nil
		}
	}()
	sorted := cache.sortedPaths()
	cache.fileMap() // changed in place below, where the records go stale
	if len(dirtyPaths) > 0 {
		cache.byDir, cache.recs = nil, nil // files changes below
	}
	old := make(map[string]*fileRec)
	removed := make(map[string]bool)
	remove := func(p string) {
		if r, ok := cache.files[p]; ok {
			old[p] = r
			delete(cache.files, p)
			removed[p] = true
		}
		delete(cache.skipped, p)
	}
	if cache.emptyDirs == nil {
		cache.emptyDirs = map[string]bool{}
	}
	var notesMu sync.Mutex
	report := func(n fileset.Note) {
		notesMu.Lock()
		defer notesMu.Unlock()
		switch n.Kind {
		case fileset.NoteEmptyDir:
			cache.emptyDirs[n.Path] = true
		case fileset.NoteSpecial:
			cache.skipped[n.Path] = SkippedFile{Path: n.Path, Reason: "a special file (FIFO, socket or device): snapshots hold only files and symlinks"}
		case fileset.NoteUnreadable:
			cache.skipped[n.Path+"/"] = SkippedFile{Path: n.Path + "/", Reason: fmt.Sprintf("a directory that cannot be read (%v): nothing below it is in the snapshot", errors.Unwrap(n.Err))}
		}
	}
	fresh, err := s.rewalkDirty(ctx, cache, sorted, dirtyPaths, remove, report)
	if err != nil {
		return nil, nil, true, err
	}
	jobs, added := s.watchedRecords(cache, fresh, old, report)
	var pw *packWriter
	var sink objSink
	lazySink := &lazyPackSink{s: s, pw: &pw}
	sink = lazySink
	defer func() {
		if err != nil && pw != nil {
			pw.abort()
		}
	}()
	var mu sync.Mutex
	if err := s.hashFiles(ctx, jobs, sink, func(r *fileRec, skip *SkippedFile) {
		mu.Lock()
		defer mu.Unlock()
		if skip != nil {
			cache.skipped[r.path] = *skip
		}
		delete(added, r.path)
	}); err != nil {
		return nil, nil, true, err
	}
	dirty := make(map[string]bool)
	changed := 0
	for p, r := range added {
		cache.files[p] = r
		if o := old[p]; o == nil || o.hash != r.hash || o.mode != r.mode {
			markDirty(dirty, p)
			changed++
		}
		if removed[p] {
			delete(removed, p)
		} else {
			sorted = insertSorted(sorted, p)
		}
	}
	for p := range removed {
		markDirty(dirty, p)
		changed++
		sorted = deleteSorted(sorted, p)
	}
	cache.sorted = sorted
	root := cache.trees[""]
	prevRoot := root
	if changed > 0 || root.IsZero() {
		tb := &treeBuilder{sink: sink, paths: sorted, get: func(_ int, p string) *fileRec { return cache.files[p] },
			prev: cache.trees, dirty: dirty, known: s.treesKnown, trees: cache.trees}
		if root, err = tb.build("", 0, len(sorted)); err != nil {
			return nil, nil, true, err
		}
	}
	skipped := make([]SkippedFile, 0, len(cache.skipped))
	for _, sk := range cache.skipped {
		skipped = append(skipped, sk)
	}
	sort.Slice(skipped, func(i, j int) bool { return skipped[i].Path < skipped[j].Path })
	snap, err = s.commitSnapshot(ctx, opts, refPrefix, prevRoot, root, changed, cache.files, nil, cache.emptyDirs, skipped, sink, &pw, nil)
	if err != nil {
		return nil, nil, true, err
	}
	s.watchFull++
	if changed > 0 {
		s.cacheUnsaved = true
	}
	if err := s.consolidatePacks(ctx); err != nil {
		s.log.Warn("gitops: could not merge small packs; gc will retry", "dir", s.dir, "err", err)
	}
	return snap, &scanResult{m: cache.files, skipped: skipped}, true, nil
}

// rewalkDirty takes the watcher's dirty paths out of cache (remove) and
// returns what is on disk at and below them now, walking the dirty
// directories (their notes go to report); then it re-checks the
// emptiness of their parents. Ignored paths are left out.
func (s *Store) rewalkDirty(ctx context.Context, cache *statCache, sorted, dirtyPaths []string, remove func(string), report func(fileset.Note)) ([]fileset.Entry, error) {
	var fresh []fileset.Entry
	// Directories whose emptiness may have changed: the dirty paths'
	// parents (checked after the dirty directories were walked).
	recheck := map[string]bool{}
	for _, p := range dirtyPaths {
		p = strings.Trim(p, "/")
		for d := range cache.emptyDirs {
			if hasPrefixPath(d, p) {
				delete(cache.emptyDirs, d)
			}
		}
		if d := path.Dir(p); d != "." {
			recheck[d] = true
		}
		remove(p)
		if _, wasDir := cache.trees[p]; wasDir {
			lo := sort.SearchStrings(sorted, p+"/")
			hi := rangeEnd(sorted, lo, p+"/")
			for _, q := range sorted[lo:hi] {
				remove(q)
			}
		}
		for q := range cache.skipped {
			if hasPrefixPath(q, p) {
				delete(cache.skipped, q)
			}
		}
		fi, lerr := os.Lstat(s.abs(p))
		if errors.Is(lerr, fs.ErrNotExist) || errors.Is(lerr, syscall.ENOTDIR) {
			continue
		}
		if lerr != nil {
			return nil, lerr
		}
		if fi.IsDir() {
			if s.files.Ignored(p, true) {
				continue
			}
			var mu sync.Mutex
			werr := s.files.Walk(ctx, fileset.Options{Dir: p, Report: report}, func(e fileset.Entry) error {
				mu.Lock()
				fresh = append(fresh, e)
				mu.Unlock()
				return nil
			})
			if werr != nil {
				return nil, werr
			}
			continue
		}
		if s.files.Ignored(p, false) {
			continue
		}
		fresh = append(fresh, fileset.Entry{Path: p, Mode: fi.Mode(), Size: fi.Size(), ModTime: fi.ModTime(), Ino: inode(fi)})
	}
	for d := range recheck {
		delete(cache.emptyDirs, d)
		if s.dirHasNothing(d) {
			cache.emptyDirs[d] = true
		}
	}
	return fresh, nil
}

// watchedRecords turns the entries rewalkDirty found into file records:
// jobs are the ones to hash, added all of them by path. A record whose
// stat matches the one taken out (old) keeps its hash (an event without
// a change). Special files and files over the size limit are noted in
// the cache as skipped instead.
func (s *Store) watchedRecords(cache *statCache, fresh []fileset.Entry, old map[string]*fileRec, report func(fileset.Note)) (jobs []*fileRec, added map[string]*fileRec) {
	added = make(map[string]*fileRec)
	for _, e := range fresh {
		if _, dup := added[e.Path]; dup {
			continue
		}
		mode, ok := gitMode(e.Mode)
		if !ok {
			if e.Mode&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0 {
				report(fileset.Note{Path: e.Path, Kind: fileset.NoteSpecial})
			}
			continue
		}
		if mode != filemode.Symlink && e.Size > s.opts.MaxFileSize {
			cache.skipped[e.Path] = SkippedFile{Path: e.Path, Size: e.Size,
				Reason: fmt.Sprintf("larger than the snapshot size limit (%d bytes)", s.opts.MaxFileSize)}
			continue
		}
		r := &fileRec{path: e.Path, mode: mode, perm: permBits(e.Mode), size: e.Size, mtime: e.ModTime.UnixNano(), ino: e.Ino}
		if o := old[e.Path]; cache.trusted(o, r.mode, r.perm, r.size, r.mtime, r.ino) {
			r.hash = o.hash // an event without a change (touch, chmod back...); not racy
		} else {
			jobs = append(jobs, r)
		}
		added[e.Path] = r
	}
	return jobs, added
}

// lazyPackSink starts a pack at the first object that needs one.
type lazyPackSink struct {
	s  *Store
	mu sync.Mutex
	pw **packWriter
}

func (l *lazyPackSink) put(t plumbing.ObjectType, h plumbing.Hash, data []byte) error {
	l.mu.Lock()
	if *l.pw == nil {
		pw, err := newPackWriter(filepath.Join(l.s.dir, "objects", "pack"))
		if err != nil {
			l.mu.Unlock()
			return err
		}
		*l.pw = pw
	}
	k := packSink{s: l.s, p: *l.pw}
	l.mu.Unlock()
	return k.put(t, h, data)
}

func insertSorted(s []string, p string) []string {
	i := sort.SearchStrings(s, p)
	if i < len(s) && s[i] == p {
		return s
	}
	s = append(s, "")
	copy(s[i+1:], s[i:])
	s[i] = p
	return s
}

func deleteSorted(s []string, p string) []string {
	i := sort.SearchStrings(s, p)
	if i < len(s) && s[i] == p {
		return append(s[:i], s[i+1:]...)
	}
	return s
}

// dirHasNothing reports whether the workspace directory dir exists and
// holds nothing a walk would list (files or directories that are not
// ignored), as fileset's NoteEmptyDir.
func (s *Store) dirHasNothing(dir string) bool {
	ents, err := os.ReadDir(s.abs(dir))
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.Name() == ".git" {
			continue
		}
		p := dir + "/" + e.Name()
		if e.IsDir() {
			if !s.files.Ignored(p, true) {
				return false
			}
			continue
		}
		if (e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0) && !s.files.Ignored(p, false) {
			return false
		}
	}
	return true
}
