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
