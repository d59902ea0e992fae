package engine

// What the user and the plan do to a running run: pause, resume, stop,
// retry or skip a step, install a new plan version, take a decision.

import (
	"encoding/json"
	"fmt"
	"github.com/agentd/agentd/engine/plans"
	"time"
)

// reset makes a failed, skipped, blocked or cancelled step pending again.
func (s *sched) reset(n *node) {
	n.gen++
	n.tries = 0
	n.st.Error, n.st.Reason = "", ""
	n.st.EndedAt = nil
	if n.timer != nil && n.timer.Stop() {
		s.async--
	}
	n.timer = nil
	delete(s.outputs, n.step.ID)
	n.st.Output = nil
	if n.st.Status != StepPending {
		s.setStatus(n, StepPending)
		s.emit(Event{Type: EventStepProgress, StepID: n.step.ID, Status: string(StepPending), Reason: "retry"})
	}
}

func (s *sched) pause() {
	if s.stopping || s.paused {
		return
	}
	s.paused = true
	s.emit(Event{Type: EventRunPaused, Status: string(RunPaused)})
}

func (s *sched) resume() {
	if !s.paused {
		return
	}
	s.paused = false
	s.emit(Event{Type: EventRunResumed, Status: string(RunRunning)})
}

// stop ends the run: running steps' contexts are cancelled, steps not
// started are cancelled, and the loop ends once every worker is back.
func (s *sched) stop(status RunStatus, reason string) {
	if s.stopping {
		return
	}
	s.stopping = true
	s.status = status
	if s.errMsg == "" && status != RunCancelled {
		s.errMsg = reason
	} else if s.errMsg == "" && status == RunCancelled && reason != "cancelled" {
		s.errMsg = reason
	}
	s.cancelRun()
	for _, n := range s.nodes {
		switch n.st.Status {
		case StepPending, StepReady:
			s.cancelled(n, reason)
		case StepRetrying:
			if n.timer != nil && n.timer.Stop() {
				s.async--
				n.timer = nil
			}
			s.cancelled(n, reason)
		}
	}
}

func (s *sched) retryStep(id string, args json.RawMessage) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("retry step %q: no such step in plan version %d", id, s.plan.Version)
	}
	if s.stopping {
		return fmt.Errorf("retry step %q: the run is stopping", id)
	}
	switch n.st.Status {
	case StepFailed, StepSkipped, StepCancelled:
	case StepBlocked:
		for _, d := range n.deps {
			if d.st.Status != StepCompleted && isDone(d.st.Status) {
				return fmt.Errorf("retry step %q: it is blocked because %q %s; retry that step first", id, d.step.ID, statusVerb(d.st.Status))
			}
		}
	default:
		return fmt.Errorf("retry step %q: it is %s; only failed, blocked or skipped steps can be retried", id, n.st.Status)
	}
	if len(args) > 0 {
		p := s.plan.Clone()
		i := stepIndex(p, id)
		if i < 0 {
			return fmt.Errorf("retry step %q: not in the plan", id)
		}
		st := p.Steps[i].Clone()
		st.Args = append(json.RawMessage(nil), args...)
		p.Steps[i] = st
		if probs := plans.ValidatePlan(p, s.cfg.Tools, s.cfg.MaxSteps); len(probs) > 0 {
			return fmt.Errorf("retry step %q with new args: %w", id, &plans.ValidationError{Problems: probs})
		}
		s.reset(n)
		s.setPlan(p, plans.PlanUpdate{Source: "user", Reason: "retry with new args", Action: "update", StepIDs: []string{id}})
		return nil
	}
	s.reset(n)
	s.rebuild()
	return nil
}

func (s *sched) skipByUser(id string) error {
	n := s.byID[id]
	if n == nil {
		return fmt.Errorf("skip step %q: no such step in plan version %d", id, s.plan.Version)
	}
	if n.st.Status != StepPending && n.st.Status != StepReady {
		return fmt.Errorf("skip step %q: it is %s; only steps that have not started can be skipped", id, n.st.Status)
	}
	s.skip(n, "skipped by the user")
	return nil
}

// setPlan installs a new plan version (p is a fresh clone owned by the
// scheduler) and announces it.
func (s *sched) setPlan(p *plans.Plan, upd plans.PlanUpdate) {
	p.Version = s.plan.Version + 1
	upd.Version = p.Version
	upd.Time = time.Now()
	p.History = append(p.History, upd)
	s.plan = p
	s.rebuild()
	s.emit(Event{Type: EventPlanUpdated, PlanVersion: p.Version, Reason: upd.Reason,
		StepID: firstOr(upd.StepIDs)})
}

func firstOr(ids []string) string {
	if len(ids) > 0 {
		return ids[0]
	}
	return ""
}

// decide runs a decision step: the first branch whose condition holds is
// taken and the steps of the other branches are skipped.
func (s *sched) decide(n *node) {
	chosen := -1
	for i, b := range n.step.Branches {
		if b.When == "" {
			chosen = i
			break
		}
		ok, err := plans.EvalCondition(b.When, s.outputs)
		if err != nil {
			s.fail(n, fmt.Errorf("step %q: branch %d: evaluating %q: %w", n.step.ID, i, b.When, err))
			return
		}
		if ok {
			chosen = i
			break
		}
	}
	keep := map[string]bool{}
	var taken []string
	if chosen >= 0 {
		taken = n.step.Branches[chosen].Steps
		for _, id := range taken {
			keep[id] = true
		}
	}
	for i, b := range n.step.Branches {
		if i == chosen {
			continue
		}
		for _, id := range b.Steps {
			if m := s.byID[id]; m != nil && !keep[id] && (m.st.Status == StepPending || m.st.Status == StepReady) {
				s.skip(m, fmt.Sprintf("not chosen by decision %q", n.step.ID))
			}
		}
	}
	out, _ := json.Marshal(map[string]any{"branch": chosen, "steps": nonNil(taken)})
	s.complete(n, out, false, "")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
