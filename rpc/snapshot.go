package rpc

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentd/agentd/diff"
	wire "github.com/agentd/agentd/protocol"
	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

func snapshotMethods() map[string]method {
	return map[string]method{
		"agentd/snapshot/list":    {call: (*Server).snapshotList, async: true},
		"agentd/snapshot/create":  {call: (*Server).snapshotCreate, async: true},
		"agentd/snapshot/diff":    {call: (*Server).snapshotDiff, async: true},
		"agentd/snapshot/restore": {call: (*Server).snapshotRestore, async: true},
	}
}

func (s *Server) snapshotList(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.SnapshotListParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.snapshots()
	if err != nil {
		return nil, err
	}
	list, err := sess.Snapshots(ctx, p.RunID)
	if err != nil {
		return nil, err
	}
	out := make([]SnapshotInfo, 0, len(list))
	for _, sn := range list {
		out = append(out, SnapshotInfo{ID: sn.ID, RunID: sn.RunID, StepID: sn.StepID, Kind: string(sn.Kind), Label: sn.Label, CreatedAt: sn.CreatedAt,
			FilesChanged: sn.FilesChanged, Changes: wireFileChanges(sn.Changes), ChangesOmitted: sn.ChangesOmitted, Skipped: wireSkipped(sn.Skipped)})
	}
	return out, nil
}

func (s *Server) snapshotCreate(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.SnapshotCreateParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.snapshots()
	if err != nil {
		return nil, err
	}
	if p.Label == "" {
		p.Label = "manual snapshot"
	}
	sn, err := sess.TakeSnapshot(ctx, session.SnapshotOptions{Label: p.Label})
	if err != nil {
		return nil, err
	}
	return struct {
		ID      string                `json:"id"`
		Skipped []session.SkippedFile `json:"skipped,omitempty"`
	}{sn.ID, sn.Skipped}, nil
}

func (s *Server) snapshotDiff(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.SnapshotDiffParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if p.From == "" {
		return nil, badParam("from", "name the snapshot to compare from")
	}
	sess, err := s.snapshots()
	if err != nil {
		return nil, err
	}
	fds, err := sess.SnapshotDiff(ctx, p.From, p.To)
	if err != nil {
		return nil, err
	}
	files := []SnapshotFile{}
	for _, fd := range fds {
		op, path := "modify", fd.NewPath
		switch {
		case fd.OldPath == "":
			op = "create"
		case fd.NewPath == "":
			op, path = "delete", fd.OldPath
		case fd.OldPath != fd.NewPath:
			op = "move"
		}
		files = append(files, SnapshotFile{URI: s.uriOf(path), Op: string(op), Patch: diff.Unified(fd), Binary: fd.Binary})
	}
	return struct {
		Files []SnapshotFile `json:"files"`
	}{files}, nil
}

func (s *Server) snapshotRestore(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.SnapshotRestoreParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if p.ID == "" {
		return nil, badParam("id", "name the snapshot to restore")
	}
	ws, err := s.workspace()
	if err != nil {
		return nil, err
	}
	var paths []string
	for i, u := range p.URIs {
		rel, _, err := ws.Resolve(u)
		if err != nil {
			if errors.Is(err, workspace.ErrOutsideRoot) {
				return nil, err
			}
			return nil, badParam("uris["+itoa(i)+"]", "%v", err)
		}
		paths = append(paths, rel)
	}
	// The store protects what someone else changed (it picks the base).
	opts := session.RestoreOptions{Paths: paths, DryRun: p.DryRun, Overwrite: p.Overwrite}
	// The session records the restore, so that agentd/undo/restore (from
	// any front end) returns to before it.
	sess, err := s.session()
	if err != nil {
		return nil, err
	}
	res, err := sess.Restore(ctx, p.ID, opts)
	if err != nil {
		return nil, err
	}
	return s.restoreResult(res), nil
}

// restoreResult is res on the wire.
func (s *Server) restoreResult(res *session.RestoreResult) RestoreResult {
	out := RestoreResult{Restored: []string{}, Deleted: []string{}, Created: []string{}, Conflicts: []ResolveConflict{},
		LeftAlone: []ResolveConflict{}, UndoSnapshotID: res.UndoSnapshot, ProtectionBaseID: res.ProtectionBase, ResultSnapshotID: res.ResultSnapshot}
	for _, r := range res.Restored {
		out.Restored = append(out.Restored, s.uriOf(r))
	}
	for _, r := range res.Deleted {
		out.Deleted = append(out.Deleted, s.uriOf(r))
	}
	for _, r := range res.Created {
		out.Created = append(out.Created, s.uriOf(r))
	}
	for _, c := range res.Conflicts {
		out.Conflicts = append(out.Conflicts, ResolveConflict{URI: s.uriOf(c.Path), Message: c.Message})
	}
	for _, c := range res.LeftAlone {
		out.LeftAlone = append(out.LeftAlone, ResolveConflict{URI: s.uriOf(c.Path), Message: c.Message})
	}
	return out
}
