package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
)

// recoverOrAsk handles a failed critical step: the planner first (bounded
// per step), then the FailureHandler (headless: abort). New steps do not
// start while either is deciding; running ones go on.
func (s *sched) recoverOrAsk(n *node, err error) {
	if n.recoveries < MaxRecoveriesPerStep && s.ruleRecovery(n) {
		return
	}
	// A dry run makes no model call: no planner recovery either.
	if s.cfg.Planner != nil && n.recoveries < MaxRecoveriesPerStep && !s.opts.DryRun {
		n.recoveries++
		req := RecoveryRequest{
			Plan: s.plan.Clone(), StepID: n.step.ID, Error: tools.ModelText(err), // the planner is a model: tell it the hint
			Completed: s.copyOutputs(), Budget: s.budget,
		}
		s.holds++
		s.async++
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			var dec *RecoveryDecision
			perr := guard("planner", func() (err error) {
				dec, err = s.cfg.Planner.Recover(s.ctx, req)
				return err
			})
			s.post(func(s *sched) { s.recovered(n, err, dec, perr) })
		}()
		return
	}
	s.askUser(n, err)
}

func (s *sched) recovered(n *node, stepErr error, dec *RecoveryDecision, err error) {
	s.holds--
	s.async--
	if s.stopping || n.st.Status != StepFailed {
		return
	}
	if err != nil || dec == nil {
		if err == nil {
			err = fmt.Errorf("no decision")
		}
		s.log.Warn("planner could not recover the step", "step", n.step.ID, "err", err)
		s.askUser(n, stepErr)
		return
	}
	if err := s.applyRecovery(n, dec); err != nil {
		s.log.Warn("recovery decision rejected", "step", n.step.ID, "action", dec.Action, "err", err)
		s.askUser(n, fmt.Errorf("%w (recovery %s rejected: %v)", stepErr, dec.Action, err))
	}
}

// applyRecovery validates the decision as a plan edit and installs it.
func (s *sched) applyRecovery(n *node, dec *RecoveryDecision) error {
	return s.applyRecoveryFrom("recovery", n, dec)
}

func (s *sched) applyRecoveryFrom(source string, n *node, dec *RecoveryDecision) error {
	id := n.step.ID
	upd := plans.PlanUpdate{Source: source, Reason: dec.Reason, Action: dec.Action}
	if upd.Reason == "" {
		upd.Reason = dec.Action + " after step " + id + " failed"
	}
	p := s.plan.Clone()
	switch dec.Action {
	case RecoverFailGracefully:
		reason := dec.Reason
		if reason == "" {
			reason = "the planner gave up"
		}
		s.errMsg = fmt.Sprintf("step %q failed: %s; recovery: %s", id, n.st.Error, reason)
		s.stop(RunFailed, s.errMsg)
		return nil
	case RecoverRetryWithChanges:
		if dec.Step == nil {
			return fmt.Errorf("retry_with_changes without a step")
		}
		st := dec.Step.Clone()
		if st.ID == "" {
			st.ID = id
		}
		if st.ID != id {
			return fmt.Errorf("retry_with_changes changes step %q, not the failed step %q", st.ID, id)
		}
		i := stepIndex(p, id)
		if i < 0 {
			return fmt.Errorf("step %q is no longer in the plan", id)
		}
		p.Steps[i] = st
		upd.StepIDs = []string{id}
	case RecoverInsertSteps:
		if len(dec.Steps) == 0 {
			return fmt.Errorf("insert_recovery_steps without steps")
		}
		i := stepIndex(p, id)
		if i < 0 {
			return fmt.Errorf("step %q is no longer in the plan", id)
		}
		var ids []string
		var ins []*plans.Step
		for _, st := range dec.Steps {
			c := st.Clone()
			ins = append(ins, c)
			ids = append(ids, c.ID)
		}
		failed := p.Steps[i].Clone()
		failed.DependsOn = appendNew(failed.DependsOn, ids...)
		p.Steps = slices.Concat(p.Steps[:i:i], ins, []*plans.Step{failed}, p.Steps[i+1:])
		upd.StepIDs = ids
	case RecoverRedesign:
		var keep []*plans.Step
		for _, st := range p.Steps {
			m := s.byID[st.ID]
			if m != nil && (m.st.Status == StepPending || m.st.Status == StepReady ||
				m.st.Status == StepBlocked || m.st.Status == StepCancelled) {
				continue
			}
			keep = append(keep, st)
		}
		var ids []string
		for _, st := range dec.Steps {
			c := st.Clone()
			keep = append(keep, c)
			ids = append(ids, c.ID)
		}
		p.Steps = keep
		upd.StepIDs = ids
	default:
		return fmt.Errorf("unknown recovery action %q", dec.Action)
	}
	if probs := plans.ValidatePlan(p, s.cfg.Tools, s.cfg.MaxSteps); len(probs) > 0 {
		return &plans.ValidationError{Problems: probs}
	}
	switch dec.Action {
	case RecoverRetryWithChanges, RecoverInsertSteps:
		s.reset(n)
	case RecoverRedesign:
		// The failed step stays in the record, replaced by the new steps.
		n.st.Reason = "replaced by recovery: " + upd.Reason
		s.setStatus(n, StepSkipped)
		s.emit(Event{Type: EventStepSkipped, StepID: id, Reason: n.st.Reason, Status: string(StepSkipped)})
	}
	s.setPlan(p, upd)
	return nil
}

// ruleRecovery lets a RecoveryRule repair a failed critical step.
func (s *sched) ruleRecovery(n *node) bool {
	for _, rule := range s.cfg.Rules {
		rr, ok := rule.(RecoveryRule)
		if !ok {
			continue
		}
		var add []*plans.Step
		var reason string
		if err := guard("rule "+rule.Name(), func() error {
			add, reason = rr.Recover(s.plan, n.step, n.st)
			return nil
		}); err != nil || len(add) == 0 {
			continue
		}
		n.recoveries++
		dec := &RecoveryDecision{Action: RecoverInsertSteps, Reason: rule.Name() + ": " + reason, Steps: add}
		if err := s.applyRecoveryFrom("rule", n, dec); err != nil {
			s.log.Warn("recovery rule produced an invalid plan; ignored", "rule", rule.Name(), "step", n.step.ID, "err", err)
			continue
		}
		return true
	}
	return false
}

// askUser asks the FailureHandler (headless: abort) what to do.
func (s *sched) askUser(n *node, err error) {
	if _, headless := s.cfg.OnFailure.(abortOnFailure); headless || s.opts.DryRun {
		// A dry run never asks: a failure it could try is a real one.
		s.abort(n, err)
		return
	}
	s.holds++
	s.async++
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		var act FailureAction
		herr := guard("failure handler", func() (e error) {
			act, e = s.cfg.OnFailure.OnFailure(s.ctx, s.r.id, n.step.ID, err)
			return e
		})
		s.post(func(s *sched) { s.failureDecided(n, err, act, herr) })
	}()
}

func (s *sched) failureDecided(n *node, err error, act FailureAction, herr error) {
	s.holds--
	s.async--
	if s.stopping || n.st.Status != StepFailed {
		return
	}
	if herr != nil {
		s.log.Warn("failure handler failed", "step", n.step.ID, "err", herr)
		act = FailAbort
	}
	switch act {
	case FailSkip:
		// The run can no longer be "completed": a step failed, even if the
		// user chose to go on without it.
		s.skippedFailures++
		n.st.Reason = "skipped by the user after it failed: " + n.st.Error
		s.setStatus(n, StepSkipped)
		s.emit(Event{Type: EventStepSkipped, StepID: n.step.ID, Reason: n.st.Reason, Status: string(StepSkipped)})
		s.blockDependents(n)
	case FailRetry:
		s.reset(n)
		s.evaluate(n)
	default:
		s.abort(n, err)
	}
}

// abort fails the run because of a critical step.
func (s *sched) abort(n *node, err error) {
	s.blockDependents(n)
	if s.errMsg == "" {
		// Most step errors name the step already: not twice.
		// (`step "a": x` and `step "a" (llm): x` become `step "a" failed: x`
		// and `step "a" (llm) failed: x`).
		prefix, msg := fmt.Sprintf("step %q", n.step.ID), err.Error()
		s.errMsg = fmt.Sprintf("%s failed: %s", prefix, msg)
		if rest, ok := strings.CutPrefix(msg, prefix); ok {
			if i := strings.Index(rest, ": "); i >= 0 && !strings.Contains(rest[:i], `"`) {
				s.errMsg = prefix + rest[:i] + " failed: " + rest[i+2:]
			}
		}
	}
	s.stop(RunFailed, s.errMsg)
}

// applyRules runs the dynamic update rules after a step finished.
func (s *sched) applyRules(n *node) {
	for _, rule := range s.cfg.Rules {
		var add []*plans.Step
		var reason string
		if err := guard("rule "+rule.Name(), func() error {
			add, reason = rule.After(s.plan, n.step, n.st)
			return nil
		}); err != nil {
			s.log.Error("update rule failed", "rule", rule.Name(), "step", n.step.ID, "err", err)
			continue
		}
		if len(add) == 0 {
			continue
		}
		p := s.plan.Clone()
		var ids []string
		for _, st := range add {
			c := st.Clone()
			p.Steps = append(p.Steps, c)
			ids = append(ids, c.ID)
		}
		if probs := plans.ValidatePlan(p, s.cfg.Tools, s.cfg.MaxSteps); len(probs) > 0 {
			s.log.Warn("update rule produced an invalid plan; ignored", "rule", rule.Name(), "step", n.step.ID,
				"err", (&plans.ValidationError{Problems: probs}).Error())
			continue
		}
		s.setPlan(p, plans.PlanUpdate{Source: "rule", Reason: rule.Name() + ": " + reason, Action: "add_steps", StepIDs: ids})
	}
}

// startRePlan asks the planner for extra steps when a step needs more
// context (bounded by maxRePlans; a planner failure ends re-planning).
func (s *sched) startRePlan(n *node, suggestion string) {
	if s.replan.busy && s.cfg.Planner != nil && !s.replan.off {
		// One re-plan at a time: the next sees the plan the last produced.
		s.replan.queue = append(s.replan.queue, replanAsk{n, suggestion})
		return
	}
	if s.cfg.Planner == nil || s.replan.off || s.replan.done >= s.replan.max || s.opts.DryRun { // a dry run makes no model call
		s.log.Info("step needs more context; not re-planning", "step", n.step.ID,
			"planner", s.cfg.Planner != nil, "rePlans", s.replan.done, "max", s.replan.max)
		return
	}
	iter := s.replan.done + 1
	req := RePlanRequest{
		Plan: s.plan.Clone(), StepID: n.step.ID, Suggestion: suggestion,
		Completed: s.copyOutputs(), Iteration: iter, Budget: s.budget,
	}
	s.replan.busy = true
	s.holds++
	s.async++
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		var steps []*plans.Step
		err := guard("planner", func() (err error) {
			steps, err = s.cfg.Planner.RePlan(s.ctx, req)
			return err
		})
		s.post(func(s *sched) { s.rePlanned(n, iter, suggestion, steps, err) })
	}()
}

type replanAsk struct {
	n          *node
	suggestion string
}

func (s *sched) rePlanned(n *node, iter int, suggestion string, steps []*plans.Step, err error) {
	s.holds--
	s.async--
	s.replan.busy = false
	if s.stopping {
		return
	}
	s.mergeRePlanned(n, iter, suggestion, steps, err)
	if len(s.replan.queue) > 0 && !s.stopping {
		next := s.replan.queue[0]
		s.replan.queue = s.replan.queue[1:]
		s.startRePlan(next.n, next.suggestion)
	}
}

func (s *sched) mergeRePlanned(n *node, iter int, suggestion string, steps []*plans.Step, err error) {
	if err != nil {
		s.replan.off = true
		s.log.Warn("re-planning failed; going on with the plan as it is", "step", n.step.ID, "err", err)
		return
	}
	s.replan.done++
	if len(steps) == 0 {
		return
	}
	p := s.plan.Clone()
	added := s.mergeRePlan(p, n.step.ID, iter, steps)
	if probs := plans.ValidatePlan(p, s.cfg.Tools, s.cfg.MaxSteps); len(probs) > 0 {
		s.replan.off = true
		s.log.Warn("re-planned steps are invalid; going on with the plan as it is", "step", n.step.ID,
			"err", (&plans.ValidationError{Problems: probs}).Error())
		return
	}
	reason := fmt.Sprintf("step %s needs more context", n.step.ID)
	if suggestion != "" {
		reason += ": " + suggestion
	}
	s.setPlan(p, plans.PlanUpdate{Source: "replan", Reason: reason, Action: "replan", StepIDs: added})
}

// mergeRePlan appends steps to p with ids prefixed _rp<iter>_. A
// dependency on another new step is renamed; on an existing step it is
// kept; on anything else dropped. A new step without dependencies depends
// on the step that asked for more context. References between new steps
// are renamed too.
func (s *sched) mergeRePlan(p *plans.Plan, trigger string, iter int, steps []*plans.Step) []string {
	prefix := fmt.Sprintf("_rp%d_", iter)
	rename := map[string]string{}
	for _, st := range steps {
		rename[st.ID] = prefix + st.ID
	}
	var added []string
	for _, st := range steps {
		// Renamed rewrites the id, branches and every reference; the
		// dependencies are rewired below.
		c := st.Renamed(rename)
		var deps []string
		for _, d := range st.DependsOn {
			switch {
			case rename[d] != "":
				deps = appendNew(deps, rename[d])
			case s.byID[d] != nil:
				deps = appendNew(deps, d)
			}
		}
		if len(deps) == 0 {
			deps = []string{trigger}
		}
		c.DependsOn = deps
		p.Steps = append(p.Steps, c)
		added = append(added, c.ID)
	}
	return added
}

func stepIndex(p *plans.Plan, id string) int {
	for i, st := range p.Steps {
		if st.ID == id {
			return i
		}
	}
	return -1
}

func appendNew(list []string, ids ...string) []string {
	for _, id := range ids {
		if !slices.Contains(list, id) {
			list = append(list, id)
		}
	}
	return list
}

// guard turns a panic in a hook into an error, so that a broken planner,
// handler or rule fails its decision and not the daemon.
func guard(what string, f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%s panicked: %v", what, v)
		}
	}()
	return f()
}
