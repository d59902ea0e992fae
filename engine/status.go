package engine

import (
	"fmt"
	"strings"

	"github.com/agentd/agentd/workspace"
)

// What a step's status says about its change sets: the one rule every
// front end shows (the terminal, the editor server, ACP).
//
//   - A change set rejected in full (every hunk, or its approval denied):
//     the step did not do its work. A tool step is skipped with the
//     reason ("change rejected: <the user's reason>"); an agent step whose
//     change sets were all rejected, with nothing applied, too. The run
//     then ends partial (exit 3), never completed.
//   - A change set partly applied: the step completes with the note
//     "change partly applied: N of M hunk(s) rejected" (over all the
//     step's reviewed change sets).
//   - A change set that hit a conflict on accept (the file changed since
//     the change was computed): the step fails, so dependants are blocked
//     and an interactive front end asks what to do (retry computes the
//     change again); an agent step's model is told and may try again, and
//     the step fails if it ends with nothing applied.
//   - A model is told exactly which hunks were rejected, with the user's
//     reasons, and whether that was all of the change or part of it.

// recordReview counts a reviewed change set's decisions. The caller holds
// w.mu.
func (w *worker) recordReview(cs *workspace.ChangeSet, oc *ReviewOutcome) {
	r := w.res
	switch {
	case len(oc.Applied) == 0 && len(oc.Rejected) > 0 && len(oc.Conflicts) == 0:
		r.rejectedIDs = append(r.rejectedIDs, cs.ID)
		if r.rejectReason == "" {
			r.rejectReason = oc.Rejected[0].Reason
		}
	case len(oc.Applied) > 0 && len(oc.Rejected) > 0:
		r.partlyIDs = append(r.partlyIDs, cs.ID)
	}
	if len(oc.Conflicts) > 0 {
		r.conflictIDs = append(r.conflictIDs, cs.ID)
	}
	r.hunksApplied += len(oc.Applied)
	r.hunksRejected += len(oc.Rejected)
	if r.hunksApplied > 0 && r.hunksRejected > 0 {
		r.partlyNote = fmt.Sprintf("change partly applied: %d of %d hunk(s) rejected", r.hunksRejected, r.hunksApplied+r.hunksRejected)
	}
}

// conflictError is the step's error when a change set hit a conflict on
// accept.
func conflictError(stepID, changeID string, paths []string) error {
	return fmt.Errorf("step %q: change %s not applied to %s: the file changed since the change was computed (a conflict on accept); retry the step to compute the change again",
		stepID, changeID, strings.Join(paths, ", "))
}

// rejectionNote says, for the model, how much of a change set the user
// rejected.
func rejectionNote(applied, rejected int) string {
	if rejected == 0 {
		return ""
	}
	if applied == 0 {
		return fmt.Sprintf("The user REJECTED all of this change (%d hunk(s)); nothing of it was applied.", rejected)
	}
	return fmt.Sprintf("The user REJECTED %d of the %d hunk(s) of this change; the others were applied.", rejected, applied+rejected)
}

// agentOutcome decides an agent step's status from its change sets once
// the model is done (the rule above). The caller holds w.mu.
func (w *worker) agentOutcome() error {
	r := w.res
	if r.applied {
		return nil
	}
	if len(r.conflictIDs) > 0 {
		return fmt.Errorf("step %q: its change %s hit a conflict on accept (a file changed since the change was computed) and nothing was applied; retry the step",
			w.j.step.ID, strings.Join(r.conflictIDs, ", "))
	}
	if len(r.rejectedIDs) > 0 && !r.dry {
		r.skipped = RejectedReason
		if why := w.firstRejectReason(); why != "" {
			r.skipped += ": " + why
		}
		r.declined = true
	}
	return nil
}

// firstRejectReason is the user's reason for the step's first rejected
// change set, if any. The caller holds w.mu.
func (w *worker) firstRejectReason() string {
	return w.res.rejectReason
}
