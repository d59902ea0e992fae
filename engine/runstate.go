package engine

// The run's state as others see it (copies), its events, and the end of
// the run (final status, rollback).

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agentd/agentd/gitops"
)

func (s *sched) copyOutputs() map[string]json.RawMessage {
	m := make(map[string]json.RawMessage, len(s.outputs))
	for k, v := range s.outputs {
		m[k] = v
	}
	return m
}

func (s *sched) runStatus() RunStatus {
	switch {
	case s.finished:
		return s.status
	case s.paused:
		return RunPaused
	}
	return RunRunning
}

// compactState is the run state without Steps.
func (s *sched) compactState() RunState {
	// The plan's steps, not s.nodes: runStarted is emitted before the first
	// rebuild and must already show the totals.
	total := len(s.plan.Steps)
	done := s.counts[StepCompleted] + s.counts[StepFailed] + s.counts[StepSkipped] +
		s.counts[StepBlocked] + s.counts[StepCancelled]
	st := RunState{
		RunID:            s.r.id,
		PlanID:           s.plan.ID,
		PlanVersion:      s.plan.Version,
		Status:           s.runStatus(),
		CompletedSteps:   s.counts[StepCompleted],
		FailedSteps:      s.counts[StepFailed],
		SkippedSteps:     s.counts[StepSkipped],
		BlockedSteps:     s.counts[StepBlocked],
		TotalSteps:       total,
		CurrentSteps:     s.currentIDs(),
		StartTime:        s.timing.start,
		ElapsedMs:        time.Since(s.timing.start).Milliseconds(),
		LLMCalls:         s.llmCalls + s.budget.Calls(), // steps' and the planner's
		ToolCalls:        s.toolCalls,
		RePlans:          s.replan.done,
		RePlanIterations: s.replan.done,
		Snapshots:        s.r.snapshots(),
		SnapshotLabels:   s.r.snapshotLabels(),
		SkippedFiles:     s.r.skippedFiles(),
		Error:            s.errMsg,
	}
	st.Tokens, st.CostUSD = s.budget.Used()
	st.Planning = s.opts.Planning
	st.DryRun = s.opts.DryRun
	if total > 0 {
		st.Progress = float64(done) / float64(total)
	} else {
		st.Progress = 1
	}
	if s.timing.durN > 0 && total > done {
		// The remaining steps at the mean step time, divided by the
		// parallelism seen so far: the step time finished per unit of time
		// until the last step ended (1 for a chain, up to maxParallel).
		par := 1.0
		if span := s.timing.lastEnd.Sub(s.timing.start); span > 0 {
			par = float64(s.timing.durSum) / float64(span)
		}
		par = min(max(par, 1), float64(s.maxParallel))
		mean := float64(s.timing.durSum) / float64(s.timing.durN)
		eta := time.Duration(mean * float64(total-done) / par).Milliseconds()
		st.EtaMs = &eta
	}
	return st
}

func (s *sched) currentIDs() []string {
	ns := make([]*node, 0, len(s.current))
	for n := range s.current {
		ns = append(ns, n)
	}
	slices.SortFunc(ns, func(a, b *node) int { return a.idx - b.idx })
	ids := make([]string, len(ns))
	for i, n := range ns {
		ids[i] = n.step.ID
	}
	return ids
}

// fullState is the run state with a copy of every step's state.
func (s *sched) fullState() RunState {
	st := s.compactState()
	st.Steps = make([]StepState, len(s.nodes))
	for i, n := range s.nodes {
		ss := n.st
		ss.ChangeIDs = slices.Clone(n.st.ChangeIDs)
		ss.RejectedChangeIDs = slices.Clone(n.st.RejectedChangeIDs)
		ss.PartlyRejectedChangeIDs = slices.Clone(n.st.PartlyRejectedChangeIDs)
		ss.UnappliedChangeIDs = slices.Clone(n.st.UnappliedChangeIDs)
		st.Steps[i] = ss
	}
	st.Rollback = s.rollback
	st.FilesChanged = slices.Clone(s.files)
	return st
}

// emit publishes ev with the compact state, if anyone listens.
func (s *sched) emit(ev Event) {
	if !s.r.ev.active() {
		return
	}
	ev.RunID = s.r.id
	ev.Time = time.Now()
	st := s.compactState()
	ev.State = &st
	s.r.ev.publish(ev)
}

// finish settles the run's status, rolls back if asked, and publishes the
// final state.
func (s *sched) finish() {
	for _, n := range s.nodes {
		if n.st.Status == StepPending || n.st.Status == StepReady {
			if s.stopping {
				s.cancelled(n, "the run was stopped")
			} else {
				s.block(n, "its dependencies can never complete")
			}
		}
	}
	if s.status == "" {
		if s.counts[StepFailed] > 0 || s.skippedFailures > 0 || s.declinedSteps() > 0 {
			s.status = RunPartial
		} else {
			s.status = RunCompleted
		}
	}
	s.cancelRun()
	s.wg.Wait()
	if s.status == RunFailed && s.opts.RollbackOnFailure && s.cfg.Snapshots != nil {
		s.doRollback()
	}
	s.finished = true
	final := s.fullState()
	final.Status = s.status
	final.OriginalPlan = s.original
	final.FinalPlan = s.plan.Clone()
	final.Summary = Summary(final.FinalPlan, final)
	if s.journal != nil {
		// Recorded before anyone hears that the run ended.
		if err := s.journal.save(final, true); err != nil {
			s.log.Error("the run's final state could not be recorded", "err", err)
			msg := "the run's journal could not be saved: " + err.Error()
			if final.Error != "" {
				msg = final.Error + "; " + msg
			}
			final.Error, s.errMsg = msg, msg
		}
	}
	s.emit(Event{Type: EventRunFinished, Status: string(s.status), Error: s.errMsg})
	s.r.final = final
	s.r.finalPlan = s.plan
	s.r.ev.close()
	close(s.r.done)
}

// doRollback takes the failed run's work back: by reverting the run's
// ledger (revertRun) when the engine has one, else by restoring the run's
// start snapshot.
func (s *sched) doRollback() {
	ctx := context.WithoutCancel(s.baseCtx)
	if info, ok := s.revertRun(ctx); ok {
		s.rollback = info
		return
	}
	snaps := s.r.snapshots()
	if len(snaps) == 0 {
		return
	}
	info, err := s.cfg.Snapshots.Restore(ctx, RestoreRequest{SnapshotID: snaps[0]})
	if info == nil {
		info = &RestoreInfo{SnapshotID: snaps[0]}
	}
	if info.SnapshotID == "" {
		info.SnapshotID = snaps[0]
	}
	if err != nil {
		info.Error = fmt.Sprintf("rolling back to %s: %v", snaps[0], err)
		s.log.Error("rollback failed", "snapshot", snaps[0], "err", err)
	}
	s.rollback = info
}

// RollbackOwner is the ledger owner of what the rollback of run runID
// wrote (so that the rollback can itself be undone).
func RollbackOwner(runID string) string { return "undo/rollback-" + runID }

// revertRun reverts the run's edits as undo does (gitops.Store.Revert: a
// three-way merge per file, so an edit the user made during the run
// stays), keeping the files whose lines the user changed as they are and
// naming them with the command that overwrites them. ok is false when
// there is no ledger to revert.
func (s *sched) revertRun(ctx context.Context) (*RestoreInfo, bool) {
	if s.recorder() == nil {
		return nil, false
	}
	res, err := s.cfg.Ledger.Revert(ctx, []string{RunOwner(s.r.id)},
		gitops.RevertOptions{OnConflict: gitops.KeepConflicts, RecordAs: RollbackOwner(s.r.id)})
	info := &RestoreInfo{Reverted: true}
	if snaps := s.r.snapshots(); len(snaps) > 0 {
		info.SnapshotID = snaps[0]
	}
	if res != nil {
		info.Restored = append(append(append(info.Restored, res.Reverted...), res.Created...), res.Deleted...)
		info.Restored = append(info.Restored, res.Overwritten...)
		for _, c := range res.Conflicts {
			info.Conflicts = append(info.Conflicts, c.Path)
			info.Kept = append(info.Kept, KeptFile{Path: c.Path, Reason: c.Reason})
		}
		for _, c := range res.LeftAlone {
			info.Conflicts = append(info.Conflicts, c.Path)
			info.Kept = append(info.Kept, KeptFile{Path: c.Path, Reason: c.Message})
		}
		info.RecordedAs = res.RecordedAs
	}
	if len(info.Kept) > 0 {
		info.Overwrite = fmt.Sprintf("agentd undo %s --overwrite", s.r.id)
	}
	if err != nil {
		info.Error = fmt.Sprintf("reverting the run's changes: %v", err)
		s.log.Error("rollback failed", "run", s.r.id, "err", err)
	}
	return info, true
}

// declinedSteps counts the steps that end skipped because the user (or the
// approval policy) said no: a rejected change set, a denied approval or no
// answer. Any of them makes the run partial: the plan's work was not done.
func (s *sched) declinedSteps() int {
	n := 0
	for _, nd := range s.nodes {
		if nd.declined && nd.st.Status == StepSkipped {
			n++
		}
	}
	return n
}
