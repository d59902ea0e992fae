package fileset

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/fsnotify/fsnotify"
)

// watchLimitHint is logged once when inotify runs out of watches.
const watchLimitHint = "fileset: the inotify watch limit is reached; falling back to full scans, which are slower. " +
	"Raise the limit, for example: sudo sysctl fs.inotify.max_user_watches=524288 " +
	"(and fs.inotify.max_user_instances=1024; add them to /etc/sysctl.d/ to keep them)"

// limitLogOnce makes the hint appear once per process, not per workspace.
var limitLogOnce = new(sync.Once)

type watcherState struct {
	s        *Set
	fsw      *fsnotify.Watcher
	addWatch func(abs string) error // fsw.Add; tests inject failures

	mu       sync.Mutex
	dirty    map[string]struct{}
	overflow bool // missed events since the last Drain
	scanning bool // no (complete) watches: every Drain reports overflow
	watched  map[string]struct{}
	// The rule sources outside the tree, as of the last Drain.
	lastIndex         *gitIndex
	lastExclude, last string

	changes chan struct{} // gets a value when dirty gains a path

	// The flush barrier: a private directory outside the tree, watched by
	// the same inotify instance. A marker created there is reported after
	// every event queued before it, so once its event is read, every
	// earlier change is in dirty.
	flushDir  string
	flushSeq  uint64        // last marker created (mu)
	flushSeen uint64        // last marker whose event was read (mu)
	flushCond chan struct{} // closed and replaced when flushSeen grows (mu)

	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

func (s *Set) watch(ctx context.Context) (*Watcher, error) {
	w := &Watcher{watcherState{
		s:         s,
		dirty:     map[string]struct{}{},
		watched:   map[string]struct{}{},
		done:      make(chan struct{}),
		changes:   make(chan struct{}, 1),
		flushCond: make(chan struct{}),
	}}
	if r, err := s.loadRules(); err == nil {
		w.lastIndex, w.lastExclude, w.last = r.index, r.exclude.source(), r.global.source()
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		if !isLimitErr(err) {
			return nil, err
		}
		w.fallBack(err)
		close(w.done)
		return w, nil
	}
	w.fsw = fsw
	w.addWatch = fsw.Add
	if testHookAddWatch != nil {
		w.addWatch = testHookAddWatch(w.addWatch)
	}
	if err := w.addFlushDir(); err != nil {
		fsw.Close()
		return nil, err
	}
	if err := w.addTree(ctx, "", false); err != nil {
		fsw.Close()
		os.RemoveAll(w.flushDir)
		return nil, err
	}
	if len(w.watched) == 0 {
		// The workspace lies in an ignored directory of its repository:
		// only tracked files count and no watch covers them.
		w.scanning = true
	}
	ctx, w.cancel = context.WithCancel(ctx)
	go w.run(ctx)
	return w, nil
}

// testHookAddWatch lets tests wrap the function that adds a watch.
var testHookAddWatch func(add func(string) error) func(string) error

func isLimitErr(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE)
}

// fallBack switches to scanning for good; mu may be held or not by the
// caller as noted.
func (w *watcherState) fallBack(err error) {
	w.scanning = true
	limitLogOnce.Do(func() { w.s.logger().Warn(watchLimitHint, "err", err) })
}

func (w *watcherState) run(ctx context.Context) {
	defer close(w.done)
	defer func() {
		w.fsw.Close()
		if w.flushDir != "" {
			if err := os.RemoveAll(w.flushDir); err != nil {
				w.s.logger().Debug("fileset: remove the watcher's flush directory", "dir", w.flushDir, "err", err)
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			w.mu.Lock()
			w.overflow = true
			w.mu.Unlock()
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				w.s.logger().Debug("fileset: watcher error", "err", err)
			}
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			if w.flushDir != "" && filepath.Dir(ev.Name) == w.flushDir {
				w.flushed(ev)
				continue
			}
			w.handle(ctx, ev)
		}
	}
}

func (w *watcherState) rel(abs string) (string, bool) {
	rel, err := filepath.Rel(w.s.root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	rel = filepath.ToSlash(rel)
	if rel == "." {
		rel = ""
	}
	if hasGitComponent(rel) {
		return "", false
	}
	return rel, true
}

func (w *watcherState) handle(ctx context.Context, ev fsnotify.Event) {
	rel, ok := w.rel(ev.Name)
	if !ok || rel == "" {
		return
	}
	fi, statErr := os.Lstat(ev.Name)
	isDir := statErr == nil && fi.IsDir()
	if statErr == nil && !ev.Has(fsnotify.Remove) && !ev.Has(fsnotify.Rename) && w.s.Ignored(rel, isDir) {
		return
	}
	// Watches are added before the paths are marked: whoever drains a
	// mark and then walks sees everything the new watches do not.
	if path.Base(rel) == ".gitignore" {
		dir := parentDir(rel)
		// Directories may have become visible: watch them.
		if err := w.addTree(ctx, dir, false); err != nil {
			w.s.logger().Debug("fileset: rescan after ignore change", "dir", dir, "err", err)
		}
		w.mark(rel)
		w.mark(dir)
		return
	}
	if isDir && (ev.Has(fsnotify.Create) || ev.Has(fsnotify.Rename)) {
		// Watch the new directory, then list it: files created before the
		// watch was in place would be missed otherwise.
		if err := w.addTree(ctx, rel, true); err != nil {
			w.s.logger().Debug("fileset: watch new directory", "dir", rel, "err", err)
		}
	}
	w.mark(rel)
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		w.mu.Lock()
		for d := range w.watched {
			if d == rel || strings.HasPrefix(d, rel+"/") {
				delete(w.watched, d)
			}
		}
		w.mu.Unlock()
	}
}

// mark adds rel ("" is the root) to the dirty set.
func (w *watcherState) mark(rel string) {
	if rel == "" {
		rel = "."
	}
	w.mu.Lock()
	w.dirty[rel] = struct{}{}
	w.mu.Unlock()
	select {
	case w.changes <- struct{}{}:
	default:
	}
}

// addTree watches rel and every directory below it that is not ignored.
// With markAll, everything found is marked dirty (a new directory).
func (w *watcherState) addTree(ctx context.Context, rel string, markAll bool) error {
	s := w.s
	r, err := s.loadRules()
	if err != nil {
		return err
	}
	prefix := ""
	if s.repo != nil {
		prefix = s.repo.prefix
	}
	repoDir := strings.TrimSuffix(prefix+rel, "/")
	if _, excluded, err := s.chain(r, repoDir); err != nil || excluded {
		return err
	}
	var visit func(repoRel string, parent *dirNode) error
	visit = func(repoRel string, parent *dirNode) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		wsRel := ""
		if len(repoRel) > len(prefix) {
			wsRel = repoRel[len(prefix):]
		}
		abs := filepath.Join(s.root, filepath.FromSlash(wsRel))
		w.mu.Lock()
		_, seen := w.watched[wsRel]
		scanning := w.scanning
		w.mu.Unlock()
		if !seen && !scanning {
			if err := w.addWatch(abs); err != nil {
				if isLimitErr(err) {
					w.mu.Lock()
					w.fallBack(err)
					w.mu.Unlock()
				} else if !errors.Is(err, fs.ErrNotExist) && !isNotDir(err) {
					w.s.logger().Debug("fileset: cannot watch directory", "dir", abs, "err", err)
				}
			} else {
				w.mu.Lock()
				w.watched[wsRel] = struct{}{}
				w.mu.Unlock()
			}
		}
		ents, err := os.ReadDir(abs)
		if err != nil {
			return nil
		}
		node, err := s.dirRules(r, parent, repoRel)
		if err != nil {
			return err
		}
		join := func(name string) string {
			if repoRel == "" {
				return name
			}
			return repoRel + "/" + name
		}
		for _, e := range ents {
			if e.Name() == ".git" {
				continue
			}
			p := join(e.Name())
			if e.IsDir() {
				if r.excluded(node, p, true) {
					continue
				}
				if markAll {
					w.mark(p[len(prefix):])
				}
				if err := visit(p, node); err != nil {
					return err
				}
				continue
			}
			if markAll {
				if _, tracked := r.index.tracked[p]; tracked || !r.excluded(node, p, false) {
					w.mark(p[len(prefix):])
				}
			}
		}
		return nil
	}
	// visit loads repoDir's own ignore file: start from its parent's chain.
	var parentNode *dirNode
	if repoDir != "" {
		if parentNode, _, err = s.chain(r, parentDir(repoDir)); err != nil {
			return err
		}
	}
	return visit(repoDir, parentNode)
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

func (w *watcherState) drain(ctx context.Context) ([]string, bool) {
	w.mu.Lock()
	scanning := w.scanning
	w.mu.Unlock()
	flushed := scanning || w.flush(ctx)
	// Rule sources outside the tree: the index, info/exclude, the global
	// excludes file (and config naming it).
	var changedTracked []string
	ruleChange := false
	if r, err := w.s.loadRules(); err == nil {
		w.mu.Lock()
		if r.index != w.lastIndex {
			changedTracked = w.trackedDiff(w.lastIndex, r.index)
			w.lastIndex = r.index
		}
		if ex, gl := r.exclude.source(), r.global.source(); ex != w.lastExclude || gl != w.last {
			ruleChange = true
			w.lastExclude, w.last = ex, gl
		}
		w.mu.Unlock()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range changedTracked {
		w.dirty[p] = struct{}{}
	}
	paths := make([]string, 0, len(w.dirty))
	for p := range w.dirty {
		paths = append(paths, p)
	}
	clear(w.dirty)
	overflow := w.overflow || w.scanning || ruleChange || !flushed
	w.overflow = false
	return paths, overflow
}

// trackedDiff lists the workspace-relative paths tracked in exactly one of
// the two indexes.
func (w *watcherState) trackedDiff(a, b *gitIndex) []string {
	prefix := ""
	if w.s.repo != nil {
		prefix = w.s.repo.prefix
	}
	var out []string
	add := func(p string) {
		if rel, ok := strings.CutPrefix(p, prefix); ok {
			out = append(out, rel)
		}
	}
	if a == nil {
		a = emptyIndex()
	}
	for p := range b.tracked {
		if _, ok := a.tracked[p]; !ok {
			add(p)
		}
	}
	for p := range a.tracked {
		if _, ok := b.tracked[p]; !ok {
			add(p)
		}
	}
	return out
}

func (w *watcherState) close() error {
	w.closeOnce.Do(func() {
		if w.cancel != nil {
			w.cancel()
		}
	})
	<-w.done
	return nil
}
