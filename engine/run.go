package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

// Run is one execution of a plan. Its scheduler goroutine owns the run
// state; every method hands it a request and gets a copy back.
type Run struct {
	id string
	// inbox carries workers' reports (buffered: a worker never waits for
	// the scheduler to take one); cmds carries the methods' requests
	// (unbuffered: a request is either taken by the running loop or
	// refused once the run is done).
	inbox chan func(*sched)
	cmds  chan func(*sched)
	done  chan struct{}
	ev    *broker

	// Set by the scheduler before done is closed.
	final     RunState
	finalPlan *plans.Plan

	snapMu      sync.Mutex
	snaps       []string
	snapLabels  map[string]string    // what each snapshot is (SnapshotRequest.Label)
	skipped     []gitops.SkippedFile // left out of the run's snapshots
	skippedSeen map[string]bool

	chMu    sync.Mutex
	changes map[string]*workspace.ChangeSet

	// guidance is what the user gave the run while it goes (Guide), for
	// its agent steps.
	guideMu  sync.Mutex
	guidance []string
}

// Guide gives text to the run's agent steps: each agent step running or
// not started yet gets it as a user message before its next model call.
// It returns the ids of those steps; none (and the text is not kept) when
// the run has ended, is stopping or has no such step left.
func (r *Run) Guide(text string) []string {
	ch := make(chan []string, 1)
	ok := r.call(func(s *sched) {
		var takers []string
		if !s.stopping && !s.finished {
			for _, n := range s.nodes {
				if n.step.EffectiveKind() != plans.KindAgent {
					continue
				}
				switch n.st.Status {
				case StepPending, StepReady, StepRunning, StepRetrying, StepWaiting:
					takers = append(takers, n.step.ID)
				}
			}
		}
		if len(takers) > 0 {
			r.guideMu.Lock()
			r.guidance = append(r.guidance, text)
			r.guideMu.Unlock()
		}
		ch <- takers
	})
	if !ok {
		return nil
	}
	return <-ch
}

// guidanceReader returns the run's guidance not yet read by the returned
// func (each agent step's attempt reads it from the start).
func (r *Run) guidanceReader() func() []string {
	seen := 0
	return func() []string {
		r.guideMu.Lock()
		defer r.guideMu.Unlock()
		if seen >= len(r.guidance) {
			return nil
		}
		out := append([]string(nil), r.guidance[seen:]...)
		seen = len(r.guidance)
		return out
	}
}

// ErrRunFinished is returned by requests to a run that has ended.
var ErrRunFinished = errors.New("run has finished")

// ID returns the run's id.
func (r *Run) ID() string { return r.id }

// call runs f on the scheduler goroutine; false if the run has ended.
func (r *Run) call(f func(*sched)) bool {
	select {
	case r.cmds <- f:
		return true
	case <-r.done:
		return false
	}
}

// Plan returns the plan the run is executing now (a copy; it changes when
// recovery, re-planning or rules update it).
func (r *Run) Plan() *plans.Plan {
	ch := make(chan *plans.Plan, 1)
	if r.call(func(s *sched) { ch <- s.plan.Clone() }) {
		return <-ch
	}
	return r.finalPlan.Clone()
}

// State returns a copy of the run state with Steps.
func (r *Run) State() RunState {
	ch := make(chan RunState, 1)
	if r.call(func(s *sched) { ch <- s.fullState() }) {
		return <-ch
	}
	return r.final
}

// Subscribe delivers every later event to s in order; the returned func
// unsubscribes. Events already emitted are not replayed (use
// RunOptions.Subscribers to see a run from its start). After the run has
// finished, Subscribe does nothing.
func (r *Run) Subscribe(s Subscriber) (unsubscribe func()) { return r.ev.subscribe(s) }

// Pause stops starting new steps; running ones finish. Resume continues.
func (r *Run) Pause()  { r.call(func(s *sched) { s.pause() }) }
func (r *Run) Resume() { r.call(func(s *sched) { s.resume() }) }

// Cancel stops running steps through their context and ends the run.
func (r *Run) Cancel() { r.call(func(s *sched) { s.stop(RunCancelled, "cancelled") }) }

// RetryStep runs a failed, blocked or skipped step again (with new args if
// given), and then its dependents.
func (r *Run) RetryStep(stepID string, args []byte) error {
	ch := make(chan error, 1)
	if !r.call(func(s *sched) { ch <- s.retryStep(stepID, json.RawMessage(args)) }) {
		return fmt.Errorf("retry step %q: %w; start a new run", stepID, ErrRunFinished)
	}
	return <-ch
}

// SkipStep skips a step that has not started.
func (r *Run) SkipStep(stepID string) error {
	ch := make(chan error, 1)
	if !r.call(func(s *sched) { ch <- s.skipByUser(stepID) }) {
		return fmt.Errorf("skip step %q: %w", stepID, ErrRunFinished)
	}
	return <-ch
}

// Wait blocks until the run has finished (or ctx is done) and returns the
// final state, with Summary set. It also waits until every subscriber has
// received runFinished, so do not call it from a Subscriber.
func (r *Run) Wait(ctx context.Context) (RunState, error) {
	select {
	case <-r.done:
	case <-ctx.Done():
		return r.State(), ctx.Err()
	}
	if err := r.ev.wait(ctx); err != nil {
		return r.final, err
	}
	return r.final, nil
}

// Done is closed when the run has finished.
func (r *Run) Done() <-chan struct{} { return r.done }

// Change returns a change set the run proposed (for front ends that list
// or show changes, including ones never applied in a dry run).
func (r *Run) Change(id string) (*workspace.ChangeSet, bool) {
	r.chMu.Lock()
	defer r.chMu.Unlock()
	cs, ok := r.changes[id]
	return cs, ok
}

func (r *Run) addChange(cs *workspace.ChangeSet) {
	r.chMu.Lock()
	defer r.chMu.Unlock()
	if r.changes == nil {
		r.changes = map[string]*workspace.ChangeSet{}
	}
	r.changes[cs.ID] = cs
}

func (r *Run) addSnapshot(info SnapshotInfo, label string) {
	r.snapMu.Lock()
	defer r.snapMu.Unlock()
	r.snaps = append(r.snaps, info.ID)
	if label != "" {
		if r.snapLabels == nil {
			r.snapLabels = map[string]string{}
		}
		r.snapLabels[info.ID] = label
	}
	for _, f := range info.Skipped {
		if r.skippedSeen == nil {
			r.skippedSeen = map[string]bool{}
		}
		if !r.skippedSeen[f.Path] {
			r.skippedSeen[f.Path] = true
			r.skipped = append(r.skipped, f)
		}
	}
}

// skippedFiles lists, once each, the files the run's snapshots left out.
func (r *Run) skippedFiles() []gitops.SkippedFile {
	r.snapMu.Lock()
	defer r.snapMu.Unlock()
	return append([]gitops.SkippedFile(nil), r.skipped...)
}

func (r *Run) snapshots() []string {
	r.snapMu.Lock()
	defer r.snapMu.Unlock()
	return append([]string(nil), r.snaps...)
}

func (r *Run) snapshotLabels() map[string]string {
	r.snapMu.Lock()
	defer r.snapMu.Unlock()
	return maps.Clone(r.snapLabels)
}
