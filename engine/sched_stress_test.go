package engine

import (
	"encoding/json"
	"fmt"
	"github.com/agentd/agentd/engine/plans"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
)

// TestSchedRandomDAGs runs random plans with random sleeps, failures and
// retries and checks the scheduler's invariants on each.
func TestSchedRandomDAGs(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 7))
				h := newHarness()
				p := &plans.Plan{Title: "random"}
				n := 60 + r.IntN(60)
				for i := range n {
					a := opArgs{Sleep: fmt.Sprintf("%dms", 1+r.IntN(300))}
					switch r.IntN(10) {
					case 0:
						a.Fail = "flaky"
						a.Retryable, a.FailTimes = true, 1
					case 1:
						a.Fail = "broken"
					}
					raw, _ := json.Marshal(a)
					no := false
					s := &plans.Step{ID: fmt.Sprintf("s%d", i), Tool: "op", Args: raw, Critical: &no,
						Retry: &plans.Retry{Max: 1, Delay: "10ms"}}
					for range r.IntN(3) {
						if i > 0 {
							d := fmt.Sprintf("s%d", r.IntN(i))
							if !slices.Contains(s.DependsOn, d) {
								s.DependsOn = append(s.DependsOn, d)
							}
						}
					}
					p.Steps = append(p.Steps, s)
				}
				maxPar := 1 + r.IntN(6)
				st, rec := runPlan(t, New(Config{Tools: h.reg}), p, RunOptions{MaxParallel: maxPar})
				if st.Status != RunCompleted && st.Status != RunPartial {
					t.Fatalf("status %s: %s", st.Status, st.Error)
				}
				if h.maxRun > maxPar {
					t.Errorf("%d steps ran at once, maxParallel %d", h.maxRun, maxPar)
				}
				byID := map[string]StepState{}
				for _, s := range st.Steps {
					byID[s.ID] = s
					if !isDone(s.Status) {
						t.Errorf("step %s ended %s", s.ID, s.Status)
					}
				}
				for _, s := range p.Steps {
					ss := byID[s.ID]
					for _, d := range s.DependsOn {
						ds := byID[d]
						switch {
						case ss.Status == StepCompleted && ds.Status != StepCompleted:
							t.Errorf("%s completed though its dependency %s is %s", s.ID, d, ds.Status)
						case ss.Status == StepCompleted && h.startOf(s.ID) < h.endOf(d):
							t.Errorf("%s started at %v before %s ended at %v", s.ID, h.startOf(s.ID), d, h.endOf(d))
						case ds.Status != StepCompleted && ss.Status != StepBlocked:
							t.Errorf("%s is %s though dependency %s is %s", s.ID, ss.Status, d, ds.Status)
						}
					}
				}
				total := st.CompletedSteps + st.FailedSteps + st.BlockedSteps + st.SkippedSteps
				if total != n || st.Progress != 1 {
					t.Errorf("counts add up to %d of %d, progress %v", total, n, st.Progress)
				}
				evs := rec.all()
				if evs[0].Type != EventRunStarted || evs[len(evs)-1].Type != EventRunFinished {
					t.Errorf("first %s last %s", evs[0].Type, evs[len(evs)-1].Type)
				}
				started := map[string]int{}
				for _, ev := range evs {
					if ev.Type == EventStepStarted {
						started[ev.StepID]++
					}
				}
				for id, c := range started {
					if c != byID[id].Attempts || c != h.callCount(id) {
						t.Errorf("%s: %d start events, %d attempts, %d calls", id, c, byID[id].Attempts, h.callCount(id))
					}
				}
			})
		})
	}
}
