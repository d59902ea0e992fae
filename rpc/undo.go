package rpc

import (
	"context"
	"encoding/json"
	"errors"

	wire "github.com/agentd/agentd/protocol"
	"github.com/agentd/agentd/session"
)

// Undo is the daemon's (package session), with one meaning in every front
// end, recorded in the workspace's journal: undo a run (the last one,
// stepping back one run per call, or a named one alone) and undo a
// restore or an undo. Undo is a revert: what the agent wrote is taken
// back on top of what the files hold now; a conflict changes nothing
// until the client chooses (onConflict).
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

// undoOptions reads the choices agentd/undo/run and agentd/undo/restore
// share: onConflict is "", "keep" or "overwrite"; overwrite (older
// clients) means "overwrite".
func undoOptions(onConflict string, overwrite, dryRun bool) (session.UndoOptions, error) {
	o := session.UndoOptions{DryRun: dryRun, OnConflict: session.ConflictChoice(onConflict)}
	switch o.OnConflict {
	case session.RefuseOnConflict, session.KeepConflicts, session.OverwriteConflicts:
	default:
		return o, badParam("onConflict", `%q is not a choice: use "" (change nothing on a conflict), "keep" or "overwrite"`, onConflict)
	}
	if overwrite {
		if o.OnConflict == session.KeepConflicts {
			return o, badParam("overwrite", `overwrite: true contradicts onConflict: "keep"; send one of them`)
		}
		o.OnConflict = session.OverwriteConflicts
	}
	return o, nil
}

func (s *Server) undoRun(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.UndoRunParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	opts, err := undoOptions(p.OnConflict, p.Overwrite, p.DryRun)
	if err != nil {
		return nil, err
	}
	sess, err := s.session()
	if err != nil {
		return nil, err
	}
	res, err := sess.UndoRun(ctx, p.RunID, opts)
	if err != nil {
		return nil, err
	}
	s.readRecordedRuns() // the run lists show it undone
	u, rr := s.undoResult(&res.UndoResult)
	return UndoRunResult{RunID: res.RunID, SnapshotID: res.SnapshotID, UndoResult: u, Created: rr.Created, Deleted: rr.Deleted,
		Restore: rr, Leftovers: wireLeftovers(res.Leftovers)}, nil
}

func (s *Server) undoRestore(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.UndoRestoreParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	opts, err := undoOptions(p.OnConflict, p.Overwrite, p.DryRun)
	if err != nil {
		return nil, err
	}
	sess, err := s.session()
	if err != nil {
		return nil, err
	}
	res, err := sess.UndoRestore(ctx, p.ID, opts)
	if err != nil {
		return nil, err
	}
	if res.Undid.RunID != "" {
		s.readRecordedRuns()
	}
	u, rr := s.undoResult(&res.UndoResult)
	if res.Applied && !res.DryRun {
		// Its way back: the run undone again, or the snapshot restored
		// again.
		if res.Undid.RunID != "" {
			u.WayBack = &WayBack{Method: "agentd/undo/run", Params: map[string]any{"runId": res.Undid.RunID}}
		} else if res.Undid.SnapshotID != "" {
			u.WayBack = &WayBack{Method: "agentd/snapshot/restore", Params: map[string]any{"id": res.Undid.SnapshotID}}
		}
	}
	return UndoRestoreResult{Restored: rr.Restored, Created: rr.Created, Deleted: rr.Deleted, UndoResult: u,
		UndoSnapshotID: rr.UndoSnapshotID, ResultSnapshotID: rr.ResultSnapshotID, Undid: res.Undid.ID}, nil
}

// undoResult is res on the wire: the undo's fields and the same in a
// restore's shape.
func (s *Server) undoResult(res *session.UndoResult) (UndoResult, RestoreResult) {
	uris := func(l []string) []string {
		out := []string{}
		for _, p := range l {
			out = append(out, s.uriOf(p))
		}
		return out
	}
	u := UndoResult{Applied: res.Applied, DryRun: res.DryRun, UndoID: res.UndoID, Reverted: uris(res.Reverted), Conflicts: []UndoConflict{},
		Overwritten: uris(res.Overwritten), LeftAlone: []ResolveConflict{}, Kept: uris(res.Kept), BySnapshot: res.BySnapshot}
	rr := RestoreResult{Restored: uris(res.Reverted), Created: uris(res.Created), Deleted: uris(res.Deleted), Conflicts: []ResolveConflict{},
		LeftAlone: []ResolveConflict{}, UndoSnapshotID: res.UndoSnapshot}
	if res.Restore != nil {
		rr = s.restoreResult(res.Restore)
	}
	for _, c := range res.Conflicts {
		u.Conflicts = append(u.Conflicts, UndoConflict{URI: s.uriOf(c.Path), Path: c.Path, Reason: c.Reason, Message: c.Reason, Owners: c.Owners, Diff: c.Diff})
		if res.Restore == nil {
			rr.Conflicts = append(rr.Conflicts, ResolveConflict{URI: s.uriOf(c.Path), Message: c.Reason})
		}
	}
	for _, c := range res.LeftAlone {
		u.LeftAlone = append(u.LeftAlone, ResolveConflict{URI: s.uriOf(c.Path), Message: c.Message})
		if res.Restore == nil {
			rr.LeftAlone = append(rr.LeftAlone, ResolveConflict{URI: s.uriOf(c.Path), Message: c.Message})
		}
	}
	for _, d := range res.Diffs {
		u.Diffs = append(u.Diffs, wire.UndoDiff{URI: s.uriOf(d.Path), Path: d.Path, Diff: d.Diff})
	}
	if res.UndoID != "" {
		u.WayBack = &WayBack{Method: "agentd/undo/restore", Params: map[string]any{"id": res.UndoID}}
	}
	return u, rr
}
