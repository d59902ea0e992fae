package engine

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentd/agentd/engine/tools"
)

// In a dry run a step that needs what a not really run step would have
// done (a command's exitCode) would run: completed with that reason, never
// failed, and its dependents go on. A step that fails on its own, with no
// such dependency, still fails.
func TestDryRunWouldRun(t *testing.T) {
	h := newHarness()
	e := New(Config{Tools: h.reg})
	p := mkPlan(t, `[
		{"id":"c","tool":"cmd","args":{}},
		{"id":"chk","kind":"validation","dependsOn":["c"],"checks":[{"expr":"${c.exitCode} == 0"}]},
		{"id":"after","tool":"op","args":{},"dependsOn":["chk"]},
		{"id":"gated","tool":"op","args":{},"dependsOn":["c"],"when":"${c.exitCode} == 0"},
		{"id":"ask","kind":"input","question":"which?"}
	]`)
	st, _ := runPlan(t, e, p, RunOptions{DryRun: true})
	if st.Status != RunCompleted {
		t.Fatalf("status %s (%s)", st.Status, st.Error)
	}
	for _, id := range []string{"chk", "gated"} {
		s := stepState(t, st, id)
		if s.Status != StepCompleted || !strings.HasPrefix(s.Reason, WouldRunPrefix+": it needs what c would do") ||
			!strings.Contains(string(s.Output), `"wouldRun":true`) ||
			strings.Contains(s.Reason, "has no field") || !strings.Contains(string(s.Output), `has no field \"exitCode\"`) {
			t.Errorf("%s: %s %q %s", id, s.Status, s.Reason, s.Output)
		}
	}
	if s := stepState(t, st, "c"); s.Reason != WouldRunPrefix+": a dry run runs no command" {
		t.Errorf("c's reason %q", s.Reason)
	}
	if s := stepState(t, st, "ask"); s.Status != StepCompleted || s.Reason != WouldRunPrefix+`: it would ask "which?"` {
		t.Errorf("ask: %s %q (a dry run never asks)", s.Status, s.Reason)
	}
	if !st.DryRun || !strings.Contains(st.Summary, "**Dry run:** nothing was written and no command ran") {
		t.Errorf("the summary does not say it was a dry run:\n%s", st.Summary)
	}
	if s := stepState(t, st, "after"); s.Status != StepCompleted {
		t.Errorf("after: %s", s.Status)
	}

	// No unreal dependency: a real failure stays a failure.
	p = mkPlan(t, `[{"id":"bad","tool":"op","args":{"fail":"boom"}}]`)
	st, _ = runPlan(t, e, p, RunOptions{DryRun: true})
	if s := stepState(t, st, "bad"); s.Status != StepFailed || st.Status != RunFailed {
		t.Errorf("a real failure in a dry run: step %s, run %s", s.Status, st.Status)
	}
	if st.Error != `step "bad" failed: op: boom` {
		t.Errorf("run error %q, want the step named once", st.Error)
	}
}

// What making the plan used counts toward the run and shows in the summary.
func TestPlanningUsageInSummary(t *testing.T) {
	h := newHarness()
	e := New(Config{Tools: h.reg})
	p := mkPlan(t, `[{"id":"a","tool":"op","args":{}}]`)
	st, _ := runPlan(t, e, p, RunOptions{Planning: &PlanningUsage{Calls: 2, Usage: Usage{InputTokens: 100, OutputTokens: 20, CostUSD: 0.5}}})
	if st.LLMCalls != 2 || st.Tokens != 120 || st.CostUSD != 0.5 {
		t.Errorf("calls %d tokens %d cost %v", st.LLMCalls, st.Tokens, st.CostUSD)
	}
	if !strings.Contains(st.Summary, "Making the plan (included above): 2 model call(s), 100 token(s) in, 20 out, $0.5000.") {
		t.Errorf("summary:\n%s", st.Summary)
	}
}

// countingInput counts the questions it is asked.
type countingInput struct{ asked atomic.Int32 }

func (c *countingInput) Ask(ctx context.Context, req InputRequest) (string, error) {
	c.asked.Add(1)
	return "yes", nil
}

// A dry run never asks the user, not even when a model's agent calls
// ask_user: the model is told it is a dry run, and the user sees no prompt.
func TestDryRunAgentAskUserNeverAsks(t *testing.T) {
	h := newHarness()
	ask, _ := tools.Builtin().Get("ask_user")
	h.reg.Register(ask)
	var got *ToolCallResult
	m := &fakeModel{run: func(ctx context.Context, call ModelCall) (*ModelResult, error) {
		r, err := call.Exec(ctx, "ask_user", json.RawMessage(`{"question":"which file?"}`))
		if err != nil {
			return nil, err
		}
		got = r
		return &ModelResult{Text: "done", Calls: 1}, nil
	}}
	in := &countingInput{}
	e := New(Config{Tools: h.reg, Model: m, Inputter: in})
	p := mkPlan(t, `[{"id":"ag","kind":"agent","prompt":"do it","tools":["ask_user"]}]`)
	st, _ := runPlan(t, e, p, RunOptions{DryRun: true})
	if n := in.asked.Load(); n != 0 {
		t.Errorf("the user was asked %d question(s) in a dry run", n)
	}
	// A dry run makes no model call at all (issue 24, point 5): the
	// agent would run.
	if got != nil {
		t.Errorf("the model ran in a dry run (its ask_user got %+v)", got)
	}
	if s := stepState(t, st, "ag"); s.Status != StepCompleted || !strings.HasPrefix(s.Reason, WouldRunPrefix+": it would ask the model") {
		t.Errorf("ag: %s %q, want would run", s.Status, s.Reason)
	}
	if st.Status != RunCompleted {
		t.Errorf("status %s (%s)", st.Status, st.Error)
	}
	// Without the dry run the same call does reach the user: the test
	// above is not passing because nothing could ask.
	got = nil
	st, _ = runPlan(t, e, p, RunOptions{})
	if in.asked.Load() != 1 || got == nil || got.Error != "" {
		t.Errorf("a real run: asked %d, result %+v (%s)", in.asked.Load(), got, st.Status)
	}
}
