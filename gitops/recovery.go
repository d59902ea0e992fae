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
	Outcome   string `json:"outcome"`
	// Finished are the files the recovery wrote to complete it;
	// RolledBack the files it put back as they were before it.
	Finished   []string `json:"finished"`
	RolledBack []string `json:"rolledBack"`
	// Kept are files changed since the interruption (not as the
	// operation left or expected them): kept as they are, with why.
	Kept []RestoreConflict `json:"kept"`
	// UndoSnapshot holds the workspace as it was before the interrupted
	// operation: restoring it is the way back.
	UndoSnapshot string    `json:"undoSnapshotId,omitempty"`
	Problem      string    `json:"problem,omitempty"`
	At           time.Time `json:"at"`
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
