package engine

import (
	"context"
	"fmt"

	"github.com/agentd/agentd/gitops"
)

// StoreSnapshotter adapts a gitops.Store to the engine's Snapshotter for
// the engine's own tests; every front end uses session.Snapshotter, which
// also records the agent's unsaved buffers.
func StoreSnapshotter(s *gitops.Store) Snapshotter { return storeSnapshotter{s} }

type storeSnapshotter struct{ s *gitops.Store }

func (a storeSnapshotter) Snapshot(ctx context.Context, req SnapshotRequest) (SnapshotInfo, error) {
	snap, err := a.s.Snapshot(ctx, gitops.SnapshotOptions{RunID: req.RunID, StepID: req.StepID, Label: req.Label, Limit: req.Limit})
	if err != nil {
		return SnapshotInfo{}, err
	}
	return SnapshotInfo{ID: snap.ID, Skipped: snap.Skipped}, nil
}

func (a storeSnapshotter) KeepPreImages(ctx context.Context, paths []string) error {
	_, err := a.s.Keep(ctx, paths)
	return err
}

func (a storeSnapshotter) Restore(ctx context.Context, req RestoreRequest) (*RestoreInfo, error) {
	res, err := a.s.Restore(ctx, req.SnapshotID, gitops.RestoreOptions{
		Paths: req.Paths, Overwrite: req.Overwrite,
	})
	info := &RestoreInfo{SnapshotID: req.SnapshotID}
	if res != nil {
		info.Restored = append(info.Restored, res.Restored...)
		info.Restored = append(info.Restored, res.Created...)
		info.Restored = append(info.Restored, res.Deleted...)
		for _, c := range res.Conflicts {
			info.Conflicts = append(info.Conflicts, c.Path)
		}
	}
	if err != nil {
		info.Error = err.Error()
		return info, fmt.Errorf("restoring snapshot %s: %w", req.SnapshotID, err)
	}
	return info, nil
}
