package gitops

import (
	"context"
	"errors"
	"time"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/workspace"
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
func DefaultStateDir() string { return "" }

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

// Store is one workspace's shadow repository. Safe for concurrent use.
type Store struct{}

var errUnimplemented = errors.New("gitops: not implemented yet")

// Open opens (creating if needed) the store for ws, finishing or rolling
// back any restore a crash interrupted.
func Open(ctx context.Context, ws *workspace.Workspace, opts Options) (*Store, error) {
	return nil, errUnimplemented
}

// Dir is the shadow repository's path.
func (s *Store) Dir() string { return "" }

// Snapshot records the workspace now. It is on disk (fsync'd) when it returns.
func (s *Store) Snapshot(ctx context.Context, opts SnapshotOptions) (*Snapshot, error) {
	return nil, errUnimplemented
}

// List returns snapshots newest first, all or one run's.
func (s *Store) List(ctx context.Context, runID string) ([]*Snapshot, error) {
	return nil, errUnimplemented
}

// Get returns one snapshot by id or unique id prefix.
func (s *Store) Get(ctx context.Context, id string) (*Snapshot, error) { return nil, errUnimplemented }

// Files lists a snapshot's files (slash-separated, sorted).
func (s *Store) Files(ctx context.Context, id string) ([]string, error) { return nil, errUnimplemented }

// Diff compares two snapshots, or a snapshot with the workspace now (to "").
func (s *Store) Diff(ctx context.Context, from, to string) ([]*diff.FileDiff, error) {
	return nil, errUnimplemented
}

// Restore makes the workspace (or opts.Paths) match snapshot id, after a
// safety snapshot, writing only what differs.
func (s *Store) Restore(ctx context.Context, id string, opts RestoreOptions) (*RestoreResult, error) {
	return nil, errUnimplemented
}

// GC prunes runs beyond KeepRuns and objects nothing references, and keeps
// the store within its quota.
func (s *Store) GC(ctx context.Context) (*GCResult, error) { return nil, errUnimplemented }

// Watch starts the fsnotify watcher (daemon) so snapshots need not walk.
func (s *Store) Watch(ctx context.Context) error { return errUnimplemented }

// Close releases the store (and its watcher).
func (s *Store) Close() error { return nil }
