package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/workspace"
)

// opArgs drive the scheduler tests' fake tool "op".
type opArgs struct {
	Sleep     string          `json:"sleep,omitempty"`     // how long the call takes
	Fail      string          `json:"fail,omitempty"`      // fail with this message
	FailTimes int             `json:"failTimes,omitempty"` // fail only the first n calls of the step
	Retryable bool            `json:"retryable,omitempty"` // the failure is a retryable *tools.Error
	Temporary bool            `json:"temporary,omitempty"` // the failure is Temporary() true
	Panic     string          `json:"panic,omitempty"`
	FailStep  string          `json:"failStep,omitempty"` // fail only when run by this step
	Out       json.RawMessage `json:"out,omitempty"`      // output (default {"step": id})
	Emit      []string        `json:"emit,omitempty"`
	Write     string          `json:"write,omitempty"` // propose creating this file
	More      string          `json:"more,omitempty"`  // NeedsMoreContext with this suggestion
}

type tempErr struct{ msg string }

func (e tempErr) Error() string   { return e.msg }
func (e tempErr) Temporary() bool { return true }

// harness records what the fake tools did, in the bubble's fake time.
type harness struct {
	mu      sync.Mutex
	t0      time.Time
	calls   map[string]int
	starts  map[string][]time.Duration
	ends    map[string][]time.Duration
	order   []string
	running int
	maxRun  int
	ctxErrs map[string]error
	reg     *tools.Registry
}

func newHarness() *harness {
	h := &harness{
		t0: time.Now(), calls: map[string]int{}, starts: map[string][]time.Duration{},
		ends: map[string][]time.Duration{}, ctxErrs: map[string]error{},
	}
	h.reg = tools.NewRegistry()
	h.reg.Register(&schedTool{name: "op", cat: tools.CategoryRead, risk: tools.RiskLow, h: h})
	h.reg.Register(&schedTool{name: "cmd", cat: tools.CategoryCommand, risk: tools.RiskHigh, h: h})
	h.reg.Register(&schedTool{name: "write", cat: tools.CategoryWrite, risk: tools.RiskMedium, h: h})
	h.reg.Register(&schedTool{name: "gitop", cat: tools.CategoryGit, risk: tools.RiskMedium, h: h})
	return h
}

func (h *harness) startOf(id string) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.starts[id]) == 0 {
		return -1
	}
	return h.starts[id][0]
}

func (h *harness) endOf(id string) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ends[id]) == 0 {
		return -1
	}
	return h.ends[id][len(h.ends[id])-1]
}

func (h *harness) callCount(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[id]
}

type schedTool struct {
	name string
	cat  tools.Category
	risk tools.Risk
	h    *harness
}

func (s *schedTool) Name() string             { return s.name }
func (s *schedTool) Description() string      { return "test tool " + s.name }
func (s *schedTool) Category() tools.Category { return s.cat }
func (s *schedTool) Risk() tools.Risk         { return s.risk }
func (s *schedTool) Schema() json.RawMessage  { return json.RawMessage(`{"type":"object"}`) }

func (s *schedTool) Describe(args json.RawMessage) tools.Description {
	var a struct {
		Command string `json:"command"`
	}
	_ = json.Unmarshal(args, &a)
	return tools.Description{Command: a.Command}
}

func (s *schedTool) Run(ctx context.Context, env *tools.Env, raw json.RawMessage) (*tools.Result, error) {
	var a opArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	h, id := s.h, env.StepID
	h.mu.Lock()
	h.calls[id]++
	n := h.calls[id]
	h.starts[id] = append(h.starts[id], time.Since(h.t0))
	h.order = append(h.order, id)
	h.running++
	h.maxRun = max(h.maxRun, h.running)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.running--
		h.ends[id] = append(h.ends[id], time.Since(h.t0))
		h.mu.Unlock()
	}()
	for _, e := range a.Emit {
		env.Emit("stdout", e)
	}
	if a.Sleep != "" {
		d, err := time.ParseDuration(a.Sleep)
		if err != nil {
			return nil, err
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			h.mu.Lock()
			h.ctxErrs[id] = ctx.Err()
			h.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	if a.Panic != "" {
		panic(a.Panic)
	}
	if a.Fail != "" && (a.FailTimes == 0 || n <= a.FailTimes) && (a.FailStep == "" || a.FailStep == id) {
		var partial *tools.Result
		if len(a.Out) > 0 {
			partial = &tools.Result{Output: a.Out} // like run_command's exit code and output
		}
		switch {
		case a.Temporary:
			return partial, tempErr{a.Fail}
		default:
			return partial, &tools.Error{Code: "TEST", Message: a.Fail, Retryable: a.Retryable}
		}
	}
	res := &tools.Result{Output: map[string]any{"step": id, "call": n}}
	if len(a.Out) > 0 {
		res.Output = a.Out
	}
	if a.Write != "" {
		res.Changes = &workspace.ChangeSet{Files: []*workspace.FileChange{{
			Path: a.Write, Op: workspace.OpCreate, New: []byte("written by " + id + "\n"), Mode: 0o644,
		}}}
		if env.WS != nil {
			b := env.WS.Propose(ctx)
			if err := b.Write(a.Write, []byte("written by "+id+"\n")); err != nil {
				return nil, err
			}
			res.Changes = b.Build()
		}
	}
	if a.More != "" {
		res.NeedsMoreContext, res.ContextSuggestion = true, a.More
	}
	return res, nil
}

// recorder is a subscriber that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) OnEvent(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) of(typ EventType) []Event {
	var out []Event
	for _, e := range r.all() {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// stepEvents lists "type:step" for the step events in order.
func (r *recorder) trace() []string {
	var out []string
	for _, e := range r.all() {
		if e.Type == EventStepOutput {
			continue
		}
		s := string(e.Type)
		if e.StepID != "" {
			s += ":" + e.StepID
		}
		out = append(out, s)
	}
	return out
}

// mkPlan builds a plan from JSON steps.
func mkPlan(t *testing.T, stepsJSON string) *plans.Plan {
	t.Helper()
	p, err := plans.ParsePlan("test.json", []byte(`{"title":"test","steps":`+stepsJSON+`}`))
	if err != nil {
		t.Fatalf("parse plan: %v", err)
	}
	return p
}

// runPlan starts p and waits for the end.
func runPlan(t *testing.T, e *Engine, p *plans.Plan, opts RunOptions) (RunState, *recorder) {
	t.Helper()
	rec := &recorder{}
	opts.Subscribers = append(opts.Subscribers, rec)
	r, err := e.Start(t.Context(), p, opts)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	st, err := r.Wait(t.Context())
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return st, rec
}

func stepState(t *testing.T, st RunState, id string) StepState {
	t.Helper()
	for _, s := range st.Steps {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no step %q in state", id)
	return StepState{}
}

func wantStatus(t *testing.T, st RunState, want map[string]StepStatus) {
	t.Helper()
	for id, w := range want {
		if got := stepState(t, st, id).Status; got != w {
			t.Errorf("step %s: status %s, want %s (error %q, reason %q)", id, got, w,
				stepState(t, st, id).Error, stepState(t, st, id).Reason)
		}
	}
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// fakeSnaps is a Snapshotter that records calls.
type fakeSnaps struct {
	mu       sync.Mutex
	n        int
	reqs     []SnapshotRequest
	restores []RestoreRequest
	fail     error
}

func (f *fakeSnaps) Snapshot(ctx context.Context, req SnapshotRequest) (SnapshotInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return SnapshotInfo{}, f.fail
	}
	f.n++
	f.reqs = append(f.reqs, req)
	return SnapshotInfo{ID: fmt.Sprintf("snap%d", f.n)}, nil
}

func (f *fakeSnaps) Restore(ctx context.Context, req RestoreRequest) (*RestoreInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restores = append(f.restores, req)
	return &RestoreInfo{SnapshotID: req.SnapshotID, Restored: []string{"a.txt"}, Conflicts: []string{"user.txt"}}, nil
}
