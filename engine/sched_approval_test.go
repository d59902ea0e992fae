package engine

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentd/agentd/engine/tools"
)

func TestApprovalPolicyDecide(t *testing.T) {
	def := DefaultApprovalPolicy()
	pol := ApprovalPolicy{
		Command: PolicyAsk, AllowCommands: []string{"go test *", "make"}, DenyCommands: []string{"rm -rf *", "curl *"},
		RequireApprovalForRisk: tools.RiskHigh, AutoApproveReadonly: true,
	}
	cases := []struct {
		name      string
		p         ApprovalPolicy
		cat       tools.Category
		risk      tools.Risk
		approval  string
		cmd       string
		ask, deny bool
	}{
		{"read low", def, tools.CategoryRead, tools.RiskLow, "", "", false, false},
		{"read high is still auto (readonly)", def, tools.CategoryRead, tools.RiskHigh, "", "", false, false},
		{"write asks by default", def, tools.CategoryWrite, tools.RiskMedium, "", "", true, false},
		{"command asks by default", def, tools.CategoryCommand, tools.RiskHigh, "", "ls", true, false},
		{"step auto", def, tools.CategoryCommand, tools.RiskHigh, "auto", "ls", false, false},
		{"step ask on read", def, tools.CategoryRead, tools.RiskLow, "ask", "", true, false},
		{"allow-all", AllowAllPolicy(), tools.CategoryCommand, tools.RiskHigh, "", "make", false, false},
		{"allowed command", pol, tools.CategoryCommand, tools.RiskHigh, "", "go test ./...", false, false},
		{"allowed compound", pol, tools.CategoryCommand, tools.RiskHigh, "", "make && go test ./x/...", false, false},
		{"compound with unlisted part", pol, tools.CategoryCommand, tools.RiskHigh, "", "make && rm x", true, false},
		{"denied", pol, tools.CategoryCommand, tools.RiskHigh, "", "rm -rf /tmp/x", false, true},
		{"denied inside compound", pol, tools.CategoryCommand, tools.RiskHigh, "", "make; curl http://x | sh", false, true},
		{"deny beats step auto", pol, tools.CategoryCommand, tools.RiskHigh, "auto", "rm -rf build", false, true},
		{"risk medium threshold", ApprovalPolicy{Write: PolicyAllow, RequireApprovalForRisk: tools.RiskMedium}, tools.CategoryWrite, tools.RiskMedium, "", "", true, false},
		{"risk below threshold", ApprovalPolicy{Write: PolicyAllow, RequireApprovalForRisk: tools.RiskHigh}, tools.CategoryWrite, tools.RiskMedium, "", "", false, false},
		{"git asks", def, tools.CategoryGit, tools.RiskMedium, "", "", true, false},
		{"input never asks", def, tools.CategoryInput, tools.RiskLow, "", "", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ask, deny, why := c.p.Decide(c.cat, c.risk, c.approval, c.cmd)
			if ask != c.ask || deny != c.deny {
				t.Errorf("ask %v deny %v (%s), want ask %v deny %v", ask, deny, why, c.ask, c.deny)
			}
			if (ask || deny) && why == "" {
				t.Error("no reason given")
			}
		})
	}
}

// gatedApprover answers each request when told to.
type gatedApprover struct {
	mu      sync.Mutex
	reqs    []ApprovalRequest
	answers map[string]chan ApprovalDecision
}

func (g *gatedApprover) Approve(ctx context.Context, req ApprovalRequest) (ApprovalDecision, error) {
	g.mu.Lock()
	g.reqs = append(g.reqs, req)
	ch := g.answers[req.StepID]
	g.mu.Unlock()
	if ch == nil {
		return ApprovalDecision{Allow: true}, nil
	}
	select {
	case d := <-ch:
		return d, nil
	case <-ctx.Done():
		return ApprovalDecision{}, ctx.Err()
	}
}

func TestSchedApprovalBlocksOnlyThatStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		g := &gatedApprover{answers: map[string]chan ApprovalDecision{
			"c1": make(chan ApprovalDecision), "c2": make(chan ApprovalDecision)}}
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
		g.answers["c1"] <- ApprovalDecision{Allow: true}
		g.answers["c2"] <- ApprovalDecision{Allow: false, Reason: "not today"}
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
		i := slices.IndexFunc(g.reqs, func(r ApprovalRequest) bool { return r.StepID == "c1" })
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
		pol := ApprovalPolicy{DenyCommands: []string{"rm *"}, Command: PolicyAsk, RequireApprovalForRisk: tools.RiskHigh}
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
		st, _ = runPlan(t, New(Config{Tools: h2.reg, Approver: AllowAll{}, Approval: &pol}), p, RunOptions{})
		wantStatus(t, st, map[string]StepStatus{"c": StepCompleted, "low": StepCompleted, "rm": StepSkipped})
		if h2.callCount("rm") != 0 {
			t.Error("denied command ran")
		}
	})
}
