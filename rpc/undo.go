package rpc

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/session"
)

// Undo is the daemon's (package session), with one meaning in every front
// end, recorded in the workspace's journal: undo the last run (stepping
// back one run per call) and undo the last restore.
func undoMethods() map[string]method {
	return map[string]method{
		"agentd/undo/run":     {call: (*Server).undoRun, async: true},
		"agentd/undo/restore": {call: (*Server).undoRestore, async: true},
	}
}

// session is the workspace's session, or the reason there is none.
func (s *Server) session() (*session.Session, error) {
	if _, err := s.workspace(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess == nil {
		return nil, errors.New("no workspace folder is open")
	}
	return s.sess, nil
}

type undoParams struct {
	Overwrite bool `json:"overwrite"`
	DryRun    bool `json:"dryRun"`
}

// UndoRunResult is agentd/undo/run's result.
type UndoRunResult struct {
	RunID      string        `json:"runId"`
	SnapshotID string        `json:"snapshotId"`
	Restore    RestoreResult `json:"restore"`
	// Leftovers is what the undo could not take back, worded by the
	// session (omitted when there is nothing).
	Leftovers *session.Leftovers `json:"leftovers,omitempty"`
}

func (s *Server) undoRun(ctx context.Context, params json.RawMessage) (any, error) {
	var p undoParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.session()
	if err != nil {
		return nil, err
	}
	res, err := sess.UndoRun(ctx, "", gitops.RestoreOptions{Overwrite: p.Overwrite, DryRun: p.DryRun})
	if err != nil {
		return nil, err
	}
	s.readRecordedRuns() // the run lists show it undone
	return UndoRunResult{RunID: res.RunID, SnapshotID: res.SnapshotID, Restore: s.restoreResult(res.Restore), Leftovers: res.Leftovers}, nil
}

func (s *Server) undoRestore(ctx context.Context, params json.RawMessage) (any, error) {
	var p undoParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.session()
	if err != nil {
		return nil, err
	}
	res, err := sess.UndoRestore(ctx, gitops.RestoreOptions{Overwrite: p.Overwrite, DryRun: p.DryRun})
	if err != nil {
		return nil, err
	}
	if res.Undid.RunID != "" {
		s.readRecordedRuns()
	}
	return s.restoreResult(res.Restore), nil
}
