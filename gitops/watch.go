package gitops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"time"

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
func (s *Store) drainWatcher() {
	paths, overflow := s.watcher.Drain()
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

// collectDirty returns the workspace's entries as the cache plus what the
// watcher saw change, re-stat'ing only those paths. ok is false when a
// full walk is needed.
func (s *Store) collectDirty(ctx context.Context, cache *statCache) (ents []fileset.Entry, ok bool) {
	if s.watcher == nil {
		return nil, false
	}
	s.drainWatcher()
	dirty, overflow := s.pendingPaths(), s.pendingOverflow
	s.pending, s.pendingOverflow = nil, false
	if overflow || s.watchBase == nil || s.watchBase != cache || s.watchFull >= fullScanEvery {
		s.watchFull = 0
		return nil, false
	}
	state := make(map[string]fileset.Entry, len(cache.files)+len(dirty))
	for p, r := range cache.files {
		state[p] = recEntry(r)
	}
	for _, p := range dirty {
		p = strings.Trim(p, "/")
		if p == "" || p == "." {
			return nil, false
		}
		base := path.Base(p)
		if base == ".gitignore" || base == ".git" || strings.HasPrefix(p, ".git/") || strings.Contains(p, "/.git/") {
			return nil, false // ignore rules or a repository changed: walk
		}
		if _, wasDir := cache.trees[p]; wasDir {
			for q := range state {
				if hasPrefixPath(q, p) {
					delete(state, q)
				}
			}
		}
		delete(state, p)
		fi, err := os.Lstat(s.abs(p))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, false
		}
		if fi.IsDir() {
			if s.files.Ignored(p, true) {
				continue
			}
			var mu sync.Mutex
			err := s.files.Walk(ctx, fileset.Options{Dir: p}, func(e fileset.Entry) error {
				mu.Lock()
				state[e.Path] = e
				mu.Unlock()
				return nil
			})
			if err != nil {
				return nil, false
			}
			continue
		}
		if s.files.Ignored(p, false) {
			continue
		}
		state[p] = fileset.Entry{Path: p, Mode: fi.Mode(), Size: fi.Size(), ModTime: fi.ModTime(), Ino: inode(fi)}
	}
	s.watchFull++
	ents = make([]fileset.Entry, 0, len(state))
	for _, e := range state {
		ents = append(ents, e)
	}
	return ents, true
}

// recEntry turns a cached record back into the entry a walk would give.
func recEntry(r *fileRec) fileset.Entry {
	var m fs.FileMode
	switch r.mode {
	case filemode.Symlink:
		m = fs.ModeSymlink | 0o777
	case filemode.Executable:
		m = 0o755
	default:
		m = 0o644
	}
	return fileset.Entry{Path: r.path, Mode: m, Size: r.size, ModTime: time.Unix(0, r.mtime), Ino: r.ino}
}
