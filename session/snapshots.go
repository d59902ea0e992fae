package session

import (
	"context"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/gitops"
)

// DefaultStateDir is where agentd keeps a workspace's state when no
// --state-dir, AGENTD_STATE_DIR or client option names one.
func DefaultStateDir() string { return gitops.DefaultStateDir() }

// Snapshots lists the workspace's snapshots, newest first; runID, if
// set, keeps that run's alone. It waits for the store if it is being
// opened.
func (s *Session) Snapshots(ctx context.Context, runID string) ([]*Snapshot, error) {
	store, err := s.Store()
	if err != nil {
		return nil, err
	}
	return store.List(ctx, runID)
}

// TakeSnapshot records the workspace now.
func (s *Session) TakeSnapshot(ctx context.Context, opts SnapshotOptions) (*Snapshot, error) {
	store, err := s.Store()
	if err != nil {
		return nil, err
	}
	return store.Snapshot(ctx, opts)
}

// SnapshotDiff is the diff from snapshot from to snapshot to (to empty:
// the workspace now).
func (s *Session) SnapshotDiff(ctx context.Context, from, to string) ([]*diff.FileDiff, error) {
	store, err := s.Store()
	if err != nil {
		return nil, err
	}
	return store.Diff(ctx, from, to)
}

// OneShot tunes the Go runtime for a command that opens the store, does
// one thing and exits (agentd snapshot ..., agentd undo): see
// gitops.OneShot. The returned function puts the previous settings back.
func OneShot() (restore func()) { return gitops.OneShot() }

// StoreReady waits for the snapshot store and says why it is not there
// (snapshots off, the store could not be opened), or nil.
func (s *Session) StoreReady() error {
	_, err := s.Store()
	return err
}

// StoreProblem is what is wrong with the snapshot store (an interrupted
// restore it could not finish), with what to do, or nil; agentd snapshot
// doctor repairs it.
func (s *Session) StoreProblem() error {
	store, err := s.Store()
	if err != nil {
		return nil
	}
	return store.Problem()
}

// SnapshotByID is the snapshot id names: its ID, a unique prefix of it,
// or its reference ("manual/3", "runs/RUN/2").
func (s *Session) SnapshotByID(ctx context.Context, id string) (*Snapshot, error) {
	store, err := s.Store()
	if err != nil {
		return nil, err
	}
	return store.Get(ctx, id)
}

// SnapshotFiles are the files snapshot id holds (slash-separated, sorted).
func (s *Session) SnapshotFiles(ctx context.Context, id string) ([]string, error) {
	store, err := s.Store()
	if err != nil {
		return nil, err
	}
	return store.Files(ctx, id)
}

// CollectGarbage prunes the runs past retention and the objects nothing
// refers to.
func (s *Session) CollectGarbage(ctx context.Context) (*GCResult, error) {
	store, err := s.Store()
	if err != nil {
		return nil, err
	}
	return store.GC(ctx)
}

// Doctor puts the snapshot store in order where it can (finishes or rolls
// back an interrupted restore); what it cannot, its error explains.
func (s *Session) Doctor(ctx context.Context) (*DoctorReport, error) {
	store, err := s.Store()
	if err != nil {
		return nil, err
	}
	return store.Doctor(ctx)
}
