package gitops

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// This file is the contract engine (through an adapter), rpc and cmd build
// against. The package's owner may add to it and replace placeholder bodies
// but must not change these signatures without updating every caller.

// Options configure a store.
type Options struct {
	// StateDir is agentd's state dir; the store lives in
	// StateDir/workspaces/<hash of root>/. Default: DefaultStateDir().
	StateDir string
	// MaxFileSize leaves larger files out of snapshots (default 20 MiB).
	MaxFileSize int64
	// KeepRuns is how many runs' snapshots retention keeps (default 50).
	KeepRuns int
	// Quota is the store's size limit in bytes (default 1 GiB).
	Quota int64
}

// DefaultStateDir is $AGENTD_STATE_DIR, else $XDG_STATE_HOME/agentd, else
// ~/.local/state/agentd.
func DefaultStateDir() string {
	if d := os.Getenv("AGENTD_STATE_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "agentd")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "agentd-state")
	}
	return filepath.Join(home, ".local", "state", "agentd")
}

// SnapshotOptions say what a snapshot is for.
type SnapshotOptions struct {
	RunID  string
	StepID string
	Label  string
}

// SkippedFile is a file left out of a snapshot, with why.
type SkippedFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Reason string `json:"reason"`
}

// Snapshot is one snapshot's metadata. ID is the commit id (hex).
type Snapshot struct {
	ID           string        `json:"id"`
	Ref          string        `json:"ref"`
	RunID        string        `json:"runId,omitempty"`
	StepID       string        `json:"stepId,omitempty"`
	Label        string        `json:"label"`
	CreatedAt    time.Time     `json:"createdAt"`
	FilesChanged int           `json:"filesChanged"` // against the previous snapshot
	Files        int           `json:"files"`
	Skipped      []SkippedFile `json:"skipped,omitempty"`
}

// RestoreOptions tune a restore.
type RestoreOptions struct {
	// Paths limits the restore (slash-separated, relative; files or dirs).
	Paths  []string
	DryRun bool
	// Since is the snapshot the agent last left the workspace in: a file
	// that differs from it now was changed by someone else and is a
	// conflict unless Overwrite. Empty: no conflict check.
	Since     string
	Overwrite bool
}

// RestoreConflict is a file left alone.
type RestoreConflict struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// RestoreResult lists what a restore wrote (or would write, DryRun).
type RestoreResult struct {
	Restored     []string          `json:"restored"` // content or mode rewritten
	Created      []string          `json:"created"`  // re-created (absent now)
	Deleted      []string          `json:"deleted"`  // created since the target, not ignored
	Conflicts    []RestoreConflict `json:"conflicts"`
	UndoSnapshot string            `json:"undoSnapshotId,omitempty"`
}

// GCResult reports a retention pass.
type GCResult struct {
	RunsPruned    int   `json:"runsPruned"`
	ObjectsPruned int   `json:"objectsPruned"`
	BytesBefore   int64 `json:"bytesBefore"`
	BytesAfter    int64 `json:"bytesAfter"`
}

// Store is one workspace's shadow repository. Safe for concurrent use; a
// file lock in the store lets several processes (daemon, CLI) share it.
type Store struct {
	root  string
	files lister
	opts  Options
	dir   string

	mu sync.Mutex // serialises operations; guards storeState
	storeState

	stMu       sync.Mutex // guards st and the packs (go-git's storage is not safe for concurrent use)
	st         *filesystem.Storage
	packs      []*pack      // nil: not loaded
	packsStale bool         // another process may have added or removed packs
	objCache   cache.Object // objects read from the packs
	looseNone  bool         // no loose objects in the store
}

// ErrNotFound is wrapped by errors for unknown snapshot ids.
var ErrNotFound = errors.New("snapshot not found")
