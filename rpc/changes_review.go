package rpc

import (
	"context"
	"fmt"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/workspace"
)

// onUserEdit rebases the pending hunks of every change set that touches
// rel onto the buffer the user just edited, or marks them stale, and tells
// the editor. Runs once the user's typing pauses or before the next other
// message (typing.go), with edits the user's edits since the last rebase;
// the notice carries the buffer version the rebase saw.
func (s *Server) onUserEdit(uri, rel string, edits []workspace.TextEdit) {
	b, ok := s.buffer(uri)
	if !ok {
		return
	}
	version := b.Version
	sets := s.changes.List()
	var before map[string][]hunkSpan
	s.changes.Read(func() { before = openSpans(sets, b.Path) })
	changed := s.changes.Rebase(b.Path, b.Text)
	var notes []*ChangesDidChangeParams
	s.changes.Read(func() {
		for _, c := range changed {
			if s.onlyFollowed(c, b.Path, before, edits) {
				notes = append(notes, nil) // the editor moved the hunks itself
				continue
			}
			n := &ChangesDidChangeParams{ChangeID: c.ID, Status: string(c.Status()), Counts: wireCounts(c.Counts()), Version: &version}
			for _, fr := range c.Files {
				if fr.Path == b.Path {
					n.Files = append(n.Files, s.fileInfo(c.Review, fr, true))
				}
			}
			notes = append(notes, n)
		}
	})
	for i := range changed {
		if notes[i] != nil {
			s.notify("agentd/changes/didChange", notes[i])
		}
	}
}

// keepChanges makes the review book record every change set and decision
// in the workspace's journal (the book does it, for every front end), and
// loads the sets a previous daemon or agentd run recorded. A record that
// cannot be saved does not undo the decision (it already happened: hunks
// are on disk or in the buffer): the user is told, with the file, that a
// restarted daemon will not remember this review.
func (s *Server) keepChanges() {
	j := s.persist.journal()
	if j == nil {
		return
	}
	s.changes.Keep(j.Journal, func(id string, err error) {
		s.log.Error("saving change set", "change", id, "error", err)
		s.notify("window/showMessage", map[string]any{
			"type": 2, // warning
			"message": fmt.Sprintf("agentd: the review of change %s could not be saved (%v). It holds until the daemon stops; "+
				"free space or fix the permissions of the state dir so a restarted daemon remembers it.", id, err),
		})
	})
	s.changes.OnSync(s.onChangesSynced)
	s.loadChanges()
	// The interval is read here, in the request that opens the session,
	// not in the goroutine: a test that sets it for its own server and
	// puts it back must not race a watcher that has not started yet.
	go s.watchChanges(ChangesSyncInterval) // decisions other processes record (changes_sync.go)
}

// loadChanges adds the change sets recorded in the journal since the
// server last looked (by a previous daemon, or by agentd run while this
// one runs).
func (s *Server) loadChanges() {
	if _, err := s.changes.Load(); err != nil {
		s.log.Error("reading saved change sets failed", "error", err)
	}
}

// reviewer implements engine.Reviewer for the editor.
type reviewer Server

func (r *reviewer) ReviewBefore(ctx context.Context, cs *workspace.ChangeSet) (*engine.ReviewOutcome, error) {
	s := (*Server)(r)
	if cs == nil || len(cs.Files) == 0 {
		return &engine.ReviewOutcome{Applied: []string{}}, nil
	}
	s.supersede(ctx, cs)
	c := review.New(cs, engine.ReviewBefore)
	c.ReasonToModel = s.reasonToModel(cs)
	s.changes.put(c) // recorded in the journal by the book
	// The set stays pending in the state dir when ctx ends: the user can
	// still resolve it later.
	return s.changes.Wait(ctx, c)
}

// supersededReason is the rejection reason of a stale set its step's new
// proposal replaces.
const supersededReason = "superseded: the step proposed its change again"

// supersede rejects the sets of the same run and step that are stale as a
// whole when the step proposes again (a Retry after its change met a
// conflict on accept): nothing of them was written (review before), and
// the new set is computed on the files as they are now, so left open they
// are dead hunks beside the new ones that no accept can take (issue 38
// point 12). The editor is told each one's new state.
func (s *Server) supersede(ctx context.Context, cs *workspace.ChangeSet) {
	var old []*changeRecord
	recs := s.changes.List()
	s.changes.Read(func() {
		for _, c := range recs {
			if c.ID != cs.ID && c.RunID == cs.RunID && c.StepID == cs.StepID && c.Review == engine.ReviewBefore && c.Status() == review.Stale {
				old = append(old, c)
			}
		}
	})
	for _, c := range old {
		rctx, files, err := s.reviewFiles(ctx, c)
		if err == nil {
			_, err = s.changes.Resolve(rctx, files, c, []review.Decision{{Action: review.Reject}}, supersededReason)
		}
		if err != nil {
			s.log.Warn("could not set aside the stale change set of an earlier attempt", "change", c.ID, "step", c.StepID, "error", err)
			continue
		}
		var n *ChangesDidChangeParams
		s.changes.Read(func() {
			n = &ChangesDidChangeParams{ChangeID: c.ID, Status: string(c.Status()), Counts: wireCounts(c.Counts()), Files: []FileInfo{}}
			for _, fr := range c.Files {
				n.Files = append(n.Files, s.fileInfo(c.Review, fr, true))
			}
		})
		s.notify("agentd/changes/didChange", n)
	}
}

func (r *reviewer) OfferAfter(ctx context.Context, cs *workspace.ChangeSet) error {
	s := (*Server)(r)
	if cs == nil || len(cs.Files) == 0 {
		return nil
	}
	c := review.New(cs, engine.ReviewAfter)
	c.ReasonToModel = s.reasonToModel(cs)
	s.changes.put(c) // recorded in the journal by the book
	return nil
}

// reasonToModel says whether a rejection reason of cs reaches a model:
// the step that proposed it is a model step (plans.Plan.ReasonToModel).
func (s *Server) reasonToModel(cs *workspace.ChangeSet) bool {
	e := s.runs.get(cs.RunID)
	if e == nil {
		return false
	}
	e.mu.Lock()
	run, planID := e.run, e.planID
	e.mu.Unlock()
	if run != nil {
		return run.Plan().ReasonToModel(cs.StepID)
	}
	// The first review can come before Start has returned the run.
	pl, err := s.plans.get(planID)
	return err == nil && pl.ReasonToModel(cs.StepID)
}
