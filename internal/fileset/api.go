package fileset

import (
	"context"
	"io/fs"
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
}

// Set is a workspace's file set with its ignore rules loaded. It is safe for
// concurrent use. Ignore files are re-read when they change.
type Set struct {
	root string
}

// Open prepares the set for root (an absolute, clean directory). The root
// need not be a git repository; if it is (or is inside one), the index,
// info/exclude and core.excludesFile are honoured.
func Open(root string) (*Set, error) { return &Set{root: root}, nil }

// Root returns the absolute root.
func (s *Set) Root() string { return s.root }

// Walk calls fn for every file of the set under opts.Dir, in no particular
// order and possibly from several goroutines at once. Nested repositories'
// working files are included; every `.git` directory or file is skipped.
// It stops at the first error fn returns or when ctx is done.
func (s *Set) Walk(ctx context.Context, opts Options, fn func(Entry) error) error { return nil }

// Ignored reports whether the slash-separated relative path would be ignored
// by git (and is not tracked). isDir says whether it names a directory.
func (s *Set) Ignored(rel string, isDir bool) bool { return false }

// Watcher keeps a set of paths changed since the last Drain. Events are only
// hints: Drain reports Overflow when it cannot vouch for completeness (watch
// limits, dropped events), and the caller must then walk.
type Watcher struct{}

// Watch starts watching the set's tree until ctx is done.
func (s *Set) Watch(ctx context.Context) (*Watcher, error) { return &Watcher{}, nil }

// Drain returns the slash-separated relative paths (files or directories)
// changed since the previous Drain and whether the watcher may have missed
// changes (overflow, limits), in which case a full walk is needed.
func (w *Watcher) Drain() (paths []string, overflow bool) { return nil, true }

// Close stops the watcher and waits for its goroutines.
func (w *Watcher) Close() error { return nil }
