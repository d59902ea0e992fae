package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/agentd/agentd/engine"
	wire "github.com/agentd/agentd/protocol"
	"github.com/agentd/agentd/session"
)

func runMethods() map[string]method {
	return map[string]method{
		"agentd/run/start":     {call: (*Server).runStart, async: true},
		"agentd/run/pause":     {call: (*Server).runPause},
		"agentd/run/resume":    {call: (*Server).runResume},
		"agentd/run/cancel":    {call: (*Server).runCancel},
		"agentd/run/retryStep": {call: (*Server).runRetryStep, async: true},
		"agentd/run/skipStep":  {call: (*Server).runSkipStep, async: true},
		"agentd/run/get":       {call: (*Server).runGet},
		"agentd/run/list":      {call: (*Server).runList},
	}
}

// runEntry is one run, live or restored from the state dir.
type runEntry struct {
	id     string
	planID string
	run    *engine.Run // nil for a run of another process (recorded)
	// recorded: the run is another process's, read from the journal.
	recorded bool
	// undone is the journal's record that the run was undone.
	undone *session.Undone

	mu       sync.Mutex
	final    *engine.RunState // set when finished (or restored)
	unsub    func()
	started  bool // runStarted was sent
	finished bool
	token    string // $/progress token ("" if none)
	begun    bool   // $/progress begin was sent
	out      *coalescer
	done     chan struct{}
	// lastState is when a didChange last carried the run's state.
	lastState time.Time
	// reviewed: the run's change sets are registered for review (not a
	// dry run, review mode not "none"); changeProposed waits for that.
	reviewed bool

	// progMu orders $/progress sends of this run (a deferred report never
	// follows the end); lastReport and reportTimer rate-limit reports.
	progMu      sync.Mutex
	lastReport  time.Time
	reportTimer *time.Timer
}

// StateInterval is the shortest time between two agentd/run/didChange
// notifications carrying the run's state, except for the events that
// always carry it (see alwaysState). Between them the editor applies the
// events to the latest state it got.
var StateInterval = 100 * time.Millisecond

// alwaysState reports whether a didChange for an event of type t carries the
// run's state regardless of StateInterval: the run's status or plan changed,
// or the user is asked something.
func alwaysState(t engine.EventType) bool {
	switch t {
	case engine.EventRunStarted, engine.EventRunFinished, engine.EventRunPaused, engine.EventRunResumed,
		engine.EventPlanUpdated, engine.EventApprovalPending, engine.EventChangeProposed,
		engine.EventSnapshotTaken, engine.EventStepFailed:
		return true
	}
	return false
}

func (e *runEntry) state() engine.RunState {
	e.mu.Lock()
	final, undone := e.final, e.undone
	e.mu.Unlock()
	var st engine.RunState
	switch {
	case final != nil:
		st = *final
	case e.run == nil:
		st = engine.RunState{RunID: e.id, PlanID: e.planID, Status: engine.RunRunning, CurrentSteps: []string{}, Snapshots: []string{}}
	default:
		st = e.run.State()
	}
	if undone != nil {
		st.Undone = undone
	}
	return st
}

type runs struct {
	mu sync.Mutex
	m  map[string]*runEntry
	wg sync.WaitGroup // event pumps and waiters of live runs
}

func newRuns() *runs { return &runs{m: map[string]*runEntry{}} }

func (r *runs) get(id string) *runEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[id]
}

func (r *runs) lookup(id string) (*runEntry, error) {
	if e := r.get(id); e != nil {
		return e, nil
	}
	return nil, notFound("run", id)
}

// putRecorded adds a run the journal holds, recorded by another process (a
// previous daemon, or agentd run in a terminal, perhaps still running), or
// updates one added so before to its latest record. The runs this daemon
// started are its own and left as they are.
func (r *runs) putRecorded(st engine.RunState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st2 := st
	if e, ok := r.m[st.RunID]; ok {
		e.mu.Lock()
		if e.recorded {
			e.final = &st2
		}
		e.undone = st.Undone // an undo from any front end
		e.mu.Unlock()
		return
	}
	r.m[st.RunID] = &runEntry{id: st.RunID, planID: st.PlanID, final: &st2, finished: true, recorded: true}
}

// readRecordedRuns adds or updates the runs other processes recorded in
// the journal (see putRecorded): a run list or get sees the terminal's
// runs as they are now, not as they were when the daemon started.
func (s *Server) readRecordedRuns() {
	for _, st := range s.persist.loadRuns() { // a run whose process died is failed there
		s.runs.putRecorded(st)
	}
}

func (r *runs) cancelAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.m {
		if e.run != nil {
			e.run.Cancel()
		}
	}
}

func (r *runs) wait() { r.wg.Wait() }

// runOptions reads agentd/run/start's options with the engine's decoder
// (engine.RunOptions.UnmarshalJSON, shared by every front end).
func (s *Server) runOptions(raw json.RawMessage) (engine.RunOptions, error) {
	var out engine.RunOptions
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &out); err != nil {
			var oe *engine.OptionError
			if errors.As(err, &oe) {
				return out, badParam("options."+oe.Field, "%s", oe.Message)
			}
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return out, badParam("options."+te.Field, "expected %s, got JSON %s", te.Type, te.Value)
			}
			return out, badParam("options", "%v", err)
		}
	}
	out.RunID = "" // the server names runs
	return out, nil
}

func (s *Server) runStart(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.RunStartParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	eng, err := s.engine()
	if err != nil {
		return nil, err
	}
	pl, err := s.plans.get(p.PlanID)
	if err != nil {
		return nil, err
	}
	opts, err := s.runOptions(p.Options)
	if err != nil {
		return nil, err
	}
	sess, err := s.session()
	if err != nil {
		return nil, err
	}
	if opts.RunID == "" {
		opts.RunID = newID("run-")
	}
	// The session composes the run's policy (the workspace's, or
	// options.approval) and review mode (options.review, else the
	// editor's initializationOptions.review, else the one default).
	req := session.RunRequest{Answer: session.AnswerAsk, Review: opts.Review, Options: opts}
	if req.Review == "" {
		s.mu.Lock()
		req.Review = engine.ReviewMode(s.initOpts.Review)
		s.mu.Unlock()
	}
	e := &runEntry{id: opts.RunID, planID: pl.ID, done: make(chan struct{}), reviewed: !opts.DryRun && req.ReviewMode() != engine.ReviewNone}
	e.out = newCoalescer(OutputInterval, func(ev engine.Event) { s.sendRunEvent(e, ev) })
	// Progress begins before the first event can report on it.
	s.beginProgress(ctx, e)
	req.Options.Subscribers = []engine.Subscriber{engine.SubscriberFunc(func(ev engine.Event) { s.onRunEvent(e, ev) })}
	s.runs.mu.Lock()
	s.runs.m[e.id] = e
	s.runs.mu.Unlock()

	// The run lives as long as the session, not the request.
	run, err := sess.StartRun(s.ctx, eng, pl.Clone(), req)
	if err != nil {
		s.runs.mu.Lock()
		delete(s.runs.m, e.id)
		s.runs.mu.Unlock()
		s.endProgress(e, engine.RunState{Status: engine.RunFailed})
		if errors.Is(err, engine.ErrNoModel) {
			// The engine's words are every front end's; this is the editor's way.
			return nil, fmt.Errorf("%w; or set initializationOptions.model in the editor's agentd settings", err)
		}
		return nil, err
	}
	e.mu.Lock()
	e.run = run
	if id := run.ID(); id != "" && id != e.id {
		s.runs.mu.Lock()
		delete(s.runs.m, e.id)
		e.id = id
		s.runs.m[id] = e
		s.runs.mu.Unlock()
	}
	e.mu.Unlock()
	s.plans.SetLastRun(pl.ID, e.id)

	// The engine recorded the run in the workspace's journal before Start
	// returned, and records its progress and final state.
	st := run.State()

	s.runs.wg.Add(1)
	go func() {
		defer s.runs.wg.Done()
		final, err := run.Wait(context.WithoutCancel(s.ctx))
		if err != nil {
			s.log.Error("waiting for run", "run", e.id, "error", err)
			final = run.State()
		}
		s.finishRun(e, final)
	}()

	res := RunStartResult{RunID: e.id}
	if len(st.Snapshots) > 0 {
		res.SnapshotID = st.Snapshots[0]
	}
	return res, nil
}

// finishRun records a run's final state once.
func (s *Server) finishRun(e *runEntry, final engine.RunState) {
	e.mu.Lock()
	if e.finished {
		e.mu.Unlock()
		return
	}
	e.finished = true
	f := final
	e.final = &f
	unsub := e.unsub
	e.mu.Unlock()
	e.out.flush()
	s.endProgress(e, final)
	if unsub != nil {
		unsub()
	}
	e.out.stop()
	close(e.done)
}

// RunEventParams is agentd/run/didChange's params. State is nil (absent)
// when the event does not carry it (see StateInterval). Change is the
// change set of a changeProposed event, for clients that asked for it
// (clientFeatures.inlineChanges).
type RunEventParams struct {
	RunID  string           `json:"runId"`
	Event  engine.Event     `json:"event"`
	State  *engine.RunState `json:"state,omitempty"`
	Change *ChangeSetInfo   `json:"change,omitempty"`
	// Unsaved (runFinished only) are the URIs of the open buffers that
	// hold the agent's changes not on disk yet (session.UnsavedAgentFiles),
	// and Note says so in words (session.UnsavedNote): the run's end never
	// claims what the disk does not hold.
	Unsaved []string `json:"unsaved,omitempty"`
	Note    string   `json:"note,omitempty"`
}

// onRunEvent is the run's subscriber (called in order on the engine's
// goroutine for this subscriber).
func (s *Server) onRunEvent(e *runEntry, ev engine.Event) {
	if ev.Type == engine.EventStepOutput {
		e.out.add(ev)
		return
	}
	e.mu.Lock()
	if ev.Type == engine.EventRunStarted {
		if e.started {
			e.mu.Unlock()
			return
		}
		e.started = true
	}
	e.mu.Unlock()
	// Output must reach the client before what follows it.
	e.out.flush()
	s.releaseHeld(e, ev)
	if ev.Type == engine.EventChangeProposed {
		s.proposeOrHold(e, ev)
		return
	}
	s.sendRunEvent(e, ev)
	switch ev.Type {
	case engine.EventStepStarted, engine.EventStepFinished, engine.EventStepFailed, engine.EventStepSkipped,
		engine.EventStepBlocked, engine.EventRunPaused, engine.EventRunResumed, engine.EventPlanUpdated:
		s.reportProgress(e, ev)
	case engine.EventRunFinished:
		if e.run != nil {
			st := e.run.State()
			s.finishRun(e, st)
		}
	}
}

func (s *Server) sendRunEvent(e *runEntry, ev engine.Event) {
	st := ev.State
	ev.State = nil
	if ev.RunID == "" {
		ev.RunID = e.id
	}
	now := time.Now()
	e.mu.Lock()
	withState := alwaysState(ev.Type) || now.Sub(e.lastState) >= StateInterval
	if withState {
		e.lastState = now
	}
	e.mu.Unlock()
	if !withState {
		s.notifyBatched("agentd/run/didChange", RunEventParams{RunID: e.id, Event: ev})
		return
	}
	if st == nil {
		var cur engine.RunState
		e.mu.Lock()
		if e.final != nil {
			cur = *e.final
		} else if e.run != nil {
			e.mu.Unlock()
			cur = e.run.State()
			e.mu.Lock()
		}
		e.mu.Unlock()
		st = &cur
	}
	compact := *st
	compact.Steps = nil
	compact.OriginalPlan, compact.FinalPlan = nil, nil
	if compact.CurrentSteps == nil {
		compact.CurrentSteps = []string{}
	}
	if compact.Snapshots == nil {
		compact.Snapshots = []string{}
	}
	if compact.RunID == "" {
		compact.RunID = e.id
	}
	params := RunEventParams{RunID: e.id, Event: ev, State: &compact, Change: s.inlineChange(ev)}
	if ev.Type == engine.EventRunFinished {
		if ws, err := s.workspace(); err == nil {
			rels := session.UnsavedAgentFiles(ws)
			for _, rel := range rels {
				params.Unsaved = append(params.Unsaved, s.bufferURI(rel))
			}
			params.Note = session.UnsavedNote(rels)
		}
	}
	if params.Change != nil {
		// A change set to draw: written at once, not held for a batch (the
		// frames waiting for one go with it, in order).
		s.notify("agentd/run/didChange", params)
		return
	}
	s.notifyBatched("agentd/run/didChange", params)
}

func (s *Server) liveRun(id string) (*runEntry, error) {
	e, err := s.runs.lookup(id)
	if err != nil {
		return nil, err
	}
	if e.run == nil {
		if st := e.state(); st.Status == engine.RunRunning || st.Status == engine.RunPaused {
			return nil, fmt.Errorf("run %s is run by another agentd process (agentd run in a terminal); pause, resume or cancel it there", id)
		}
		return nil, fmt.Errorf("run %s was run by another agentd process (a previous daemon, or agentd run) and has ended; start the plan again to run it here", id)
	}
	return e, nil
}

func (s *Server) runControl(params json.RawMessage, f func(*engine.Run)) (any, error) {
	var p wire.RunIDParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	e, err := s.liveRun(p.RunID)
	if err != nil {
		return nil, err
	}
	f(e.run)
	return e.state(), nil
}

func (s *Server) runPause(ctx context.Context, params json.RawMessage) (any, error) {
	return s.runControl(params, (*engine.Run).Pause)
}

func (s *Server) runResume(ctx context.Context, params json.RawMessage) (any, error) {
	return s.runControl(params, (*engine.Run).Resume)
}

func (s *Server) runCancel(ctx context.Context, params json.RawMessage) (any, error) {
	return s.runControl(params, (*engine.Run).Cancel)
}

func (s *Server) runRetryStep(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.RetryStepParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	e, err := s.liveRun(p.RunID)
	if err != nil {
		return nil, err
	}
	if err := e.run.RetryStep(p.StepID, p.Args); err != nil {
		return nil, fmt.Errorf("run %s: retrying step %s: %w", p.RunID, p.StepID, err)
	}
	return e.run.State(), nil
}

func (s *Server) runSkipStep(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.SkipStepParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	e, err := s.liveRun(p.RunID)
	if err != nil {
		return nil, err
	}
	if err := e.run.SkipStep(p.StepID); err != nil {
		return nil, fmt.Errorf("run %s: skipping step %s: %w", p.RunID, p.StepID, err)
	}
	return e.run.State(), nil
}

func (s *Server) runGet(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.RunIDParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if e := s.runs.get(p.RunID); e == nil || e.recorded {
		s.readRecordedRuns()
	}
	e, err := s.runs.lookup(p.RunID)
	if err != nil {
		return nil, err
	}
	return e.state(), nil
}

func (s *Server) runList(ctx context.Context, params json.RawMessage) (any, error) {
	s.readRecordedRuns()
	s.runs.mu.Lock()
	entries := make([]*runEntry, 0, len(s.runs.m))
	for _, e := range s.runs.m {
		entries = append(entries, e)
	}
	s.runs.mu.Unlock()
	out := make([]engine.RunState, 0, len(entries))
	for _, e := range entries {
		if e.run == nil && e.final == nil {
			continue // starting
		}
		st := e.state()
		st.Steps, st.OriginalPlan, st.FinalPlan = nil, nil, nil
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].StartTime.Equal(out[j].StartTime) {
			return out[i].StartTime.After(out[j].StartTime)
		}
		return out[i].RunID < out[j].RunID
	})
	return out, nil
}
