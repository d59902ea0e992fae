package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/workspace"
)

// fakeModel runs llm/agent steps from a script.
type fakeModel struct {
	mu    sync.Mutex
	calls []ModelCall
	run   func(ctx context.Context, call ModelCall) (*ModelResult, error)
}

func (m *fakeModel) RunStep(ctx context.Context, call ModelCall) (*ModelResult, error) {
	m.mu.Lock()
	m.calls = append(m.calls, call)
	m.mu.Unlock()
	if m.run != nil {
		return m.run(ctx, call)
	}
	return &ModelResult{Text: "echo: " + call.Prompt, Usage: Usage{InputTokens: 10, OutputTokens: 5, CostUSD: 0.01}, Calls: 1}, nil
}

func TestSchedLLMStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		m := &fakeModel{}
		e := New(Config{Tools: h.reg, Model: m})
		p := mkPlan(t, `[
			{"id":"a","tool":"op","args":{"out":{"v":"42"}}},
			{"id":"ask","kind":"llm","prompt":"value is ${a.v}","dependsOn":["a"]},
			{"id":"use","tool":"op","args":{"out":"$ask"},"dependsOn":["ask"]}
		]`)
		st, rec := runPlan(t, e, p, RunOptions{})
		if st.Status != RunCompleted {
			t.Fatalf("%s %s", st.Status, st.Error)
		}
		if len(m.calls) != 1 || m.calls[0].Prompt != "value is 42" || m.calls[0].Exec != nil {
			t.Fatalf("calls %+v", m.calls)
		}
		var out struct{ Text string }
		json.Unmarshal(stepState(t, st, "ask").Output, &out)
		if out.Text != "echo: value is 42" {
			t.Errorf("output %s", stepState(t, st, "ask").Output)
		}
		if st.LLMCalls != 1 || st.Tokens != 15 || st.CostUSD != 0.01 {
			t.Errorf("usage: calls %d tokens %d cost %v", st.LLMCalls, st.Tokens, st.CostUSD)
		}
		_ = rec
	})
}

// A plan with llm or agent steps and no model is refused up front, naming
// every such step and how to configure a model, before anything runs; a
// dry run still goes through, the step "would run".
func TestSchedNoModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		p := mkPlan(t, `[{"id":"w","tool":"op","args":{}},{"id":"x","kind":"llm","prompt":"hi","dependsOn":["w"]},{"id":"y","kind":"agent","prompt":"do"}]`)
		_, err := e.Start(t.Context(), p, RunOptions{})
		var ve *plans.ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, ErrNoModel) || len(ve.Problems) != 2 || ve.Problems[0].StepID != "x" || ve.Problems[1].StepID != "y" {
			t.Fatalf("Start = %v; want a validation error naming steps x and y that is ErrNoModel", err)
		}
		for _, want := range []string{"llm step needs a model", "AGENTD_MODEL", "config.json"} {
			if !strings.Contains(ve.Problems[0].String(), want) {
				t.Errorf("problem %q lacks %q", ve.Problems[0], want)
			}
		}
		if strings.Contains(ve.Problems[0].String(), "--") {
			t.Errorf("problem %q names a front end's flag; each front end words its own", ve.Problems[0])
		}
		if got := h.callCount("w"); got != 0 {
			t.Errorf("step w ran %d time(s) before the refusal", got)
		}
		st, _ := runPlan(t, e, p, RunOptions{DryRun: true})
		if s := stepState(t, st, "x"); st.Status != RunCompleted || s.Status != StepCompleted || !strings.HasPrefix(s.Reason, WouldRunPrefix+": it would ask the model") {
			t.Errorf("dry run without a model: %s, step x %s %q", st.Status, s.Status, s.Reason)
		}
		if ms := New(Config{Tools: h.reg, Model: &fakeModel{}}).MissingModel(p); ms != nil {
			t.Errorf("with a model MissingModel = %v", ms)
		}
	})
}

func TestSchedBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		m := &fakeModel{run: func(ctx context.Context, call ModelCall) (*ModelResult, error) {
			// Model code that counts its own use: the engine must not count it twice.
			if err := call.Budget.Reserve(100, 0); err != nil {
				return nil, err
			}
			call.Budget.Add(Usage{InputTokens: 60, OutputTokens: 40})
			return &ModelResult{Text: "ok", Usage: Usage{InputTokens: 60, OutputTokens: 40}, Calls: 1}, nil
		}}
		e := New(Config{Tools: h.reg, Model: m})
		p := mkPlan(t, `[
			{"id":"one","kind":"llm","prompt":"a"},
			{"id":"two","kind":"llm","prompt":"b","dependsOn":["one"]},
			{"id":"three","kind":"llm","prompt":"`+strings.Repeat("x", 400)+`","dependsOn":["two"],"critical":false}
		]`)
		st, _ := runPlan(t, e, p, RunOptions{MaxTokens: 250})
		wantStatus(t, st, map[string]StepStatus{"one": StepCompleted, "two": StepCompleted, "three": StepFailed})
		if s := stepState(t, st, "three"); !strings.Contains(s.Error, "budget exceeded") || !strings.Contains(s.Error, "maxTokens") {
			t.Errorf("three: %q", s.Error)
		}
		if len(m.calls) != 2 {
			t.Errorf("model called %d times; the over-budget step must fail before the call", len(m.calls))
		}
		if st.Tokens != 200 {
			t.Errorf("tokens %d, want 200", st.Tokens)
		}
		b := NewBudget(0, 1.0)
		b.Add(Usage{CostUSD: 0.9})
		if err := b.Reserve(10, 0.2); !errors.Is(err, ErrBudgetExceeded) {
			t.Errorf("cost cap: %v", err)
		}
	})
}

// fakeReviewer decides reviews with a function.
type fakeReviewer struct {
	mu      sync.Mutex
	before  []*workspace.ChangeSet
	after   []*workspace.ChangeSet
	outcome func(cs *workspace.ChangeSet) *ReviewOutcome
}

func (f *fakeReviewer) ReviewBefore(ctx context.Context, cs *workspace.ChangeSet) (*ReviewOutcome, error) {
	f.mu.Lock()
	f.before = append(f.before, cs)
	f.mu.Unlock()
	return f.outcome(cs), nil
}

func (f *fakeReviewer) OfferAfter(ctx context.Context, cs *workspace.ChangeSet) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.after = append(f.after, cs)
	return nil
}

func TestSchedAgentToolCallsGoThroughReview(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		var results []*ToolCallResult
		m := &fakeModel{run: func(ctx context.Context, call ModelCall) (*ModelResult, error) {
			for _, c := range []struct{ tool, args string }{
				{"write", `{"write":"a.txt"}`},
				{"cmd", `{"command":"make"}`},
				{"op", `{}`},
				{"op", `{"fail":"exit 1","out":{"exitCode":1}}`},
			} {
				r, err := call.Exec(ctx, c.tool, json.RawMessage(c.args))
				if err != nil {
					return nil, err
				}
				results = append(results, r)
			}
			return &ModelResult{Text: "done", Calls: 4}, nil
		}}
		rv := &fakeReviewer{outcome: func(cs *workspace.ChangeSet) *ReviewOutcome {
			return &ReviewOutcome{Rejected: []HunkRejection{{Path: "a.txt", HunkID: "h1", Reason: "use b.txt"}}}
		}}
		e := New(Config{Tools: h.reg, Model: m, Reviewer: rv})
		p := mkPlan(t, `[{"id":"ag","kind":"agent","prompt":"do it","tools":["write","op"]}]`)
		st, rec := runPlan(t, e, p, RunOptions{Review: ReviewBefore})
		// Its only change set was rejected in full and nothing else was
		// applied: the step did not do its work (issue 24, point 4).
		if st.Status != RunPartial {
			t.Fatalf("%s %s", st.Status, st.Error)
		}
		if s := stepState(t, st, "ag"); s.Status != StepSkipped || !strings.Contains(s.Error+s.Reason, "change rejected: use b.txt") {
			t.Errorf("step ag: %s %q %q, want skipped with the user's reason", s.Status, s.Error, s.Reason)
		}
		if len(results) != 4 {
			t.Fatalf("results %d", len(results))
		}
		if len(results[0].Rejected) != 1 || results[0].Rejected[0].Reason != "use b.txt" {
			t.Errorf("write result %+v", results[0])
		}
		if r := results[3]; !strings.Contains(r.Error, "exit 1") || string(mustJSON(r.Output)) != `{"exitCode":1}` {
			t.Errorf("failed call result %+v: the model must see the error and the output", r)
		}
		if !strings.Contains(results[1].Error, "not available") || h.callCount("ag") != 3 {
			t.Errorf("cmd result %+v; tool runs %d", results[1], h.callCount("ag"))
		}
		if len(rv.before) != 1 || rv.before[0].StepID != "ag" || rv.before[0].RunID != st.RunID {
			t.Errorf("reviews %+v", rv.before)
		}
		s := stepState(t, st, "ag")
		if len(s.ChangeIDs) != 1 || len(rec.of(EventChangeProposed)) != 1 || rec.of(EventChangeProposed)[0].ChangeID != s.ChangeIDs[0] {
			t.Errorf("change ids %v events %v", s.ChangeIDs, rec.trace())
		}
		if !strings.Contains(string(s.Output), "use b.txt") {
			t.Errorf("agent output lacks the rejection: %s", s.Output)
		}
		if st.ToolCalls != 3 || st.LLMCalls != 4 {
			t.Errorf("tool calls %d llm calls %d", st.ToolCalls, st.LLMCalls)
		}
	})
}

// fakeInput answers questions.
type fakeInput struct{ answer string }

func (f fakeInput) Ask(ctx context.Context, req InputRequest) (string, error) {
	return f.answer + " to " + req.Question, nil
}

func TestSchedValidationInputDecision(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		p := mkPlan(t, `[
			{"id":"a","tool":"op","args":{"out":{"n":3}}},
			{"id":"ok","kind":"validation","checks":[{"expr":"${a.n} == 3"}],"dependsOn":["a"]},
			{"id":"bad","kind":"validation","checks":[{"expr":"${a.n} == 3"},{"expr":"${a.n} > 5","message":"n is too small"}],"dependsOn":["a"],"critical":false},
			{"id":"q","kind":"input","question":"n is ${a.n}?","dependsOn":["a"]},
			{"id":"d","kind":"decision","dependsOn":["a"],"branches":[{"when":"${a.n} > 5","steps":["big"]},{"steps":["small"]}]},
			{"id":"big","tool":"op","args":{},"dependsOn":["d"]},
			{"id":"small","tool":"op","args":{},"dependsOn":["d"]}
		]`)
		st, _ := runPlan(t, New(Config{Tools: h.reg, Inputter: fakeInput{"yes"}}), p, RunOptions{})
		wantStatus(t, st, map[string]StepStatus{"ok": StepCompleted, "bad": StepFailed, "q": StepCompleted,
			"d": StepCompleted, "big": StepSkipped, "small": StepCompleted})
		if e := stepState(t, st, "bad").Error; !strings.Contains(e, "n is too small") {
			t.Errorf("bad error %q", e)
		}
		if o := string(stepState(t, st, "q").Output); o != `"yes to n is 3?"` {
			t.Errorf("q output %s", o)
		}
		if r := stepState(t, st, "big").Reason; !strings.Contains(r, `decision "d"`) {
			t.Errorf("big reason %q", r)
		}
		// Headless: no Inputter.
		st, _ = runPlan(t, New(Config{Tools: h.reg}), p, RunOptions{})
		if e := stepState(t, st, "q").Error; !strings.Contains(e, "nobody can answer") {
			t.Errorf("headless input: %q", e)
		}
	})
}

func TestSchedModelTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		m := &fakeModel{run: func(ctx context.Context, call ModelCall) (*ModelResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}
		st, _ := runPlan(t, New(Config{Tools: h.reg, Model: m}), mkPlan(t, `[{"id":"x","kind":"llm","prompt":"p","timeout":"2s"}]`), RunOptions{})
		if s := stepState(t, st, "x"); !strings.Contains(s.Error, "timed out after 2s") || time.Since(h.t0) != 2*time.Second {
			t.Errorf("%q at %v", s.Error, time.Since(h.t0))
		}
	})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
