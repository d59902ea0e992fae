package engine

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

// Ledger is where what the agent changed is recorded, file by file, as the
// agent's (gitops.Store's ledger behind an adapter: StoreLedger). Undo
// reverts it; the snapshots only say what the workspace held.
//
// Every write of a run is recorded before it is made: a change set the
// engine applies (review after or none) and every write of the review's
// decisions (review.Book.RecordEdits: an accepted hunk, a hunk taken out
// again, a rejection undone, an edit made with `e`), through
// workspace.RecordingWriter; a command's effect is recorded from the
// snapshots before and after it (step_snapshot.go).
type Ledger interface {
	RecordEdits(ctx context.Context, owner, step string, edits []gitops.Edit) error
	RecordSnapshotEdits(ctx context.Context, owner, step, from, to string, paths []string) error
	Revert(ctx context.Context, owners []string, opts gitops.RevertOptions) (*gitops.RevertResult, error)
}

// SavesLedger is a Ledger that records a command's effect starting from
// the files the user saved in the editor while it ran
// (gitops.Store.RecordSnapshotEditsOver): a save is the user's, not the
// command's.
type SavesLedger interface {
	RecordSnapshotEditsOver(ctx context.Context, owner, step, from, to string, saved map[string]*gitops.FileState) error
}

// RunOwner is the ledger owner of a run's edits.
func RunOwner(runID string) string { return "run/" + runID }

// StoreLedger is the Ledger of the store that open returns (waiting for a
// store that is still being opened: session.Session.Store).
func StoreLedger(open func() (*gitops.Store, error)) Ledger { return storeLedger(open) }

type storeLedger func() (*gitops.Store, error)

func (l storeLedger) RecordEdits(ctx context.Context, owner, step string, edits []gitops.Edit) error {
	s, err := l()
	if err != nil {
		return err
	}
	return s.RecordEdits(ctx, owner, step, edits)
}

func (l storeLedger) RecordSnapshotEdits(ctx context.Context, owner, step, from, to string, paths []string) error {
	s, err := l()
	if err != nil {
		return err
	}
	return s.RecordSnapshotEdits(ctx, owner, step, from, to, paths)
}

func (l storeLedger) RecordSnapshotEditsOver(ctx context.Context, owner, step, from, to string, saved map[string]*gitops.FileState) error {
	s, err := l()
	if err != nil {
		return err
	}
	return s.RecordSnapshotEditsOver(ctx, owner, step, from, to, saved)
}

func (l storeLedger) Revert(ctx context.Context, owners []string, opts gitops.RevertOptions) (*gitops.RevertResult, error) {
	s, err := l()
	if err != nil {
		return nil, err
	}
	return s.Revert(ctx, owners, opts)
}

// LedgerRecorder is the workspace.EditRecorder that records a run's
// writes in l under the run's owner (RunOwner) and the step.
func LedgerRecorder(l Ledger) workspace.EditRecorder {
	if l == nil {
		return nil
	}
	return ledgerRecorder{l}
}

type ledgerRecorder struct{ l Ledger }

func (r ledgerRecorder) RecordEdits(ctx context.Context, runID, stepID string, edits []workspace.Edit) error {
	ge := make([]gitops.Edit, len(edits))
	for i, e := range edits {
		ge[i] = gitops.Edit{Path: e.Path, Before: fileState(e.Before), After: fileState(e.After)}
	}
	if err := r.l.RecordEdits(ctx, RunOwner(runID), stepID, ge); err != nil {
		return fmt.Errorf("recording the edit of run %s, step %s: %w", runID, stepID, err)
	}
	return nil
}

func fileState(s *workspace.FileState) *gitops.FileState {
	if s == nil {
		return nil
	}
	return &gitops.FileState{Data: s.Data, Mode: s.Mode & (fs.ModeSymlink | fs.ModePerm)}
}

// recorder is what records the run's writes: none in a dry run or
// without snapshots (the ledger lives in the snapshot store).
func (s *sched) recorder() workspace.EditRecorder {
	if s.cfg.Ledger == nil || s.cfg.Snapshots == nil || s.opts.DryRun {
		return nil
	}
	return LedgerRecorder(s.cfg.Ledger)
}
