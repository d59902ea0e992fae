package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
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
	start int64
	files []*fileRec // sorted by path
	// m maps paths to files: nil until byPath builds it (most scans need
	// only a few look-ups, which lookup makes in files).
	m       map[string]*fileRec
	cache   *statCache // the cache the scan compared with
	skipped []SkippedFile
	full    bool // a full walk (not from the watcher's dirty set)
	// unchanged: the files are the cache's own records (nothing differs).
	unchanged bool
	hashed    int // files read and hashed
	// statChanged counts the hashed files the cache has with other stat
	// data (not only racy): a cache saved now would spare the next
	// process hashing them again.
	statChanged int
	// Against the cache: only the records in rehashed may differ from the
	// cache's, and removed are the cache's paths that are gone.
	sameSet  bool // the walk saw exactly the cache's paths
	rehashed []*fileRec
	removed  []string
	touched  []string // every path that may differ from the cache
	// emptyDirs are the directories with nothing to list.
	emptyDirs map[string]bool
}

// lookup returns p's file in the scan.
func (r *scanResult) lookup(p string) (*fileRec, bool) {
	if r.m != nil {
		f, ok := r.m[p]
		return f, ok
	}
	f := findRec(r.files, p)
	return f, f != nil
}

// byPath returns the scan's files by path, building the map on first use
// (the cache's own if nothing differs). Records are never changed once
// made, nor is the map while the scan is used.
func (r *scanResult) byPath() map[string]*fileRec {
	if r.m == nil {
		if r.unchanged && r.cache != nil {
			r.m = r.cache.fileMap()
		} else {
			r.m = make(map[string]*fileRec, len(r.files))
			for _, f := range r.files {
				r.m[f.path] = f
			}
		}
	}
	return r.m
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
	col, notes, err := s.collect(ctx, cache)
	if err != nil {
		return nil, nil, err
	}
	res.full = true
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
	var mu sync.Mutex
	known, files := col.known, col.files // entries whose path the cache has; file entries
	res.skipped = append(res.skipped, col.skipped...)
	jobs := col.jobs
	// The same paths as last time (the common case), all trusted: the
	// cache's records are the scan's.
	res.sameSet = known == cache.count() && files == known
	res.unchanged = res.sameSet && len(jobs) == 0
	res.cache = cache
	res.hashed = len(jobs)
	for _, r := range jobs {
		if old := cache.file(r.path); old != nil && (old.mode != r.mode || old.perm != r.perm || old.size != r.size || old.mtime != r.mtime || old.ino != r.ino) {
			res.statChanged++
		}
	}
	var sink objSink
	if newSink != nil {
		sink, err = newSink(len(jobs) > packThreshold)
		if err != nil {
			return nil, nil, err
		}
	}
	gone := make(map[*fileRec]bool) // jobs whose file went or cannot be read
	if err := s.hashFiles(ctx, jobs, sink, func(r *fileRec, skip *SkippedFile) {
		mu.Lock()
		defer mu.Unlock()
		if skip != nil {
			res.skipped = append(res.skipped, *skip)
		}
		gone[r] = true
	}); err != nil {
		return nil, sink, err
	}
	// A job's record is the file's if it is the last job for its path
	// and its file was hashed.
	latest := make(map[string]*fileRec, len(jobs))
	for _, r := range jobs {
		latest[r.path] = r
	}
	alive := func(r *fileRec) bool { return latest[r.path] == r && !gone[r] }
	// The files in path order: the cache's order, without the paths that
	// are gone, merged with the new paths (few, sorted here).
	var fresh []*fileRec
	repl := make(map[string]*fileRec) // re-hashed files the cache has
	for _, r := range jobs {
		if cache.file(r.path) != nil {
			repl[r.path] = r
		} else if alive(r) {
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
		old := cache.sortedRecords()
		res.files = make([]*fileRec, 0, len(old)+len(fresh))
		for _, old := range old {
			p := old.path
			var r *fileRec
			if old.seen == s.walkNo {
				r = old
				if nr, ok := repl[p]; ok {
					r = nil
					if alive(nr) {
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
		if alive(r) {
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

// collected is what a walk found against the cache: the files whose
// records are new (to hash), the files left out, and counts. The files
// whose stat is unchanged (nearly all) are only counted and marked seen in
// their cache record: a list of them was most of a no-change scan's
// memory besides the cache itself.
type collected struct {
	jobs    []*fileRec // files to (re-)hash: stat changed or new
	skipped []SkippedFile
	files   int // file entries
	known   int // file entries whose path the cache has
}

// collect walks the workspace and compares each entry with the cache, in
// the walk's goroutines, a directory at a time.
func (s *Store) collect(ctx context.Context, cache *statCache) (*collected, []fileset.Note, error) {
	s.walks.Add(1)
	idx := cache.dirIndex()
	var mu sync.Mutex
	col := &collected{}
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
		var jobs []*fileRec
		var skipped []SkippedFile
		nfiles, nknown := 0, 0
		for i := range files {
			e := &files[i]
			var old *fileRec
			if recs != nil {
				old = recs.lookup(i, e.Path[recs.off:])
			}
			sc := s.classify(cache, e, old)
			if sc.rec == nil {
				if sc.skip != nil {
					skipped = append(skipped, *sc.skip)
				}
				continue
			}
			nfiles++
			if sc.inCache {
				nknown++
			}
			if old != nil {
				old.seen = walkNo // one goroutine hands over a directory, a record is in one
			}
			if !sc.trusted {
				jobs = append(jobs, sc.rec)
			}
		}
		mu.Lock()
		col.files += nfiles
		col.known += nknown
		col.jobs = append(col.jobs, jobs...)
		col.skipped = append(col.skipped, skipped...)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list the workspace's files in %s: %w", s.root, err)
	}
	return col, notes, nil
}

// classify compares one walk entry with old, the cache's record of its
// path (nil: none).
func (s *Store) classify(cache *statCache, e *fileset.Entry, old *fileRec) scanned {
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

// errIsLink: a symlink is where a regular file was listed (openNoFollow).
var errIsLink = errors.New("a symlink is in the way")

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
	f, err := openNoFollow(abs)
	if err != nil {
		if errors.Is(err, errIsLink) {
			return nil, fs.ErrNotExist
		}
		if why := unreadableReason(err); why != "" {
			return nil, &skipError{SkippedFile{Path: r.path, Size: r.size, Reason: why}}
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
