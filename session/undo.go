package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/journal"
)

// ErrNoJournal: the workspace's journal could not be opened (logged at
// start), so nothing about runs, restores or rules is known.
var ErrNoJournal = errors.New("the workspace's journal could not be opened (see the log); runs, undo and rules are unavailable")

// restore is the one restore of every front end, unrecorded.
func (s *Session) restore(ctx context.Context, id string, opts gitops.RestoreOptions) (*gitops.RestoreResult, error) {
	store, err := s.Store()
	if err != nil {
		return nil, err
	}
	if s.RestoreHook != nil {
		return s.RestoreHook(ctx, store, id, opts)
	}
	res, extra, err := engine.RestoreAroundBuffers(ctx, store, s.WS, id, opts)
	if res != nil {
		res.Conflicts = append(res.Conflicts, extra...)
	}
	return res, err
}

// Restore restores the workspace to snapshot id (protected: what someone
// else changed is a conflict unless opts.Overwrite) and records it in the
// journal, so that "undo restore" from any front end returns to before it.
func (s *Session) Restore(ctx context.Context, id string, opts gitops.RestoreOptions) (*gitops.RestoreResult, error) {
	return s.recordedRestore(ctx, id, opts, journal.Restore{})
}

func (s *Session) recordedRestore(ctx context.Context, id string, opts gitops.RestoreOptions, rec journal.Restore) (*gitops.RestoreResult, error) {
	res, err := s.restore(ctx, id, opts)
	if err != nil || opts.DryRun || s.Journal == nil {
		return res, err
	}
	rec.SnapshotID, rec.Before = id, res.UndoSnapshot
	if _, err := s.Journal.RecordRestore(rec); err != nil {
		// The restore happened; only its undo record is missing.
		s.log.Error("the restore is done but not recorded; undo restore will not find it", "snapshot", id, "err", err)
	}
	return res, nil
}

// UndoRunResult is what undoing a run did (protocol agentd/undo/run).
type UndoRunResult struct {
	RunID      string                `json:"runId"`
	SnapshotID string                `json:"snapshotId"`
	Run        *engine.RunState      `json:"-"`
	Restore    *gitops.RestoreResult `json:"restore"`
	// Leftovers is what the undo could not take back (nil: nothing).
	Leftovers *Leftovers `json:"leftovers,omitempty"`
}

// UndoRun undoes a run: with runID "" the newest run not yet undone (so a
// second undo undoes the run before), else the run whose ID is runID or
// starts with it. The workspace goes back to the run's start snapshot
// through the protected restore, and the journal records both the restore
// and that the run is undone; Leftovers names what it cannot take back.
// A run that took no snapshots is a
// *journal.NoSnapshotsError naming it.
func (s *Session) UndoRun(ctx context.Context, runID string, opts gitops.RestoreOptions) (*UndoRunResult, error) {
	if s.Journal == nil {
		return nil, ErrNoJournal
	}
	defer s.Journal.LockUndo()()
	st, err := s.Journal.RunToUndo(runID)
	if err != nil {
		return nil, err
	}
	snap := st.Snapshots[0]
	res, err := s.recordedRestore(ctx, snap, opts, journal.Restore{RunID: st.RunID})
	if err != nil {
		return nil, fmt.Errorf("undoing run %s: %w", st.RunID, err)
	}
	if !opts.DryRun {
		if err := s.Journal.MarkUndone(st.RunID, journal.HowUndo); err != nil {
			return nil, fmt.Errorf("run %s is undone but that is not recorded (the next undo would pick it again): %w", st.RunID, err)
		}
	}
	return &UndoRunResult{RunID: st.RunID, SnapshotID: snap, Run: st, Restore: res,
		Leftovers: s.Leftovers(ctx, st.RunID, st.SkippedFiles)}, nil
}

// UndoRestoreResult is what undoing a restore did.
type UndoRestoreResult struct {
	Undid   journal.Restore
	Restore *gitops.RestoreResult
}

// UndoRestore undoes the newest restore not yet undone (from any front
// end, an undo of a run included): the workspace goes back to the safety
// snapshot taken before it. Undoing the undo of a run makes that run the
// one "undo" means again. journal.ErrNoRestoreToUndo when there is none.
func (s *Session) UndoRestore(ctx context.Context, opts gitops.RestoreOptions) (*UndoRestoreResult, error) {
	if s.Journal == nil {
		return nil, ErrNoJournal
	}
	defer s.Journal.LockUndo()()
	r, err := s.Journal.RestoreToUndo()
	if err != nil {
		return nil, err
	}
	res, err := s.recordedRestore(ctx, r.Before, opts, journal.Restore{Undo: r.ID})
	if err != nil {
		return nil, fmt.Errorf("undoing the restore to %s: %w", short(r.SnapshotID), err)
	}
	if !opts.DryRun {
		if err := s.Journal.MarkRestoreUndone(*r); err != nil {
			return nil, fmt.Errorf("the restore is undone but that is not recorded: %w", err)
		}
		if r.RunID != "" {
			if err := s.Journal.Unmark(r.RunID); err != nil {
				return nil, fmt.Errorf("run %s is back but still recorded as undone: %w", r.RunID, err)
			}
		}
	}
	return &UndoRestoreResult{Undid: *r, Restore: res}, nil
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
