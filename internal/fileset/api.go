package fileset

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// This file is the contract other packages (workspace, gitops) build against.

// Entry is one file (never a directory) of the set. Symlinks are entries of
// their own (Mode has fs.ModeSymlink) and are never followed.
type Entry struct {
	Path    string      // slash-separated, relative to the root
	Mode    fs.FileMode // from lstat
	Size    int64
	ModTime time.Time
	Ino     uint64
	Tracked bool // listed in the user's git index
}

// Options tune a walk.
type Options struct {
	// Dir limits the walk to this slash-separated sub-directory ("" = all).
	Dir string
	// NoIgnore lists every file (still skipping .git directories).
	NoIgnore bool
	// Workers bounds parallelism; 0 means a default based on GOMAXPROCS.
	Workers int
	// NoStat skips the lstat of each file: Entry then has only the type
	// bits of Mode (0 or fs.ModeSymlink) and no Size, ModTime or Ino.
	// For callers that need only paths (listing, search).
	NoStat bool
	// Report, if set, is told (from several goroutines at once) what the
	// walk passes over although no ignore rule excludes it: special files
	// (FIFOs, sockets, devices), directories it cannot open or read, and
	// directories with nothing to list (no files, no sub-directories;
	// ignored entries do not count). The root is never reported.
	Report func(Note)
}

// NoteKind says what a Note is about.
type NoteKind int

// Note kinds.
const (
	NoteSpecial    NoteKind = iota + 1 // a FIFO, socket or device file
	NoteUnreadable                     // a directory that cannot be opened or read
	NoteEmptyDir                       // a directory with nothing to list
)

// Note is one thing a walk passed over (Options.Report).
type Note struct {
	Path string // slash-separated, relative to the root, as Entry.Path
	Kind NoteKind
	Err  error // NoteUnreadable: why
}

// Set is a workspace's file set with its ignore rules loaded. It is safe for
// concurrent use. Ignore files are re-read when they change.
type Set struct {
	root  string
	repo  *repository // nil when root is in no repository
	cache fileCache   // parsed ignore files, config, index
	dirs  dirCache    // directory listings after ignore matching, across walks
	env   envFunc     // os.LookupEnv
	log   atomic.Pointer[slog.Logger]
}

// SetLogger makes the set log through l (nil: discard, the default). The
// set never logs through the global slog logger.
func (s *Set) SetLogger(l *slog.Logger) {
	if l == nil {
		l = discardLogger
	}
	s.log.Store(l)
}

var discardLogger = slog.New(slog.DiscardHandler)

func (s *Set) logger() *slog.Logger {
	if l := s.log.Load(); l != nil {
		return l
	}
	return discardLogger
}

// Open prepares the set for root (an absolute, clean directory). The root
// need not be a git repository; if it is (or is inside one), the index,
// info/exclude and core.excludesFile are honoured.
//
// Without a repository, .gitignore files and the global excludes file still
// apply (there is no index, so nothing is tracked).
func Open(root string) (*Set, error) {
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("open file set: root %q is not absolute", root)
	}
	root = filepath.Clean(root)
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("open file set: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("open file set: %s is not a directory", root)
	}
	repo, err := findRepository(root)
	if err != nil {
		return nil, fmt.Errorf("open file set %s: find git repository: %w", root, err)
	}
	return &Set{root: root, repo: repo, env: os.LookupEnv}, nil
}

// Root returns the absolute root.
func (s *Set) Root() string { return s.root }

// Walk calls fn for every file of the set under opts.Dir, in no particular
// order and possibly from several goroutines at once. Nested repositories'
// working files are included; every `.git` directory or file is skipped.
// It stops at the first error fn returns or when ctx is done.
//
// A tracked file is listed even when ignored; a file is listed only if it
// exists on disk as a regular file or symlink. A missing opts.Dir lists
// nothing.
func (s *Set) Walk(ctx context.Context, opts Options, fn func(Entry) error) error {
	return s.walk(ctx, opts, fn, nil)
}

// WalkDirs is Walk with the files of a directory handed over together: fn
// gets their directory (slash-separated, relative to the root as
// Entry.Path is; "" for the root) and the files, which are fn's only
// during the call (the slice is reused for the next directory). Calls
// come from several goroutines at once, in no particular order; a
// directory with no files gets no call, and one whose files git tracks
// under an ignored parent may get several.
func (s *Set) WalkDirs(ctx context.Context, opts Options, fn func(dir string, files []Entry) error) error {
	return s.walk(ctx, opts, nil, fn)
}

// Ignored reports whether the slash-separated relative path would be ignored
// by git (and is not tracked). isDir says whether it names a directory.
// Paths inside a `.git` directory count as ignored (they are never part of
// the set), as do paths that leave the root. A directory that holds
// tracked files is not ignored, as with `git check-ignore`.
func (s *Set) Ignored(rel string, isDir bool) bool {
	ignored, err := s.ignored(rel, isDir)
	if err != nil {
		s.logger().Warn("fileset: cannot evaluate ignore rules", "path", rel, "err", err)
		return false
	}
	return ignored
}

// Watcher keeps a set of paths changed since the last Drain. Events are only
// hints: Drain reports Overflow when it cannot vouch for completeness (watch
// limits, dropped events), and the caller must then walk.
type Watcher struct {
	watcherState
}

// Watch starts watching the set's tree until ctx is done or Close. It adds
// one watch per directory that is not ignored (and never inside .git)
// before it returns, so every change after Watch returns is reported.
func (s *Set) Watch(ctx context.Context) (*Watcher, error) { return s.watch(ctx) }

// Drain returns the slash-separated relative paths (files or directories)
// changed since the previous Drain and whether the watcher may have missed
// changes (overflow, limits), in which case a full walk is needed.
//
// A directory in the list means anything below it may have changed (it
// was created, moved, or an ignore file in it changed): walk it with
// Options.Dir. A changed .gitignore is reported both as itself and as its
// directory. Changes to the user's index (git add, git rm) are reported as
// the paths whose tracked state changed; changes to info/exclude, the
// global excludes file or git config are reported as overflow.
//
// Drain first waits (at most FlushTimeout) until every event the kernel
// queued before the call has been read, so a change made before Drain is
// never missing from its result; if it cannot vouch for that it reports
// overflow.
func (w *Watcher) Drain() (paths []string, overflow bool) {
	return w.drain(context.Background())
}

// DrainContext is Drain with the wait for queued events bounded by ctx as
// well (overflow is reported when ctx ends first).
func (w *Watcher) DrainContext(ctx context.Context) (paths []string, overflow bool) {
	return w.drain(ctx)
}

// Changes returns a channel that receives a value after paths were added
// to the dirty set (at most one value is pending). Rule changes outside
// the tree (index, info/exclude) are only noticed by Drain.
func (w *Watcher) Changes() <-chan struct{} { return w.changes }

// Close stops the watcher and waits for its goroutines.
func (w *Watcher) Close() error { return w.close() }
