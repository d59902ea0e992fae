package engine

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/tools"
)

// gatedApprover answers each request when told to.
type gatedApprover struct {
	mu      sync.Mutex
	reqs    []approval.ApprovalRequest
	answers map[string]chan approval.ApprovalDecision
}

func (g *gatedApprover) Approve(ctx context.Context, req approval.ApprovalRequest) (approval.ApprovalDecision, error) {
	g.mu.Lock()
	g.reqs = append(g.reqs, req)
	ch := g.answers[req.StepID]
	g.mu.Unlock()
	if ch == nil {
		return approval.ApprovalDecision{Allow: true}, nil
	}
	select {
	case d := <-ch:
		return d, nil
	case <-ctx.Done():
		return approval.ApprovalDecision{}, ctx.Err()
	}
}

func TestSchedApprovalBlocksOnlyThatStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		g := &gatedApprover{answers: map[string]chan approval.ApprovalDecision{
			"c1": make(chan approval.ApprovalDecision), "c2": make(chan approval.ApprovalDecision)}}
		e := New(Config{Tools: h.reg, Approver: g})
		p := mkPlan(t, `[
			{"id":"c1","tool":"cmd","args":{"command":"make build"}},
			{"id":"c1dep","tool":"op","args":{},"dependsOn":["c1"]},
			{"id":"c2","tool":"cmd","args":{"command":"make deploy"}},
			{"id":"c2dep","tool":"op","args":{},"dependsOn":["c2"]},
			{"id":"ind","tool":"op","args":{"sleep":"1s"}},
			{"id":"ind2","tool":"op","args":{"sleep":"1s"},"dependsOn":["ind"]}
		]`)
		rec := &recorder{}
		r, err := e.Start(t.Context(), p, RunOptions{Subscribers: []Subscriber{rec}})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		st := r.State()
		wantStatus(t, st, map[string]StepStatus{"c1": StepWaiting, "c2": StepWaiting, "ind": StepCompleted, "ind2": StepCompleted, "c1dep": StepPending})
		if h.callCount("c1") != 0 {
			t.Fatal("c1 ran before approval")
		}
		g.answers["c1"] <- approval.ApprovalDecision{Allow: true}
		g.answers["c2"] <- approval.ApprovalDecision{Allow: false, Reason: "not today"}
		fin, _ := r.Wait(t.Context())
		// A denied approval means the plan's work was not all done: the
		// run is partial, never completed.
		if fin.Status != RunPartial {
			t.Fatalf("status %s %s", fin.Status, fin.Error)
		}
		wantStatus(t, fin, map[string]StepStatus{"c1": StepCompleted, "c1dep": StepCompleted, "c2": StepSkipped, "c2dep": StepBlocked})
		if r := stepState(t, fin, "c2").Reason; !strings.Contains(r, "approval denied: not today") {
			t.Errorf("c2 reason %q", r)
		}
		if h.callCount("c2") != 0 {
			t.Error("denied command ran")
		}
		pend := rec.of(EventApprovalPending)
		if len(pend) != 2 || pend[0].Status != string(StepWaiting) {
			t.Errorf("approvalPending events %+v", pend)
		}
		i := slices.IndexFunc(g.reqs, func(r approval.ApprovalRequest) bool { return r.StepID == "c1" })
		if i < 0 || g.reqs[i].Command != "make build" || g.reqs[i].Category != tools.CategoryCommand || g.reqs[i].Risk != tools.RiskHigh {
			t.Errorf("requests %+v", g.reqs)
		}
	})
}

func TestSchedApprovalHeadlessAndPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		p := mkPlan(t, `[
			{"id":"c","tool":"cmd","args":{"command":"make"}},
			{"id":"auto","tool":"cmd","args":{"command":"make"},"approval":"auto"},
			{"id":"rm","tool":"cmd","args":{"command":"rm -rf /"},"approval":"auto"},
			{"id":"low","tool":"cmd","args":{"command":"echo hi"},"risk":"low"}
		]`)
		// No Approver: the headless default denies.
		pol := approval.ApprovalPolicy{DenyCommands: []string{"rm *"}, Command: approval.PolicyAsk, RequireApprovalForRisk: tools.RiskHigh}
		st, _ := runPlan(t, New(Config{Tools: h.reg}), p, RunOptions{Approval: &pol})
		wantStatus(t, st, map[string]StepStatus{"c": StepSkipped, "auto": StepCompleted, "rm": StepSkipped, "low": StepSkipped})
		if r := stepState(t, st, "c").Reason; !strings.Contains(r, "allow \"command\" in the approval policy") || strings.Contains(r, "--") {
			t.Errorf("headless denial should say how to allow, in no front end's flags: %q", r)
		}
		if r := stepState(t, st, "rm").Reason; !strings.Contains(r, "denyCommands") {
			t.Errorf("rm reason %q", r)
		}
		// AllowAll approves everything but denyCommands.
		h2 := newHarness()
		st, _ = runPlan(t, New(Config{Tools: h2.reg, Approver: approval.AllowAll{}, Approval: &pol}), p, RunOptions{})
		wantStatus(t, st, map[string]StepStatus{"c": StepCompleted, "low": StepCompleted, "rm": StepSkipped})
		if h2.callCount("rm") != 0 {
			t.Error("denied command ran")
		}
	})
}
