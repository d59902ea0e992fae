package workspace

import (
	"context"
	"errors"
	"io/fs"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/internal/fileset"
)

// This file is the contract other packages (engine, engine/tools, gitops,
// rpc, cmd) build against. The package's owner may add to it and replace
// placeholder bodies, but must not change these signatures without updating
// every caller.

// ErrOutsideRoot is wrapped by every error for a path that resolves outside
// the workspace (through "..", an absolute path, a file:// URI or a symlink).
var ErrOutsideRoot = errors.New("path is outside the workspace")

// PathError names the offending path.
type PathError struct {
	Path string // as given by the caller
	Err  error  // ErrOutsideRoot, fs.ErrNotExist, ...
}

func (e *PathError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *PathError) Unwrap() error { return e.Err }

// ConflictError says a file changed since a change was computed against it.
type ConflictError struct {
	Path string
}

func (e *ConflictError) Error() string {
	return e.Path + ": file changed since the change was computed; review it again"
}

// Options configure a workspace.
type Options struct {
	// MaxFileSize bounds reads by tools (0 = 20 MiB).
	MaxFileSize int64
}

// Workspace is one open folder. Safe for concurrent use.
type Workspace struct {
	root  string
	files *fileset.Set
}

// Open opens root (made absolute and symlink-resolved).
func Open(root string, opts Options) (*Workspace, error) {
	return nil, errors.New("workspace: not implemented yet")
}

// Root returns the absolute, symlink-resolved root.
func (w *Workspace) Root() string { return w.root }

// Files returns the ignore-aware file set of the workspace.
func (w *Workspace) Files() *fileset.Set { return w.files }

// Resolve turns a workspace-relative path, an absolute path inside the root
// or a file:// URI into a clean slash-separated relative path and the
// absolute OS path. Anything that leaves the root — lexically or through a
// symlink in any existing component — is a *PathError wrapping
// ErrOutsideRoot. The root itself resolves to ".".
func (w *Workspace) Resolve(p string) (rel, abs string, err error) {
	return "", "", errors.New("workspace: not implemented yet")
}

// URI returns the file:// URI of a relative path.
func (w *Workspace) URI(rel string) string { return "" }

// ReadFile returns the overlay content if the file is open in the editor,
// otherwise the file on disk.
func (w *Workspace) ReadFile(ctx context.Context, p string) ([]byte, error) {
	return nil, errors.New("workspace: not implemented yet")
}

// Stat is os.Lstat on a resolved path.
func (w *Workspace) Stat(p string) (fs.FileInfo, error) {
	return nil, errors.New("workspace: not implemented yet")
}

// WriteFile writes atomically (temp file in the same directory, fsync,
// rename), keeping an existing file's mode; perm applies to new files.
func (w *Workspace) WriteFile(ctx context.Context, p string, data []byte, perm fs.FileMode) error {
	return errors.New("workspace: not implemented yet")
}

// Remove deletes a file. Rename moves one, creating parent directories.
func (w *Workspace) Remove(ctx context.Context, p string) error {
	return errors.New("workspace: not implemented yet")
}
func (w *Workspace) Rename(ctx context.Context, from, to string) error {
	return errors.New("workspace: not implemented yet")
}

// Position is an LSP position: 0-based line and UTF-16 code unit offset.
type Position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// Range is an LSP range.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// TextEdit is one incremental edit; a nil Range replaces the whole text.
type TextEdit struct {
	Range *Range
	Text  string
}

// OpenOverlay records an editor buffer (didOpen). Version is the editor's.
func (w *Workspace) OpenOverlay(p string, content []byte, version int32) error {
	return errors.New("workspace: not implemented yet")
}

// EditOverlay applies incremental edits in order (didChange).
func (w *Workspace) EditOverlay(p string, edits []TextEdit, version int32) error {
	return errors.New("workspace: not implemented yet")
}

// CloseOverlay forgets a buffer (didClose); reads go to disk again.
func (w *Workspace) CloseOverlay(p string) {}

// Overlay returns the buffer's content and version if the file is open.
func (w *Workspace) Overlay(p string) (content []byte, version int32, ok bool) { return nil, 0, false }

// Op is what a change does to one file.
type Op string

const (
	OpCreate Op = "create"
	OpModify Op = "modify"
	OpDelete Op = "delete"
	OpMove   Op = "move"
)

// FileChange is one file of a change set.
type FileChange struct {
	Path     string         `json:"path"`              // slash-separated relative (the new path for a move)
	OldPath  string         `json:"oldPath,omitempty"` // for a move
	Op       Op             `json:"op"`
	BaseHash string         `json:"baseHash"` // sha256 hex of Old ("" when the file did not exist)
	Old      []byte         `json:"-"`        // content the change was computed against
	New      []byte         `json:"-"`        // proposed content (nil for delete)
	Mode     fs.FileMode    `json:"mode"`     // mode of the new file
	Binary   bool           `json:"binary,omitempty"`
	Diff     *diff.FileDiff `json:"-"`
}

// ChangeSet is everything one step (or one agent turn) proposes.
type ChangeSet struct {
	ID     string        `json:"id"`
	RunID  string        `json:"runId,omitempty"`
	StepID string        `json:"stepId,omitempty"`
	Files  []*FileChange `json:"files"`
}

// Builder accumulates a change set. Later operations on the same path see
// the earlier ones (write then edit works).
type Builder struct{ w *Workspace }

// Propose starts a change set computed against what the user sees now
// (overlays included).
func (w *Workspace) Propose(ctx context.Context) *Builder { return &Builder{w: w} }

// Read returns a path's content as the change set so far would leave it.
func (b *Builder) Read(p string) ([]byte, error) {
	return nil, errors.New("workspace: not implemented yet")
}

// Write creates or replaces a file's content.
func (b *Builder) Write(p string, content []byte) error {
	return errors.New("workspace: not implemented yet")
}

// Delete deletes a file. Move moves one.
func (b *Builder) Delete(p string) error      { return errors.New("workspace: not implemented yet") }
func (b *Builder) Move(from, to string) error { return errors.New("workspace: not implemented yet") }

// Build returns the change set (nil if it changes nothing). Diffs are computed.
func (b *Builder) Build() *ChangeSet { return nil }

// FileWriter performs the write of a file's new content. The default writes
// atomically on disk; the rpc package substitutes one that routes files open
// in the editor through workspace/applyEdit.
type FileWriter interface {
	WriteFile(ctx context.Context, rel string, old, new []byte, mode fs.FileMode) error
}

// ApplyResult reports what Apply did per file.
type ApplyResult struct {
	Applied   []string // relative paths written, created, deleted or moved
	Conflicts []*ConflictError
}

// Apply writes the files of cs, each with only the hunks accept allows
// (accept == nil accepts every hunk; for binary files, create, delete and
// move the hunk argument is a zero Hunk and decides the whole file). A file
// whose current content (overlay or disk) no longer hashes to BaseHash is
// rebased with a three-way merge when that is clean, otherwise reported as a
// conflict and left alone. writer may be nil for atomic writes on disk.
func (w *Workspace) Apply(ctx context.Context, cs *ChangeSet, accept func(*FileChange, diff.Hunk) bool, writer FileWriter) (*ApplyResult, error) {
	return nil, errors.New("workspace: not implemented yet")
}
