package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/agentd/agentd/internal/fileset"
)

// DefaultMaxFileSize bounds ReadFile when Options.MaxFileSize is 0.
const DefaultMaxFileSize = 20 << 20

// Options configure a workspace.
type Options struct {
	// MaxFileSize bounds reads by tools (0 = 20 MiB).
	MaxFileSize int64
}

// Workspace is one open folder. Safe for concurrent use.
type Workspace struct {
	root  string // absolute, clean, symlink-resolved
	alias string // the root as given (absolute, clean) if it differs from root
	files *fileset.Set
	dir   *os.Root // every file operation goes through it: no escape even if a path races
	max   int64

	mu       sync.RWMutex
	overlays map[string]*overlay // by real (symlink-resolved) rel

	applyMu sync.Mutex // serialises Apply and Revert so two never interleave on one file

	saves saveLog // the editor's saves (saves.go)
}

// Open opens root (made absolute and symlink-resolved).
func Open(root string, opts Options) (*Workspace, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("open workspace %s: not a directory", root)
	}
	dir, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", root, err)
	}
	files, err := fileset.Open(real)
	if err != nil {
		dir.Close()
		return nil, fmt.Errorf("open workspace %s: file set: %w", root, err)
	}
	w := &Workspace{
		root:     real,
		files:    files,
		dir:      dir,
		max:      opts.MaxFileSize,
		overlays: make(map[string]*overlay),
	}
	if w.max <= 0 {
		w.max = DefaultMaxFileSize
	}
	if abs != real {
		w.alias = abs
	}
	return w, nil
}

// Close releases the workspace's directory handle. Later file operations
// fail; overlays stay readable.
func (w *Workspace) Close() error { return w.dir.Close() }

// Root returns the absolute, symlink-resolved root.
func (w *Workspace) Root() string { return w.root }

// Files returns the ignore-aware file set of the workspace.
func (w *Workspace) Files() *fileset.Set { return w.files }

// MaxFileSize returns the bound on ReadFile.
func (w *Workspace) MaxFileSize() int64 { return w.max }
