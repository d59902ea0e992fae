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
	start   int64
	files   []*fileRec // sorted by path
	byPath  map[string]*fileRec
	skipped []SkippedFile
	full    bool // a full walk (not from the watcher's dirty set)
	hashed  int  // files read and hashed
}

// objSink receives the objects a scan or a snapshot needs in the store.
type objSink interface {
	put(t plumbing.ObjectType, h plumbing.Hash, data []byte) error
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
	res := &scanResult{start: time.Now().UnixNano(), byPath: make(map[string]*fileRec)}
	entries, full, err := s.collect(ctx, cache)
	if err != nil {
		return nil, nil, err
	}
	res.full = full
	var jobs []*fileRec
	var mu sync.Mutex
	known := 0 // entries whose path the cache has
	for _, e := range entries {
		mode, ok := gitMode(e.Mode)
		if !ok {
			continue
		}
		if mode != filemode.Symlink && e.Size > s.opts.MaxFileSize {
			res.skipped = append(res.skipped, SkippedFile{Path: e.Path, Size: e.Size,
				Reason: fmt.Sprintf("larger than the snapshot size limit (%d bytes)", s.opts.MaxFileSize)})
			continue
		}
		mtime := e.ModTime.UnixNano()
		if old := cache.files[e.Path]; cache.trusted(old, mode, e.Size, mtime, e.Ino) {
			res.byPath[e.Path] = old // records are never changed once made
			known++
			continue
		}
		r := &fileRec{path: e.Path, mode: mode, size: e.Size, mtime: mtime, ino: e.Ino}
		if cache.files[e.Path] != nil {
			known++
		}
		jobs = append(jobs, r)
		res.byPath[e.Path] = r
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
	res.files = make([]*fileRec, 0, len(res.byPath))
	if known == len(cache.files) && len(res.byPath) == known {
		// The same paths as last time: reuse their order.
		for _, p := range cache.sortedPaths() {
			res.files = append(res.files, res.byPath[p])
		}
	} else {
		for _, r := range res.byPath {
			res.files = append(res.files, r)
		}
		slices.SortFunc(res.files, func(a, b *fileRec) int { return strings.Compare(a.path, b.path) })
	}
	sort.Slice(res.skipped, func(i, j int) bool { return res.skipped[i].Path < res.skipped[j].Path })
	return res, sink, nil
}

// collect returns the workspace's entries: from the watcher's dirty set on
// top of the cache when that is enough, else from a full walk.
func (s *Store) collect(ctx context.Context, cache *statCache) ([]fileset.Entry, bool, error) {
	s.walks.Add(1)
	var mu sync.Mutex
	var ents []fileset.Entry
	err := s.files.Walk(ctx, fileset.Options{}, func(e fileset.Entry) error {
		mu.Lock()
		ents = append(ents, e)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("list the workspace's files in %s: %w", s.root, err)
	}
	return ents, true, nil
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
