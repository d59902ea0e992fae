package engine

import "time"

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
