package engine

// Step state transitions: a step completes, fails (and maybe retries),
// is skipped, cancelled or blocked, and its dependents follow.

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"time"
)

func (s *sched) end(n *node) {
	now := time.Now()
	n.st.EndedAt = &now
	if n.st.StartedAt != nil {
		n.st.DurationMs = now.Sub(*n.st.StartedAt).Milliseconds()
	}
	if !n.started.IsZero() {
		s.timing.durSum += now.Sub(n.started)
		s.timing.durN++
		s.timing.lastEnd = now
	}
}

func (s *sched) complete(n *node, output json.RawMessage, needsMore bool, suggestion string) {
	s.completeWith(n, output, needsMore, suggestion, "")
}

// completeWith completes n; reason (for a step that would run in a dry
// run) goes with the stepFinished event and the step's state.
func (s *sched) completeWith(n *node, output json.RawMessage, needsMore bool, suggestion, reason string) {
	s.end(n)
	n.st.Reason = reason
	n.st.Output = output
	n.st.Error = ""
	if output != nil {
		s.outputs[n.step.ID] = output
	} else {
		s.outputs[n.step.ID] = json.RawMessage("null")
	}
	s.setStatus(n, StepCompleted)
	s.emit(Event{Type: EventStepFinished, StepID: n.step.ID, Attempt: n.st.Attempts, Status: string(StepCompleted), Reason: reason})
	for _, d := range n.dependents {
		if d.st.Status == StepPending && d.waiting > 0 {
			d.waiting--
			if d.waiting == 0 {
				s.evaluate(d)
			}
		}
	}
	if s.stopping {
		return
	}
	s.applyRules(n)
	if needsMore {
		s.startRePlan(n, suggestion)
	}
}

// stepError decides between a retry and a failure.
func (s *sched) stepError(n *node, err error) {
	max, delay, maxDelay := n.step.RetryPolicy()
	if !s.stopping && isRetryable(err) && n.tries <= max {
		d := backoff(delay, maxDelay, n.tries-1)
		n.st.Error = err.Error()
		s.setStatus(n, StepRetrying)
		s.emit(Event{Type: EventStepRetrying, StepID: n.step.ID, Attempt: n.st.Attempts,
			Error: err.Error(), DelayMs: d.Milliseconds(), Status: string(StepRetrying)})
		s.async++
		gen := n.gen
		n.timer = time.AfterFunc(d, func() { s.post(func(s *sched) { s.retryDue(n, gen) }) })
		return
	}
	s.fail(n, err)
}

func (s *sched) retryDue(n *node, gen int) {
	s.async--
	n.timer = nil
	if gen != n.gen || n.st.Status != StepRetrying {
		return
	}
	s.setStatus(n, StepReady)
	heap.Push(&s.ready, n)
}

// backoff is min(delay*2^n, maxDelay).
func backoff(delay, maxDelay time.Duration, n int) time.Duration {
	d := delay
	for i := 0; i < n && d > 0; i++ {
		d *= 2
		if maxDelay > 0 && d >= maxDelay {
			return maxDelay
		}
	}
	if maxDelay > 0 && d > maxDelay {
		d = maxDelay
	}
	return d
}

// fail records a step's failure and applies the failure policy
// (plan-format.md "When a step fails", after retries).
func (s *sched) fail(n *node, err error) {
	if s.opts.DryRun && !s.stopping {
		if d := s.unrealDep(n); d != "" {
			s.wouldRun(n, d, err)
			return
		}
	}
	s.end(n)
	n.st.Error = err.Error()
	s.setStatus(n, StepFailed)
	s.emit(Event{Type: EventStepFailed, StepID: n.step.ID, Attempt: n.st.Attempts,
		Error: err.Error(), Status: string(StepFailed)})
	if s.stopping {
		s.blockDependents(n)
		return
	}
	if !n.step.IsCritical() {
		s.blockDependents(n)
		s.applyRules(n)
		return
	}
	s.recoverOrAsk(n, err)
}

func (s *sched) skip(n *node, reason string) {
	if n.st.Status == StepPending || n.st.Status == StepReady {
		// never started
	} else {
		s.end(n)
	}
	n.st.Reason = reason
	s.setStatus(n, StepSkipped)
	s.emit(Event{Type: EventStepSkipped, StepID: n.step.ID, Reason: reason, Status: string(StepSkipped)})
	s.blockDependents(n)
}

func (s *sched) cancelled(n *node, reason string) {
	if n.st.Status == StepRunning || n.st.Status == StepWaiting || n.st.Status == StepRetrying {
		s.end(n)
	}
	n.st.Reason = reason
	s.setStatus(n, StepCancelled)
	s.emit(Event{Type: EventStepCancelled, StepID: n.step.ID, Reason: reason, Status: string(StepCancelled)})
}

func (s *sched) block(n *node, reason string) {
	if n.st.Status == StepBlocked {
		return
	}
	n.st.Reason = reason
	s.setStatus(n, StepBlocked)
	s.emit(Event{Type: EventStepBlocked, StepID: n.step.ID, Reason: reason, Status: string(StepBlocked)})
	s.blockDependents(n)
}

func (s *sched) blockDependents(n *node) {
	for _, d := range n.dependents {
		if d.st.Status == StepPending || d.st.Status == StepReady {
			s.block(d, fmt.Sprintf("dependency %q %s", n.step.ID, statusVerb(n.st.Status)))
		}
	}
}

func statusVerb(st StepStatus) string {
	switch st {
	case StepFailed:
		return "failed"
	case StepSkipped:
		return "was skipped"
	case StepBlocked:
		return "is blocked"
	case StepCancelled:
		return "was cancelled"
	}
	return "is " + string(st)
}

// evaluate decides whether a step that has not started is blocked,
// waiting or ready.
func (s *sched) evaluate(n *node) {
	if len(n.badDeps) > 0 {
		s.block(n, fmt.Sprintf("depends on unknown step %q", n.badDeps[0]))
		return
	}
	waiting := 0
	for _, d := range n.deps {
		switch d.st.Status {
		case StepCompleted:
		case StepFailed, StepSkipped, StepBlocked, StepCancelled:
			s.block(n, fmt.Sprintf("dependency %q %s", d.step.ID, statusVerb(d.st.Status)))
			return
		default:
			waiting++
		}
	}
	n.waiting = waiting
	if waiting == 0 {
		s.setStatus(n, StepReady)
		heap.Push(&s.ready, n)
		return
	}
	if n.st.Status != StepPending {
		n.st.Reason = ""
		s.setStatus(n, StepPending)
		s.emit(Event{Type: EventStepProgress, StepID: n.step.ID, Status: string(StepPending)})
	}
}

func (s *sched) setStatus(n *node, st StepStatus) {
	old := n.st.Status
	if old == st {
		return
	}
	s.counts[old]--
	s.counts[st]++
	n.st.Status = st
	if isActive(st) {
		s.current[n] = struct{}{}
	} else {
		delete(s.current, n)
	}
}

func isActive(st StepStatus) bool {
	return st == StepRunning || st == StepWaiting || st == StepRetrying
}

func isDone(st StepStatus) bool {
	switch st {
	case StepCompleted, StepFailed, StepSkipped, StepBlocked, StepCancelled:
		return true
	}
	return false
}

// WouldRunPrefix starts the reason of a step that a dry run could not try
// because it needs what an earlier step would have done (a command's
// output, a file a change would write): the step is completed with the
// output {"dryRun": true, "wouldRun": true, "reason": ...}, never failed,
// and references into that output read as missing in its dependents,
// which then would run too.
const WouldRunPrefix = "would run"

// unrealDep names a dependency of n (direct or not) that did not really
// run in this dry run, or "".
func (s *sched) unrealDep(n *node) string {
	seen := map[*node]bool{}
	var walk func(*node) string
	walk = func(m *node) string {
		for _, d := range m.deps {
			if seen[d] {
				continue
			}
			seen[d] = true
			if d.unreal {
				return d.step.ID
			}
			if id := walk(d); id != "" {
				return id
			}
		}
		return ""
	}
	return walk(n)
}

// wouldRun completes n as a step that would run: it depends on dep, whose
// effects a dry run does not produce, and failed for that reason.
func (s *sched) wouldRun(n *node, dep string, err error) {
	// The person reads the short reason; the error behind it (a missing
	// output field) stays in the step's output for whoever looks.
	reason := fmt.Sprintf("%s: it needs what %s would do, which a dry run does not do", WouldRunPrefix, dep)
	out, _ := json.Marshal(map[string]any{"dryRun": true, "wouldRun": true, "reason": reason, "detail": err.Error()})
	n.unreal = true
	if n.st.Status == StepPending || n.st.Status == StepReady {
		s.begin(n)
	}
	s.completeWith(n, out, false, "", reason)
}
