package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/agentd/agentd/internal/fileset"
)

// packThreshold is the number of files to hash above which new objects go
// into one pack instead of loose objects.
var packThreshold = 64

// scanResult is the workspace as one scan saw it.
type scanResult struct {
	start   int64
	files   []*fileRec // sorted by path
	byPath  map[string]*fileRec
	skipped []SkippedFile
	full    bool // a full walk (not from the watcher's dirty set)
	// unchanged: byPath is the cache's own map (nothing differs).
	unchanged bool
	hashed    int // files read and hashed
	// Against the cache: only the records in rehashed may differ from the
	// cache's, and removed are the cache's paths that are gone.
	sameSet  bool // the walk saw exactly the cache's paths
	rehashed []*fileRec
	removed  []string
	touched  []string // every path that may differ from the cache
	// emptyDirs are the directories with nothing to list.
	emptyDirs map[string]bool
}

// seenInCache reports whether the cache has r's path.
func seenInCache(cache *statCache, r *fileRec) bool {
	return cache.files[r.path] != nil
}

// objSink receives the objects a scan or a snapshot needs in the store.
type objSink interface {
	put(t plumbing.ObjectType, h plumbing.Hash, data []byte) error
}

// permBits are the permission bits a snapshot keeps of a file (none for
// a symlink).
func permBits(m fs.FileMode) uint32 {
	if m&fs.ModeSymlink != 0 {
		return 0
	}
	return uint32(m.Perm())
}

func gitMode(m fs.FileMode) (filemode.FileMode, bool) {
	switch {
	case m&fs.ModeSymlink != 0:
		return filemode.Symlink, true
	case m.IsRegular():
		if m&0o100 != 0 {
			return filemode.Executable, true
		}
		return filemode.Regular, true
	}
	return 0, false
}

// scan lists the workspace's files and their blob ids, hashing only files
// whose stat changed since the cache. With sink nil nothing is written
// (dry runs, diffs); otherwise every blob ends up in the store through
// sink (or newSink, called once if many files need hashing).
func (s *Store) scan(ctx context.Context, newSink func(many bool) (objSink, error)) (*scanResult, objSink, error) {
	cache := s.ensureCache()
	res := &scanResult{start: time.Now().UnixNano()}
	seen, notes, full, err := s.collect(ctx, cache)
	if err != nil {
		return nil, nil, err
	}
	res.full = full
	res.emptyDirs = map[string]bool{}
	for _, n := range notes {
		switch n.Kind {
		case fileset.NoteEmptyDir:
			res.emptyDirs[n.Path] = true
		case fileset.NoteSpecial:
			res.skipped = append(res.skipped, SkippedFile{Path: n.Path, Reason: "a special file (FIFO, socket or device): snapshots hold only files and symlinks"})
		case fileset.NoteUnreadable:
			res.skipped = append(res.skipped, SkippedFile{Path: n.Path + "/", Reason: fmt.Sprintf("a directory that cannot be read (%v): nothing below it is in the snapshot", errors.Unwrap(n.Err))})
		}
	}
	var jobs []*fileRec
	var mu sync.Mutex
	known, files := 0, 0 // entries whose path the cache has; file entries
	for i := range seen {
		sc := &seen[i]
		if sc.rec == nil {
			if sc.skip != nil {
				res.skipped = append(res.skipped, *sc.skip)
			}
			continue
		}
		files++
		if sc.inCache {
			known++
		}
		if !sc.trusted {
			jobs = append(jobs, sc.rec)
		}
	}
	// The same paths as last time (the common case): start from the
	// cache's map, which is far cheaper to copy than to rebuild.
	res.sameSet = known == len(cache.files) && files == known
	switch {
	case res.sameSet && len(jobs) == 0:
		res.byPath = cache.files // records are never changed once made, nor is this map while res is used
		res.unchanged = true
	case res.sameSet:
		res.byPath = maps.Clone(cache.files)
		for _, r := range jobs {
			res.byPath[r.path] = r
		}
	default:
		// Copied (far cheaper than rebuilt) without the paths this walk
		// did not find.
		res.byPath = maps.Clone(cache.files)
		for _, r := range cache.sortedRecords() {
			if r.seen != s.walkNo {
				delete(res.byPath, r.path)
			}
		}
		for _, r := range jobs {
			res.byPath[r.path] = r
		}
	}
	res.hashed = len(jobs)
	var sink objSink
	if newSink != nil {
		sink, err = newSink(len(jobs) > packThreshold)
		if err != nil {
			return nil, nil, err
		}
	}
	if err := s.hashFiles(ctx, jobs, sink, func(r *fileRec, skip *SkippedFile) {
		mu.Lock()
		defer mu.Unlock()
		if skip != nil {
			res.skipped = append(res.skipped, *skip)
		}
		delete(res.byPath, r.path)
	}); err != nil {
		return nil, sink, err
	}
	// The files in path order: the cache's order, without the paths that
	// are gone, merged with the new paths (few, sorted here).
	var fresh []*fileRec
	repl := make(map[string]*fileRec) // re-hashed files the cache has
	for _, r := range jobs {
		if seenInCache(cache, r) {
			repl[r.path] = r
		} else if res.byPath[r.path] == r {
			fresh = append(fresh, r)
		}
	}
	slices.SortFunc(fresh, func(a, b *fileRec) int { return strings.Compare(a.path, b.path) })
	if res.unchanged {
		res.files = cache.sortedRecords()
	} else {
		// In the cache's order: a cache record this walk found is the
		// file's unless it was re-hashed (then the new record, unless the
		// file went meanwhile); the others are gone.
		res.files = make([]*fileRec, 0, len(res.byPath))
		for _, old := range cache.sortedRecords() {
			p := old.path
			var r *fileRec
			if old.seen == s.walkNo {
				r = old
				if nr, ok := repl[p]; ok {
					r = nil
					if res.byPath[p] == nr {
						r = nr
					}
				}
			}
			if r == nil {
				res.removed = append(res.removed, p)
				continue
			}
			for len(fresh) > 0 && fresh[0].path < p {
				res.files = append(res.files, fresh[0])
				fresh = fresh[1:]
			}
			res.files = append(res.files, r)
		}
		res.files = append(res.files, fresh...)
	}
	for _, r := range jobs {
		if res.byPath[r.path] == r {
			res.rehashed = append(res.rehashed, r)
		}
		res.touched = append(res.touched, r.path)
	}
	res.touched = append(res.touched, res.removed...)
	sort.Slice(res.skipped, func(i, j int) bool { return res.skipped[i].Path < res.skipped[j].Path })
	return res, sink, nil
}

// scanned is one entry of a walk, compared with the cache.
type scanned struct {
	rec     *fileRec     // nil: not a file to snapshot
	skip    *SkippedFile // why rec is nil, if it is to be reported
	trusted bool         // rec is the cache's record (stat unchanged)
	inCache bool         // the cache has rec's path
}

// collect walks the workspace and compares each entry with the cache, in
// the walk's goroutines, a directory at a time.
func (s *Store) collect(ctx context.Context, cache *statCache) ([]scanned, []fileset.Note, bool, error) {
	s.walks.Add(1)
	idx := cache.dirIndex()
	var mu sync.Mutex
	out := make([]scanned, 0, len(cache.files)+len(cache.files)/16+64)
	var notes []fileset.Note
	report := func(n fileset.Note) {
		mu.Lock()
		notes = append(notes, n)
		mu.Unlock()
	}
	s.walkNo++
	walkNo := s.walkNo
	err := s.files.WalkDirs(ctx, fileset.Options{Report: report}, func(dir string, files []fileset.Entry) error {
		recs := idx[dir]
		batch := make([]scanned, len(files))
		for i, e := range files {
			var old *fileRec
			if recs != nil {
				old = recs.lookup(i, e.Path[recs.off:])
			}
			batch[i] = s.classify(cache, e, old)
			if old != nil && batch[i].rec != nil {
				old.seen = walkNo // one goroutine hands over a directory, a record is in one
			}
		}
		mu.Lock()
		out = append(out, batch...)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, nil, false, fmt.Errorf("list the workspace's files in %s: %w", s.root, err)
	}
	return out, notes, true, nil
}

// classify compares one walk entry with old, the cache's record of its
// path (nil: none).
func (s *Store) classify(cache *statCache, e fileset.Entry, old *fileRec) scanned {
	mode, ok := gitMode(e.Mode)
	if !ok {
		return scanned{}
	}
	if mode != filemode.Symlink && e.Size > s.opts.MaxFileSize {
		return scanned{skip: &SkippedFile{Path: e.Path, Size: e.Size,
			Reason: fmt.Sprintf("larger than the snapshot size limit (%d bytes)", s.opts.MaxFileSize)}}
	}
	mtime := e.ModTime.UnixNano()
	perm := permBits(e.Mode)
	if cache.trusted(old, mode, perm, e.Size, mtime, e.Ino) {
		return scanned{rec: old, trusted: true, inCache: true}
	}
	return scanned{rec: &fileRec{path: e.Path, mode: mode, perm: perm, size: e.Size, mtime: mtime, ino: e.Ino}, inCache: old != nil}
}

// hashFiles reads and hashes recs in parallel, storing blobs through sink
// (if not nil). gone is called for files that vanished or cannot be read.
func (s *Store) hashFiles(ctx context.Context, recs []*fileRec, sink objSink, gone func(*fileRec, *SkippedFile)) error {
	if len(recs) == 0 {
		return nil
	}
	workers := runtime.GOMAXPROCS(0)
	if workers > len(recs) {
		workers = len(recs)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan *fileRec)
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range next {
				data, err := s.readEntry(r)
				if err != nil {
					if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
						gone(r, nil)
						continue
					}
					if skip, ok := err.(*skipError); ok {
						gone(r, &skip.SkippedFile)
						continue
					}
					fail(err)
					continue
				}
				s.hashed.Add(1)
				r.hash = hashObject(plumbing.BlobObject, data)
				if sink != nil {
					if err := sink.put(plumbing.BlobObject, r.hash, data); err != nil {
						fail(fmt.Errorf("store %s: %w", r.path, err))
					}
				}
			}
		}()
	}
loop:
	for _, r := range recs {
		select {
		case next <- r:
		case <-ctx.Done():
			break loop
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

type skipError struct{ SkippedFile }

func (e *skipError) Error() string { return e.Path + ": " + e.Reason }

// readEntry returns a file's content or a symlink's target, never following
// the link.
func (s *Store) readEntry(r *fileRec) ([]byte, error) {
	abs := filepath.Join(s.root, filepath.FromSlash(r.path))
	if r.mode == filemode.Symlink {
		t, err := os.Readlink(abs)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) && errors.Is(err, syscall.EINVAL) {
				return nil, fs.ErrNotExist // no longer a link: the next scan sees it
			}
			return nil, err
		}
		return []byte(filepath.ToSlash(t)), nil
	}
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fs.ErrNotExist
		}
		if errors.Is(err, fs.ErrPermission) {
			return nil, &skipError{SkippedFile{Path: r.path, Size: r.size, Reason: "cannot be read: permission denied"}}
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fs.ErrNotExist
	}
	if fi.Size() > s.opts.MaxFileSize {
		return nil, &skipError{SkippedFile{Path: r.path, Size: fi.Size(),
			Reason: fmt.Sprintf("larger than the snapshot size limit (%d bytes)", s.opts.MaxFileSize)}}
	}
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+512))
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, fmt.Errorf("read %s: %w", r.path, err)
	}
	if int64(buf.Len()) > s.opts.MaxFileSize {
		return nil, &skipError{SkippedFile{Path: r.path, Size: int64(buf.Len()),
			Reason: fmt.Sprintf("larger than the snapshot size limit (%d bytes)", s.opts.MaxFileSize)}}
	}
	return buf.Bytes(), nil
}

// hasParentDir reports whether p is under dir ("" = everything).
func hasPrefixPath(p, dir string) bool {
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}
