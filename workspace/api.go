package workspace

import (
	"context"
	"errors"
	"io/fs"

	"github.com/agentd/agentd/diff"
)

// This file is the contract other packages (engine, engine/tools, gitops,
// rpc, cmd) build against. The package's owner may add to it and replace
// placeholder bodies, but must not change these signatures without updating
// every caller.

// ErrOutsideRoot is wrapped by every error for a path that resolves outside
// the workspace (through "..", an absolute path, a file:// URI or a symlink).
var ErrOutsideRoot = errors.New("path is outside the workspace")

// ErrInvalidPath is wrapped by errors for a path that cannot name a file at
// all: a NUL byte, a URI that is not a local file:// URI, a malformed URI.
var ErrInvalidPath = errors.New("invalid path")

// ErrGitDir is wrapped by errors for a write, removal or rename inside a
// `.git` directory (at any level, also through a symlink): agentd never
// changes a git repository's internals. Reading there is allowed.
var ErrGitDir = errors.New("path is inside a .git directory, which agentd never writes")

// ErrTooLarge is wrapped by ReadFile's error for a file over MaxFileSize.
var ErrTooLarge = errors.New("file is too large")

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
	// Op is the operation that could not be applied.
	Op Op
	// Reason says what changed, for people ("" gives the generic message).
	Reason string
	// Regions are the regions a three-way merge could not resolve (only
	// for modifications of text files whose content changed).
	Regions []diff.Conflict
}

func (e *ConflictError) Error() string {
	if e.Reason != "" {
		return e.Path + ": " + e.Reason + "; review it again"
	}
	return e.Path + ": file changed since the change was computed; review it again"
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

// FileWriter performs the write of a file's new content. The default writes
// atomically on disk; the rpc package substitutes one that routes files open
// in the editor through workspace/applyEdit.
//
// old is the file's current content (overlay or disk) that new was merged
// against, nil if the file does not exist. A writer may also implement
// FileRemover and FileRenamer to take over deletes and moves.
type FileWriter interface {
	WriteFile(ctx context.Context, rel string, old, new []byte, mode fs.FileMode) error
}

// FileRemover is implemented by a FileWriter that also performs deletes
// (Apply uses Workspace.Remove otherwise).
type FileRemover interface {
	RemoveFile(ctx context.Context, rel string) error
}

// FileRenamer is implemented by a FileWriter that also performs moves
// (Apply uses Workspace.Rename otherwise). Apply only calls it for a move
// whose content is unchanged; a move with a content change is written as
// WriteFile of the new path and a remove of the old one.
type FileRenamer interface {
	RenameFile(ctx context.Context, from, to string) error
}

// ApplyResult reports what Apply did per file.
type ApplyResult struct {
	Applied   []string // relative paths written, created, deleted or moved
	Conflicts []*ConflictError
}
