package engine

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/agentd/agentd/engine/plans"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

// fakePlanner answers Recover and RePlan from functions.
type fakePlanner struct {
	mu       sync.Mutex
	recovers []RecoveryRequest
	replans  []RePlanRequest
	recover  func(req RecoveryRequest) (*RecoveryDecision, error)
	replan   func(req RePlanRequest) ([]*plans.Step, error)
}

func (f *fakePlanner) Recover(ctx context.Context, req RecoveryRequest) (*RecoveryDecision, error) {
	f.mu.Lock()
	f.recovers = append(f.recovers, req)
	f.mu.Unlock()
	return f.recover(req)
}

func (f *fakePlanner) RePlan(ctx context.Context, req RePlanRequest) ([]*plans.Step, error) {
	f.mu.Lock()
	f.replans = append(f.replans, req)
	f.mu.Unlock()
	return f.replan(req)
}

func TestSchedRecovery(t *testing.T) {
	base := `[
		{"id":"prep","tool":"op","args":{}},
		{"id":"bad","tool":"op","args":{"fail":"boom"},"dependsOn":["prep"]},
		{"id":"next","tool":"op","args":{},"dependsOn":["bad"]}
	]`
	cases := []struct {
		name   string
		dec    *RecoveryDecision
		status RunStatus
		check  func(t *testing.T, st RunState, h *harness)
	}{
		{"retry_with_changes", &RecoveryDecision{Action: RecoverRetryWithChanges, Reason: "drop the failure",
			Step: &plans.Step{ID: "bad", Tool: "op", Args: json.RawMessage(`{"out":{"fixed":1}}`), DependsOn: []string{"prep"}}},
			RunCompleted, func(t *testing.T, st RunState, h *harness) {
				wantStatus(t, st, map[string]StepStatus{"bad": StepCompleted, "next": StepCompleted})
				if o := string(stepState(t, st, "bad").Output); o != `{"fixed":1}` {
					t.Errorf("bad output %s", o)
				}
			}},
		{"insert_recovery_steps", &RecoveryDecision{Action: RecoverInsertSteps, Reason: "fix first",
			Steps: []*plans.Step{{ID: "fix", Tool: "op", Args: json.RawMessage(`{}`), DependsOn: []string{"prep"}}}},
			// bad still fails after the fix; the planner's second answer
			// repeats the insert, which is invalid (duplicate id): abort.
			RunFailed, func(t *testing.T, st RunState, h *harness) {
				wantStatus(t, st, map[string]StepStatus{"fix": StepCompleted, "bad": StepFailed, "next": StepBlocked})
				if want := []string{"prep", "bad", "fix", "bad"}; !slices.Equal(h.order, want) {
					t.Errorf("order %v, want %v", h.order, want)
				}
				if fp := st.FinalPlan.Step("bad"); fp == nil || !slices.Contains(fp.DependsOn, "fix") {
					t.Errorf("bad should depend on fix: %+v", fp)
				}
			}},
		{"redesign_remaining_plan", &RecoveryDecision{Action: RecoverRedesign, Reason: "other way",
			Steps: []*plans.Step{{ID: "alt", Tool: "op", Args: json.RawMessage(`{}`), DependsOn: []string{"prep"}}}},
			RunCompleted, func(t *testing.T, st RunState, h *harness) {
				wantStatus(t, st, map[string]StepStatus{"alt": StepCompleted, "bad": StepSkipped})
				for _, s := range st.Steps {
					if s.ID == "next" {
						t.Error("next should have been replaced")
					}
				}
			}},
		{"fail_gracefully", &RecoveryDecision{Action: RecoverFailGracefully, Reason: "cannot fix this"},
			RunFailed, func(t *testing.T, st RunState, h *harness) {
				if !strings.Contains(st.Error, "cannot fix this") {
					t.Errorf("error %q", st.Error)
				}
			}},
		{"invalid decision", &RecoveryDecision{Action: RecoverInsertSteps, Reason: "bad steps",
			Steps: []*plans.Step{{ID: "x", Tool: "nope"}}},
			RunFailed, func(t *testing.T, st RunState, h *harness) {
				if !strings.Contains(st.Error, "rejected") {
					t.Errorf("error %q", st.Error)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness()
				pl := &fakePlanner{recover: func(req RecoveryRequest) (*RecoveryDecision, error) {
					if req.StepID != "bad" || !strings.Contains(req.Error, "boom") || req.Completed["prep"] == nil {
						return nil, errors.New("unexpected request")
					}
					return c.dec, nil
				}}
				st, rec := runPlan(t, New(Config{Tools: h.reg, Planner: pl}), mkPlan(t, base), RunOptions{})
				if st.Status != c.status {
					t.Fatalf("status %s, want %s (%s)", st.Status, c.status, st.Error)
				}
				c.check(t, st, h)
				ups := rec.of(EventPlanUpdated)
				if c.dec.Action != RecoverFailGracefully && c.name != "invalid decision" {
					if len(ups) == 0 || ups[0].Reason != c.dec.Reason || ups[0].PlanVersion != st.OriginalPlan.Version+1 {
						t.Errorf("planUpdated %+v", ups)
					}
					h := st.FinalPlan.History
					if len(h) == 0 || h[len(h)-1].Source != "recovery" || h[len(h)-1].Action != c.dec.Action {
						t.Errorf("history %+v", h)
					}
				} else if len(ups) != 0 {
					t.Errorf("plan updated: %+v", ups)
				}
			})
		})
	}
}

// TestPlannerCallsCounted: the planner's model calls, counted through the
// run's budget, show in llmCalls, tokens and cost with the steps'.
func TestPlannerCallsCounted(t *testing.T) {
	h := newHarness()
	pl := &fakePlanner{recover: func(req RecoveryRequest) (*RecoveryDecision, error) {
		req.Budget.Add(Usage{InputTokens: 100, OutputTokens: 20, CostUSD: 0.5})
		return &RecoveryDecision{Action: RecoverFailGracefully, Reason: "cannot be fixed"}, nil
	}}
	p := mkPlan(t, `[{"id":"bad","tool":"op","args":{"fail":"boom"}}]`)
	st, _ := runPlan(t, New(Config{Tools: h.reg, Planner: pl}), p, RunOptions{})
	if st.LLMCalls != 1 || st.Tokens != 120 || st.CostUSD != 0.5 {
		t.Fatalf("llmCalls %d, tokens %d, cost %v; want 1, 120, 0.5 (status %s, %s)", st.LLMCalls, st.Tokens, st.CostUSD, st.Status, st.Error)
	}
}

// scriptedFailure answers OnFailure from a list.
type scriptedFailure struct {
	mu      sync.Mutex
	actions []FailureAction
	asked   []string
}

func (s *scriptedFailure) OnFailure(ctx context.Context, runID, stepID string, err error) (FailureAction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, stepID+": "+err.Error())
	a := s.actions[0]
	s.actions = s.actions[1:]
	return a, nil
}

func TestSchedFailureHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		fh := &scriptedFailure{actions: []FailureAction{FailRetry, FailSkip}}
		p := mkPlan(t, `[
			{"id":"bad","tool":"op","args":{"fail":"boom"}},
			{"id":"next","tool":"op","args":{},"dependsOn":["bad"]},
			{"id":"ind","tool":"op","args":{}}
		]`)
		// The planner errs, so the handler is asked: retry, then skip.
		pl := &fakePlanner{recover: func(RecoveryRequest) (*RecoveryDecision, error) { return nil, errors.New("model down") }}
		st, _ := runPlan(t, New(Config{Tools: h.reg, OnFailure: fh, Planner: pl}), p, RunOptions{})
		// A failed step the user skipped leaves the run partial, not completed.
		if st.Status != RunPartial {
			t.Fatalf("status %s %s", st.Status, st.Error)
		}
		wantStatus(t, st, map[string]StepStatus{"bad": StepSkipped, "next": StepBlocked, "ind": StepCompleted})
		if h.callCount("bad") != 2 || len(fh.asked) != 2 || len(pl.recovers) != 2 {
			t.Errorf("bad ran %d times; handler asked %v; planner asked %d times", h.callCount("bad"), fh.asked, len(pl.recovers))
		}
	})
}

func TestSchedRePlan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		pl := &fakePlanner{replan: func(req RePlanRequest) ([]*plans.Step, error) {
			switch req.Iteration {
			case 1:
				return []*plans.Step{
					{ID: "look", Tool: "op", Args: json.RawMessage(`{"out":{"found":"x"}}`)},
					{ID: "use", Tool: "op", Args: json.RawMessage(`{"out":"${look.found}","more":"again"}`), DependsOn: []string{"look", "scan", "ghost"}},
				}, nil
			default:
				return nil, errors.New("planner broke")
			}
		}}
		p := mkPlan(t, `[
			{"id":"scan","tool":"op","args":{"more":"need the config"}},
			{"id":"other","tool":"op","args":{"more":"me too"},"dependsOn":["scan"]}
		]`)
		st, rec := runPlan(t, New(Config{Tools: h.reg, Planner: pl}), p, RunOptions{})
		if st.Status != RunCompleted {
			t.Fatalf("%s %s", st.Status, st.Error)
		}
		wantStatus(t, st, map[string]StepStatus{"_rp1_look": StepCompleted, "_rp1_use": StepCompleted})
		if o := string(stepState(t, st, "_rp1_use").Output); o != `"x"` {
			t.Errorf("renamed reference: output %s", o)
		}
		use := st.FinalPlan.Step("_rp1_use")
		if use == nil || !slices.Equal(use.DependsOn, []string{"_rp1_look", "scan"}) {
			t.Errorf("use deps %v", use)
		}
		if look := st.FinalPlan.Step("_rp1_look"); look == nil || !slices.Equal(look.DependsOn, []string{"scan"}) {
			t.Errorf("look deps %v", look)
		}
		if len(pl.replans) != 2 || pl.replans[0].Suggestion != "need the config" || pl.replans[0].StepID != "scan" {
			t.Errorf("replans %+v", pl.replans)
		}
		if st.RePlanIterations != 1 || st.OriginalPlan == nil || len(st.OriginalPlan.Steps) != 2 || len(st.FinalPlan.Steps) != 4 {
			t.Errorf("iterations %d original %d final %d", st.RePlanIterations, len(st.OriginalPlan.Steps), len(st.FinalPlan.Steps))
		}
		if ups := rec.of(EventPlanUpdated); len(ups) != 1 || !strings.Contains(ups[0].Reason, "need the config") {
			t.Errorf("updates %+v", ups)
		}
	})
}

func TestSchedRePlanBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		n := 0
		pl := &fakePlanner{replan: func(req RePlanRequest) ([]*plans.Step, error) {
			n++
			return []*plans.Step{{ID: "again", Tool: "op", Args: json.RawMessage(`{"more":"more"}`)}}, nil
		}}
		one := 1
		st, _ := runPlan(t, New(Config{Tools: h.reg, Planner: pl}), mkPlan(t, `[{"id":"s","tool":"op","args":{"more":"x"}}]`), RunOptions{MaxRePlans: &one})
		if n != 1 || st.RePlanIterations != 1 || len(st.Steps) != 2 {
			t.Errorf("planner asked %d times, iterations %d, steps %d", n, st.RePlanIterations, len(st.Steps))
		}
		n = 0
		st, _ = runPlan(t, New(Config{Tools: h.reg, Planner: pl}), mkPlan(t, `[{"id":"s","tool":"op","args":{"more":"x"}}]`), RunOptions{})
		if n != plans.DefaultMaxRePlans || st.RePlanIterations != plans.DefaultMaxRePlans || st.Status != RunCompleted {
			t.Errorf("default: planner asked %d times, iterations %d", n, st.RePlanIterations)
		}
	})
}

// addRule adds one step after a step whose output says so.
type addRule struct{ added int }

func (r *addRule) Name() string { return "follow-up" }
func (r *addRule) After(p *plans.Plan, step *plans.Step, st StepState) ([]*plans.Step, string) {
	if st.Status != StepCompleted || !strings.Contains(string(st.Output), "follow") || p.Step(step.ID+"_f") != nil {
		return nil, ""
	}
	r.added++
	return []*plans.Step{{ID: step.ID + "_f", Tool: "op", Args: json.RawMessage(`{}`), DependsOn: []string{step.ID}}}, "output asked for a follow-up"
}

func TestSchedUpdateRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		rule := &addRule{}
		p := mkPlan(t, `[
			{"id":"a","tool":"op","args":{"out":"follow"}},
			{"id":"b","tool":"op","args":{}}
		]`)
		st, rec := runPlan(t, New(Config{Tools: h.reg, Rules: []UpdateRule{rule}}), p, RunOptions{})
		if st.Status != RunCompleted || rule.added != 1 {
			t.Fatalf("%s added %d", st.Status, rule.added)
		}
		wantStatus(t, st, map[string]StepStatus{"a_f": StepCompleted})
		ups := rec.of(EventPlanUpdated)
		if len(ups) != 1 || ups[0].Reason != "follow-up: output asked for a follow-up" {
			t.Errorf("updates %+v", ups)
		}
		if h := st.FinalPlan.History; len(h) == 0 || h[len(h)-1].Source != "rule" || !slices.Equal(h[len(h)-1].StepIDs, []string{"a_f"}) {
			t.Errorf("history %+v", h)
		}
	})
}

type panicRule struct{}

func (panicRule) Name() string { return "broken" }
func (panicRule) After(*plans.Plan, *plans.Step, StepState) ([]*plans.Step, string) {
	panic("rule bug")
}

func TestSchedPanickingHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		pl := &fakePlanner{recover: func(RecoveryRequest) (*RecoveryDecision, error) { panic("planner bug") }}
		p := mkPlan(t, `[
			{"id":"ok","tool":"op","args":{}},
			{"id":"bad","tool":"op","args":{"fail":"boom"},"dependsOn":["ok"]}
		]`)
		st, _ := runPlan(t, New(Config{Tools: h.reg, Planner: pl, Rules: []UpdateRule{panicRule{}}}), p, RunOptions{})
		if st.Status != RunFailed || !strings.Contains(st.Error, "boom") || len(pl.recovers) != 1 {
			t.Errorf("status %s error %q recovers %d", st.Status, st.Error, len(pl.recovers))
		}
		wantStatus(t, st, map[string]StepStatus{"ok": StepCompleted})
	})
}
