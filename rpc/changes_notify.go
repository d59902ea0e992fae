package rpc

import (
	"cmp"
	"slices"
	"sync"

	"github.com/agentd/agentd/engine"
)

// A changeProposed event reaches the editor only once its change set is
// registered for review and recorded in the journal, so agentd/changes/get
// always finds it, and so does another agentd process (agentd review). The engine
// announces the set before the review has it: in review "before" the
// reviewer registers it a moment later, in "after" only once it is written,
// and when the step asks for approval first, only after the answer. Until
// then the event waits here (the run's other events go on: an approval must
// not wait behind it). It goes out when the set is registered (changes.put),
// or, if it never is (the step was refused or failed first), before the
// event that ends its step.
//
// With clientFeatures.inlineChanges the event carries the set itself
// (RunEventParams.Change, without the files' patch), so the editor draws it
// without a round trip.

// heldProposal is a changeProposed event waiting for its change set.
type heldProposal struct {
	run *runEntry
	ev  engine.Event
}

type proposals struct {
	mu   sync.Mutex
	held map[string]heldProposal // by change id
}

func newProposals() *proposals { return &proposals{held: map[string]heldProposal{}} }

// proposeOrHold sends a changeProposed event at once when its change set is
// registered (or never will be: dry runs and review "none"), else holds it.
func (s *Server) proposeOrHold(e *runEntry, ev engine.Event) {
	if ev.ChangeID == "" || !e.reviewed {
		s.sendRunEvent(e, ev)
		return
	}
	s.proposals.mu.Lock()
	if !s.changes.isRecorded(ev.ChangeID) {
		s.proposals.held[ev.ChangeID] = heldProposal{run: e, ev: ev}
		s.proposals.mu.Unlock()
		return
	}
	s.proposals.mu.Unlock()
	s.sendRunEvent(e, ev)
}

// onChangeRegistered sends the changeProposed event held for a change set
// that has just been registered. Called by changes.put after the set is in
// the book.
func (s *Server) onChangeRegistered(c *changeRecord) {
	s.proposals.mu.Lock()
	h, ok := s.proposals.held[c.ID]
	delete(s.proposals.held, c.ID)
	s.proposals.mu.Unlock()
	if ok {
		s.sendRunEvent(h.run, h.ev)
	}
}

// releaseHeld sends, before ev, the events held for the step (or attempt)
// ev ends, or for every step when the run ends: their sets were not
// registered while the step ran, so they never will be.
func (s *Server) releaseHeld(e *runEntry, ev engine.Event) {
	switch ev.Type {
	case engine.EventStepFinished, engine.EventStepFailed, engine.EventStepSkipped, engine.EventStepBlocked,
		engine.EventStepCancelled, engine.EventStepRetrying, engine.EventRunFinished:
	default:
		return
	}
	var out []engine.Event
	s.proposals.mu.Lock()
	for id, h := range s.proposals.held {
		if h.run != e || h.ev.Seq > ev.Seq {
			continue
		}
		if ev.Type == engine.EventRunFinished || h.ev.StepID == ev.StepID {
			out = append(out, h.ev)
			delete(s.proposals.held, id)
		}
	}
	s.proposals.mu.Unlock()
	slices.SortFunc(out, func(a, b engine.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, h := range out {
		s.sendRunEvent(e, h)
	}
}

// inlineChange is the change set a changeProposed event carries for a
// client that asked for it (nil otherwise, or when the set is not
// registered).
func (s *Server) inlineChange(ev engine.Event) *ChangeSetInfo {
	if ev.Type != engine.EventChangeProposed || ev.ChangeID == "" || !s.capabilities().inlineChanges {
		return nil
	}
	c, ok := s.changes.Get(ev.ChangeID)
	if !ok {
		return nil
	}
	ci := ChangeSetInfo{ID: c.ID, RunID: c.RunID, StepID: c.StepID, Review: string(c.Review), Files: []FileInfo{}}
	s.changes.Read(func() {
		ci.Status, ci.Counts, ci.ReasonToModel = string(c.Status()), wireCounts(c.Counts()), c.ReasonToModel
		for _, fr := range c.Files {
			// Without the patch: it repeats the hunks' texts (half the bytes).
			ci.Files = append(ci.Files, s.fileInfoWith(c.Review, fr, true, false))
		}
	})
	return &ci
}
