package gitops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// What the recovery of an interrupted restore or undo did is said, not
// only done: Open (or Doctor) writes a RecoveryReport into the store, and
// the next command that asks (Store.Recovered) prints it, once.

// recoveryName is the report of the last recovery, until it is read.
const recoveryName = "agentd/recovered.json"

// Recovery outcomes.
const (
	RecoveryFinished   = "finished"    // the interrupted operation was completed
	RecoveryRolledBack = "rolled back" // it was undone (it had failed, or could not be completed)
	RecoveryStuck      = "stuck"       // neither: Store.Problem says what to do
)

// RecoveryReport says what was done about an operation a crash (or a
// failure) interrupted.
type RecoveryReport struct {
	// Operation names it ("the restore to 1a2b3c4d5e6f", "the undo").
	Operation string `json:"operation"`
	// Owner is the ledger owner the interrupted operation's writes are
	// recorded under ("undo/<id>", "restore/<id>"; RevertOptions.RecordAs,
	// RestoreOptions.Owner), empty when its caller gave none: the caller's
	// own record of that operation is completed or dropped by it.
	Owner   string `json:"owner,omitempty"`
	Outcome string `json:"outcome"`
	// Paths are every file the interrupted operation was to write or
	// delete.
	Paths []string `json:"paths,omitempty"`
	// Finished are the files the recovery wrote to complete it;
	// RolledBack the files it put back as they were before it.
	Finished   []string `json:"finished"`
	RolledBack []string `json:"rolledBack"`
	// Kept are files changed since the interruption (not as the
	// operation left or expected them): kept as they are, with why.
	Kept []RestoreConflict `json:"kept"`
	// UndoSnapshot holds the workspace as it was before the interrupted
	// operation: restoring it is the way back.
	UndoSnapshot string `json:"undoSnapshotId,omitempty"`
	// ResultSnapshot records what the recovery left (the files kept as
	// the user left them recorded as before it), when it was taken:
	// with UndoSnapshot and Paths, what the operation wrote.
	ResultSnapshot string    `json:"resultSnapshotId,omitempty"`
	Problem        string    `json:"problem,omitempty"`
	At             time.Time `json:"at"`
}

// String says the report in a few lines a user reads.
func (r *RecoveryReport) String() string {
	var b strings.Builder
	switch r.Outcome {
	case RecoveryFinished:
		fmt.Fprintf(&b, "%s was interrupted; it has now been completed", r.Operation)
	case RecoveryRolledBack:
		fmt.Fprintf(&b, "%s was interrupted; it has been rolled back", r.Operation)
	default:
		fmt.Fprintf(&b, "%s was interrupted and could be neither completed nor rolled back: %s", r.Operation, r.Problem)
	}
	if n := len(r.Finished); n > 0 {
		fmt.Fprintf(&b, "\n  written to complete it: %s", strings.Join(r.Finished, ", "))
	}
	if n := len(r.RolledBack); n > 0 {
		fmt.Fprintf(&b, "\n  put back as before it: %s", strings.Join(r.RolledBack, ", "))
	}
	for _, k := range r.Kept {
		fmt.Fprintf(&b, "\n  kept as it is: %s: %s", k.Path, k.Message)
	}
	if r.UndoSnapshot != "" {
		fmt.Fprintf(&b, "\n  the workspace as it was before it is snapshot %s (agentd snapshot restore %s)", short(r.UndoSnapshot), short(r.UndoSnapshot))
	}
	return b.String()
}

// saveRecovery records rep for Recovered (durably: it may be all that
// tells the user what happened to their files).
func (s *Store) saveRecovery(rep *RecoveryReport) error {
	data, err := json.MarshalIndent(rep, "", " ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(s.dir, recoveryName), data, 0o644, true)
}

// Recovered returns what the recovery of an interrupted restore or undo
// did (at this store's open, or another process's), and forgets it: the
// command that gets it prints it. nil when there is nothing to say.
func (s *Store) Recovered(ctx context.Context) (*RecoveryReport, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	name := filepath.Join(s.dir, recoveryName)
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gitops: read the recovery report %s: %w", name, err)
	}
	var rep RecoveryReport
	if err := json.Unmarshal(data, &rep); err != nil {
		os.Remove(name)
		return nil, fmt.Errorf("gitops: the recovery report %s is damaged (%v); removed", name, err)
	}
	s.changed = true
	if err := os.Remove(name); err != nil {
		return nil, fmt.Errorf("gitops: remove the recovery report %s: %w", name, err)
	}
	return &rep, nil
}

// recordRecovered takes the KindRestored snapshot of what the recovery
// left, as a restore records its result: the next restore's protection
// base then counts the files the interrupted operation and its recovery
// wrote as agentd's (so the way back, restoring rep.UndoSnapshot, puts
// them back), and the files kept as the user left them are recorded as
// they were in the previous base, so they stay the user's. If it fails
// the recovery stands; the next restore compares with an older base,
// which can only report more conflicts, never overwrite more. The caller
// holds the store lock. It returns the snapshot's ID ("" if none).
func (s *Store) recordRecovered(ctx context.Context, rep *RecoveryReport) string {
	ov := map[string]*treeFile{}
	if len(rep.Kept) > 0 {
		var base map[string]treeFile
		if all, err := s.snapshots(""); err == nil {
			for _, sn := range all { // newest first
				if sn.Kind == KindRun || sn.Kind == KindRestored {
					base, err = s.snapshotFiles(sn.ID)
					if err != nil {
						base = nil
					}
					break
				}
			}
		}
		if base == nil {
			return "" // no base to keep the user's files in: record nothing
		}
		for _, k := range rep.Kept {
			if f, ok := base[k.Path]; ok {
				ov[k.Path] = &f
			} else {
				ov[k.Path] = nil
			}
		}
	}
	sn, _, err := s.snapshotLocked(ctx, SnapshotOptions{Label: "after recovering " + rep.Operation, kind: KindRestored, overrides: ov}, manRefPrefix)
	if err != nil {
		s.log.Warn("gitops: could not record what the recovery left; the next restore compares with an older snapshot and may report more conflicts", "dir", s.dir, "err", err)
		return ""
	}
	return sn.ID
}
