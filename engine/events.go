package engine

import (
	"context"
	"sync"
	"time"
)

// EventType names a state change of a run.
type EventType string

const (
	EventRunStarted      EventType = "runStarted"
	EventStepStarted     EventType = "stepStarted"
	EventStepProgress    EventType = "stepProgress"
	EventStepOutput      EventType = "stepOutput"
	EventStepRetrying    EventType = "stepRetrying"
	EventStepFinished    EventType = "stepFinished"
	EventStepFailed      EventType = "stepFailed"
	EventStepSkipped     EventType = "stepSkipped"
	EventStepBlocked     EventType = "stepBlocked"
	EventStepCancelled   EventType = "stepCancelled"
	EventPlanUpdated     EventType = "planUpdated"
	EventChangeProposed  EventType = "changeProposed"
	EventApprovalPending EventType = "approvalPending"
	EventSnapshotTaken   EventType = "snapshotTaken"
	EventRunPaused       EventType = "runPaused"
	EventRunResumed      EventType = "runResumed"
	EventRunFinished     EventType = "runFinished"
)

// Event is one state change. Fields not relevant to Type are empty.
type Event struct {
	Seq         uint64    `json:"seq"`
	Type        EventType `json:"type"`
	RunID       string    `json:"runId"`
	StepID      string    `json:"stepId,omitempty"`
	Time        time.Time `json:"time"`
	Attempt     int       `json:"attempt,omitempty"`
	Stream      string    `json:"stream,omitempty"` // stepOutput: stdout, stderr, log, model
	Text        string    `json:"text,omitempty"`   // stepOutput chunk
	Error       string    `json:"error,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	DelayMs     int64     `json:"delayMs,omitempty"` // stepRetrying
	PlanVersion int       `json:"planVersion,omitempty"`
	ChangeID    string    `json:"changeId,omitempty"`
	SnapshotID  string    `json:"snapshotId,omitempty"`
	Status      string    `json:"status,omitempty"` // step or run status after the event
	// State is the compact run state (without Steps) right after the event.
	State *RunState `json:"state,omitempty"`
	// AllowedBy names the remembered rule that allowed what the step
	// asked (stepProgress; also in StepState.allowedBy).
	AllowedBy *AllowedBy `json:"allowedBy,omitempty"`
}

// Subscriber receives a run's events in order. OnEvent is called from a
// goroutine owned by the run, one per subscriber, so a slow subscriber never
// slows the scheduler (output events may be coalesced for it).
type Subscriber interface {
	OnEvent(Event)
}

// SubscriberFunc adapts a function.
type SubscriberFunc func(Event)

func (f SubscriberFunc) OnEvent(e Event) { f(e) }

// broker fans events out to subscribers. Each subscriber has an unbounded
// queue drained by its own goroutine, so publish never blocks. When a
// subscriber lags, consecutive stepOutput chunks of the same step and
// stream are merged into one event in its queue.
type broker struct {
	mu     sync.Mutex
	subs   map[*subscription]struct{}
	seq    uint64
	closed bool
	wg     sync.WaitGroup
}

type subscription struct {
	s      Subscriber
	mu     sync.Mutex
	q      []Event
	closed bool // no more events will be queued
	drop   bool // unsubscribed: discard what is queued
	wake   chan struct{}
}

func newBroker() *broker { return &broker{subs: map[*subscription]struct{}{}} }

// active reports whether anyone listens (so the scheduler can skip
// building state for events nobody receives).
func (b *broker) active() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs) > 0
}

func (b *broker) subscribe(s Subscriber) func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return func() {}
	}
	sub := &subscription{s: s, wake: make(chan struct{}, 1)}
	b.subs[sub] = struct{}{}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		sub.loop()
	}()
	return func() {
		b.mu.Lock()
		delete(b.subs, sub)
		b.mu.Unlock()
		sub.mu.Lock()
		sub.closed, sub.drop = true, true
		sub.q = nil
		sub.mu.Unlock()
		sub.signal()
	}
}

// publish assigns the next sequence number and queues ev for everyone.
func (b *broker) publish(ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.seq++
	ev.Seq = b.seq
	for sub := range b.subs {
		sub.push(ev)
	}
}

// close lets every subscriber goroutine end once its queue is drained.
func (b *broker) close() {
	b.mu.Lock()
	b.closed = true
	subs := b.subs
	b.subs = map[*subscription]struct{}{}
	b.mu.Unlock()
	for sub := range subs {
		sub.mu.Lock()
		sub.closed = true
		sub.mu.Unlock()
		sub.signal()
	}
}

// wait blocks until every subscriber goroutine has ended or ctx is done.
func (b *broker) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		b.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (sub *subscription) signal() {
	select {
	case sub.wake <- struct{}{}:
	default:
	}
}

func (sub *subscription) push(ev Event) {
	sub.mu.Lock()
	if sub.closed {
		sub.mu.Unlock()
		return
	}
	if n := len(sub.q); n > 0 && ev.Type == EventStepOutput {
		last := &sub.q[n-1]
		if last.Type == EventStepOutput && last.StepID == ev.StepID && last.Stream == ev.Stream {
			last.Text += ev.Text
			last.Seq, last.Time, last.State = ev.Seq, ev.Time, ev.State
			sub.mu.Unlock()
			return
		}
	}
	sub.q = append(sub.q, ev)
	sub.mu.Unlock()
	sub.signal()
}

func (sub *subscription) loop() {
	var batch []Event
	for {
		sub.mu.Lock()
		batch, sub.q = sub.q, batch[:0]
		closed, drop := sub.closed, sub.drop
		sub.mu.Unlock()
		if drop {
			return
		}
		for i, ev := range batch {
			sub.s.OnEvent(ev)
			batch[i] = Event{}
			if i%64 == 63 {
				sub.mu.Lock()
				drop = sub.drop
				sub.mu.Unlock()
				if drop {
					return
				}
			}
		}
		if len(batch) == 0 && closed {
			return
		}
		if len(batch) == 0 {
			<-sub.wake
		}
	}
}
