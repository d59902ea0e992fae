package gitops

import (
	"context"
	"fmt"
	"io/fs"
	"time"
)

// The ledger: what the agent changed, file by file, exactly as it wrote it.
//
// Undo is a revert, restore is a reset (docs/undo.md).
// A snapshot says what the workspace held at a moment; it cannot say which
// of its lines were the agent's and which the user typed meanwhile. The
// ledger can: every write the agent makes (a change set applied in
// `after` or `none` mode, an accepted hunk, a hunk taken out again on
// reject, a hunk the user edited with `e` and accepted, a command's effect
// as its snapshots recorded it, what an undo or a restore itself wrote)
// is recorded as an Edit under an owner, with the file's state just
// before and just after that write. Revert takes those edits back, newest
// first, with a three-way merge onto what the file holds now, as
// `git revert` does, so the user's own lines stay wherever they are.
//
// Owners are slash-separated names:
//
//	run/<runID>        the edits of a run (its steps and their review)
//	undo/<id>          what an undo wrote (so an undo can be undone)
//	restore/<id>       what a restore to a snapshot wrote

// Edit is one file the agent changed. Before and After are the file's
// states just before and just after the write: Before nil means the file
// did not exist (a create), After nil means it was deleted. A move is two
// edits (the old path deleted, the new path created).
type Edit struct {
	Path   string // workspace-relative, slash-separated
	Before *FileState
	After  *FileState
}

// FileState is a file's content and kind. Mode is 0 or 0644 for a
// regular file, 0755 (any executable bit) for an executable, and
// fs.ModeSymlink for a link (Data is then the link's target).
type FileState struct {
	Data []byte
	Mode fs.FileMode
}

// BlobRef names content kept in the store (hex object id) and its mode as
// FileState.Mode says.
type BlobRef struct {
	Hash string      `json:"hash"`
	Mode fs.FileMode `json:"mode"`
}

// LedgerEntry is one recorded edit.
type LedgerEntry struct {
	Seq    int       `json:"seq"` // order within the owner's ledger, from 1
	Owner  string    `json:"owner"`
	Step   string    `json:"step,omitempty"`
	Path   string    `json:"path"`
	Before *BlobRef  `json:"before,omitempty"` // nil: absent
	After  *BlobRef  `json:"after,omitempty"`  // nil: absent
	At     time.Time `json:"at"`
}

// ConflictChoice is what a revert does where the user changed the
// agent's own lines. Every front end offers the same three.
type ConflictChoice string

const (
	// RefuseOnConflict (the default): if any file conflicts, nothing is
	// written; the result names every conflict.
	RefuseOnConflict ConflictChoice = ""
	// KeepConflicts reverts every file that merges cleanly and leaves the
	// conflicting files exactly as they are (named in the result).
	KeepConflicts ConflictChoice = "keep"
	// OverwriteConflicts takes the agent's edits back from the
	// conflicting files too, the agent's earlier lines winning where the
	// user's clash with them (the user's other lines stay; a binary file,
	// a link, or a file created or deleted takes its state before the
	// agent's edit whole), after a safety snapshot that keeps the user's
	// version (its way back is in the result).
	OverwriteConflicts ConflictChoice = "overwrite"
)

// RevertOptions tune a revert.
type RevertOptions struct {
	// DryRun computes everything (conflicts and their diffs included) and
	// writes nothing.
	DryRun bool
	// OnConflict says what to do with conflicting files.
	OnConflict ConflictChoice
	// Paths limits the revert (slash-separated, relative; files or dirs).
	Paths []string
	// RecordAs is the owner the revert's own writes are recorded under
	// (e.g. "undo/<id>"), so that the revert can itself be reverted.
	// Empty: not recorded.
	RecordAs string
}

// RevertConflict is a file the revert cannot take back cleanly.
type RevertConflict struct {
	Path string `json:"path"`
	// Reason says why, in words a user reads ("you changed lines the
	// agent wrote", "a file now stands where the agent deleted one").
	Reason string `json:"reason"`
	// Owners are the owners whose edits of this file conflict (the run
	// being undone, or a newer run that changed the same lines).
	Owners []string `json:"owners,omitempty"`
	// Diff is a unified diff from what the file holds now to what
	// OverwriteConflicts would write, for "see the conflicts".
	Diff string `json:"diff,omitempty"`
}

// RevertResult says what a revert did (or would do, DryRun, or refused
// to do because of conflicts: Applied false).
type RevertResult struct {
	Applied   bool              `json:"applied"`
	Reverted  []string          `json:"reverted"` // content or mode rewritten
	Created   []string          `json:"created"`  // re-created (the agent had deleted it)
	Deleted   []string          `json:"deleted"`  // the agent had created it
	Conflicts []RevertConflict  `json:"conflicts"`
	LeftAlone []RestoreConflict `json:"leftAlone"` // not touched for another reason, with why
	// Overwritten are the conflicting files OverwriteConflicts replaced
	// (the safety snapshot UndoSnapshot holds what they were).
	Overwritten []string `json:"overwritten,omitempty"`
	// UndoSnapshot is the safety snapshot taken before anything was
	// written; empty when nothing was written.
	UndoSnapshot string `json:"undoSnapshotId,omitempty"`
	// RecordedAs is the owner this revert's writes were recorded under
	// (RevertOptions.RecordAs), when it wrote anything.
	RecordedAs string `json:"recordedAs,omitempty"`
	// Diffs (DryRun only) are the files the revert would write, each with
	// a unified diff from what it holds now to what it would write: what
	// a front end shows before the user says go.
	Diffs []RevertDiff `json:"diffs,omitempty"`
}

// RevertDiff is one file a dry-run revert would write, and how.
type RevertDiff struct {
	Path string `json:"path"`
	Diff string `json:"diff"`
}

// RecordEdits appends edits to owner's ledger, under step, durably
// (objects and the entry fsync'd) before it returns. Callers record
// before they write: an edit recorded but never written reverts to
// nothing (the file still holds Before), while an edit written but not
// recorded could never be undone.
func (s *Store) RecordEdits(ctx context.Context, owner, step string, edits []Edit) error {
	if err := checkOwner(owner); err != nil {
		return fmt.Errorf("gitops: record edits: %w", err)
	}
	for _, e := range edits {
		if err := checkRel(e.Path); err != nil {
			return fmt.Errorf("gitops: record edits of %s: %w", owner, err)
		}
	}
	if len(edits) == 0 {
		return nil
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return s.recordEditsLocked(owner, step, edits)
}

// RecordSnapshotEdits records as owner's edits under step what changed
// between snapshots from and to (a command step's effect, as the
// snapshots before and after it recorded it), limited to paths when any
// are given. The content is already in the store; nothing is re-read.
func (s *Store) RecordSnapshotEdits(ctx context.Context, owner, step, from, to string, paths []string) error {
	if err := checkOwner(owner); err != nil {
		return fmt.Errorf("gitops: record edits: %w", err)
	}
	prefixes, err := s.relPaths(paths)
	if err != nil {
		return fmt.Errorf("gitops: record edits of %s: %w", owner, err)
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return s.recordSnapshotEditsLocked(owner, step, from, to, prefixes)
}

// RecordSnapshotEditsOver is RecordSnapshotEdits of a command's effect
// where saved are the files known to have been written by someone else
// while the command ran (the user's saves in the editor): path -> the
// content saved. Such a path's edit starts from what was saved, and is
// none when the snapshot after holds just that: the user's save is not
// the command's.
func (s *Store) RecordSnapshotEditsOver(ctx context.Context, owner, step, from, to string, saved map[string]*FileState) error {
	if err := checkOwner(owner); err != nil {
		return fmt.Errorf("gitops: record edits: %w", err)
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return s.recordSnapshotEditsLocked(owner, step, from, to, nil, saved)
}

// Ledger lists owner's edits in the order they were recorded (nil, nil
// when there are none).
func (s *Store) Ledger(ctx context.Context, owner string) ([]LedgerEntry, error) {
	if err := checkOwner(owner); err != nil {
		return nil, fmt.Errorf("gitops: ledger: %w", err)
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return s.readLedger(owner)
}

// Revert takes back the edits of owners (each owner's edits newest
// first, owners in the order given) on top of what the workspace holds
// now: for each file, a three-way merge with the agent's After as base,
// the file now as ours and the agent's Before as theirs. Lines the user
// wrote anywhere stay; only where the user changed the agent's own lines
// is there a conflict, handled as opts.OnConflict says. The writes are
// journaled like a restore's (a crash is finished or rolled back on the
// next open, but only for files still in the state the revert left
// them).
func (s *Store) Revert(ctx context.Context, owners []string, opts RevertOptions) (*RevertResult, error) {
	return s.revert(ctx, owners, opts)
}
