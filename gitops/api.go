package gitops

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
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
	// Logger receives the store's (and its file set's) log lines; nil
	// discards them. Nothing in gitops logs through the global logger.
	Logger *slog.Logger
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
	// Contents, keyed by workspace-relative slash paths, is recorded in
	// the snapshot instead of what is on disk: the editor server passes
	// the agent's edits that sit in unsaved buffers, so that they count as
	// the agent's. The mode is the file's on disk when it is a regular
	// file (its executable bit), else 0644; a path absent on disk is
	// recorded as a file with that content. Only this snapshot's tree is
	// affected: the stat cache keeps what is on disk, so the next
	// snapshot records the disk again. Paths that leave the workspace or
	// enter a .git directory are refused.
	Contents map[string][]byte
	// Limit, when set, records only what one step changed (see
	// SnapshotLimit); every other path keeps its version in Limit.Base.
	Limit *SnapshotLimit

	kind      string               // Kind* (default: KindRun with RunID, else KindManual)
	absent    []string             // snapMeta.Absent
	overrides map[string]*treeFile // internal: entries recorded instead of the disk's (nil: absent)
	// beforeRef, if set, is called once every object is written and before
	// the reference is: an error stops the snapshot there (its objects stay
	// unreferenced, for gc).
	beforeRef func() error
	// unsavedCache, if set, is set to true instead of the stat cache being
	// saved (the caller decides: a restore that rewrites every changed file
	// has nothing worth saving).
	unsavedCache *bool
	// overrideChanges, if set, are the changes overrides make to the
	// disk's tree (prevRoot) as diffTrees would list them: used instead
	// of comparing the trees when the snapshot's predecessor is that tree.
	overrideChanges *[]FileChange
}

// Snapshot kinds (Snapshot.Kind).
const (
	// KindRun: taken by a run (before or after a step): a state the
	// agent left the workspace in.
	KindRun = "run"
	// KindManual: taken on request (agentd snapshot create): the user's.
	KindManual = "manual"
	// KindSafety: taken by a restore before it changed anything (the
	// undo snapshot): the state the user had.
	KindSafety = "safety"
	// KindRestored: what a restore left the workspace in, as far as the
	// restore wrote it (files it left alone as conflicts are recorded as
	// they were in the restore's protection base, since they are not
	// the agent's).
	KindRestored = "restored"
)

// ChangeKind says how a file changed between two snapshots.
type ChangeKind string

// Change kinds.
const (
	ChangeAdded    ChangeKind = "added"
	ChangeModified ChangeKind = "modified" // content (or file <-> symlink)
	ChangeDeleted  ChangeKind = "deleted"
	ChangeMode     ChangeKind = "mode" // only the mode (executable bit, permissions)
)

// FileChange is one file a snapshot changed against the previous one.
type FileChange struct {
	Path string     `json:"path"`
	Kind ChangeKind `json:"kind"`
}

// MaxRecordedChanges bounds Snapshot.Changes (a first snapshot "adds"
// every file; those are counted in FilesChanged but not listed).
const MaxRecordedChanges = 2000

// SkippedFile is a file left out of a snapshot, with why.
type SkippedFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	Reason string `json:"reason"`
}

// Snapshot is one snapshot's metadata. ID is the commit id (hex).
type Snapshot struct {
	ID        string    `json:"id"`
	Ref       string    `json:"ref"`
	RunID     string    `json:"runId,omitempty"`
	StepID    string    `json:"stepId,omitempty"`
	Label     string    `json:"label"`
	CreatedAt time.Time `json:"createdAt"`
	// Kind is KindRun, KindManual, KindSafety or KindRestored.
	Kind         string `json:"kind"`
	FilesChanged int    `json:"filesChanged"` // against the previous snapshot
	// Changes lists the files changed against the previous snapshot (the
	// workspace as the store last recorded it, by any process), so a
	// run's snapshot after a step says which files that step changed. At
	// most MaxRecordedChanges are listed (ChangesOmitted says how many
	// more); a store's first snapshot lists none.
	Changes        []FileChange  `json:"changes,omitempty"`
	ChangesOmitted int           `json:"changesOmitted,omitempty"`
	Files          int           `json:"files"`
	Skipped        []SkippedFile `json:"skipped,omitempty"`
	// EmptyDirs are directories that held nothing to snapshot: a restore
	// keeps them, or re-creates them.
	EmptyDirs []string `json:"emptyDirs,omitempty"`
}

// RestoreOptions tune a restore.
type RestoreOptions struct {
	// Paths limits the restore (slash-separated, relative; files or dirs).
	Paths  []string
	DryRun bool
	// Since is the snapshot the agent last left the workspace in: a file
	// that differs from it now was changed by someone else and is a
	// conflict unless Overwrite. Empty (what callers should pass): the
	// store picks it itself, see Store.ProtectionBase.
	Since string
	// Overwrite restores files changed by someone else too (no
	// protection base is needed or used).
	Overwrite bool
	// Owner names the restore in its journal (the ledger owner its
	// caller records its writes under, "restore/<id>"): if it is
	// interrupted, the recovery report says which (RecoveryReport.Owner).
	Owner string
}

// ErrNoProtectionBase is wrapped by Restore's error when it cannot tell
// which files someone else changed (no snapshot records a state the agent
// left the workspace in, or that snapshot cannot be read); restoring with
// Overwrite restores anyway.
var ErrNoProtectionBase = errors.New("no snapshot records the state the agent left the workspace in")

// RestoreConflict is a file left alone.
type RestoreConflict struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// RestoreResult lists what a restore wrote (or would write, DryRun).
type RestoreResult struct {
	Restored  []string          `json:"restored"` // content or mode rewritten
	Created   []string          `json:"created"`  // re-created (absent now)
	Deleted   []string          `json:"deleted"`  // created since the target, not ignored
	Conflicts []RestoreConflict `json:"conflicts"`
	// LeftAlone lists files the restore did not touch although the target
	// differs, other than conflicts: ignored files, files the target
	// snapshot skipped (too large, unreadable, special files), with why.
	LeftAlone    []RestoreConflict `json:"leftAlone"`
	UndoSnapshot string            `json:"undoSnapshotId,omitempty"`
	// ProtectionBase is the snapshot whose content counted as the
	// agent's (files that differ from it were conflicts); empty with
	// Overwrite.
	ProtectionBase string `json:"protectionBaseId,omitempty"`
	// ResultSnapshot records the state the restore left (KindRestored),
	// the protection base of the next restore; empty for a dry run.
	ResultSnapshot string `json:"resultSnapshotId,omitempty"`
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
	log   *slog.Logger
	files lister
	opts  Options
	dir   string

	mu sync.Mutex // serialises operations; guards storeState
	storeState

	stMu       sync.Mutex // guards st and the packs (go-git's storage is not safe for concurrent use)
	st         *filesystem.Storage
	packs      []*pack      // nil: not loaded
	packsStale bool         // another process may have added or removed packs
	packErr    error        // why some pack indexes could not be loaded (named in "object not found" errors)
	objCache   cache.Object // objects read from the packs
	problem    error        // an interrupted restore that could be neither finished nor rolled back (Problem)
	// pendingTrees: trees the snapshot being taken wrote into its pack,
	// which is not readable until it is complete.
	pendingTrees map[plumbing.Hash][]byte
	looseNone    bool // no loose objects in the store
}

// ErrNotFound is wrapped by errors for unknown snapshot ids.
var ErrNotFound = errors.New("snapshot not found")
