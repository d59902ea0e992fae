package rpc

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/agentd/agentd/engine"
)

const proposalPlan = `{"title": "propose", "steps": [
  {"id": "edit", "tool": "edit_file", "args": {"path": "notes.txt", "edits": [
    {"oldText": "line 2\n", "newText": "line two\n"},
    {"oldText": "line 19\n", "newText": "line nineteen\n"}]}}
]}`

// proposalScenario is a workspace with notes.txt and the plan above, a
// started editor and an initialized server; inline asks for the change set
// in changeProposed.
func proposalScenario(t *testing.T, review string, inline bool) *scenario {
	t.Helper()
	ar := &txtar.Archive{Files: []txtar.File{{Name: "plan.json", Data: []byte(proposalPlan)}}}
	sc := &scenario{t: t, ar: ar, root: t.TempDir(), stateDir: t.TempDir(), buffers: map[string]string{}, version: map[string]int{}}
	text := ""
	for i := 1; i <= 24; i++ {
		text += fmt.Sprintf("line %d\n", i)
	}
	if err := os.WriteFile(filepath.Join(sc.root, "notes.txt"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRepo(t, sc.root)
	sc.start()
	features := map[string]any{"approvalRequest": true, "changeReview": true}
	if inline {
		features["inlineChanges"] = true
	}
	sc.ed.mustCall("initialize", map[string]any{
		"processId": nil, "rootUri": pathToURI(sc.root),
		"capabilities":          map[string]any{"window": map[string]any{"workDoneProgress": true}, "workspace": map[string]any{"applyEdit": true}},
		"initializationOptions": map[string]any{"review": review, "clientFeatures": features},
	}, nil)
	sc.ed.notify("initialized", map[string]any{})
	sc.do(0, "load plan.json")
	return sc
}

// proposedEvents returns the changeProposed notifications received so far.
func proposedEvents(ed *editor) []RunEventParams {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	var out []RunEventParams
	for _, n := range ed.notes {
		if n.Method != "agentd/run/didChange" {
			continue
		}
		var p RunEventParams
		if err := json.Unmarshal(n.Params, &p); err == nil && p.Event.Type == engine.EventChangeProposed {
			out = append(out, p)
		}
	}
	return out
}

// checkProposal checks that a changeProposed event names a set that
// agentd/changes/get finds at once, and, when inline, carries that set.
func checkProposal(t *testing.T, sc *scenario, p RunEventParams, inline bool) {
	t.Helper()
	var got ChangeSetInfo
	if err := sc.ed.call("agentd/changes/get", map[string]any{"changeId": p.Event.ChangeID}, &got); err != nil {
		t.Fatalf("agentd/changes/get right after changeProposed: %v", err)
	}
	if !inline {
		if p.Change != nil {
			t.Errorf("changeProposed carries the change set although the client did not ask for it")
		}
		return
	}
	if p.Change == nil {
		t.Fatalf("changeProposed has no change set (clientFeatures.inlineChanges): %+v", p)
	}
	if p.Change.ID != p.Event.ChangeID || len(p.Change.Files) != 1 || len(p.Change.Files[0].Hunks) != 2 {
		t.Fatalf("inline change set = %+v, want change %s with 1 file and 2 hunks", p.Change, p.Event.ChangeID)
	}
	for _, h := range p.Change.Files[0].Hunks {
		if h.OldText == nil || h.NewText == nil || len(h.WordDiff) == 0 {
			t.Errorf("inline hunk %s lacks texts or word diff: %+v", h.ID, h)
		}
	}
	for i := range got.Files {
		if p.Change.Files[i].Patch != nil {
			t.Errorf("inline file %s carries its patch", p.Change.Files[i].URI)
		}
		got.Files[i].Patch = nil // the one field left out
	}
	if !reflect.DeepEqual(*p.Change, got) {
		t.Errorf("inline change set differs from agentd/changes/get:\ninline %+v\nget    %+v", *p.Change, got)
	}
}

// In review "after" the step asks for approval before it writes, and the
// change set is registered only once written. changeProposed must not reach
// the editor before that: not before the approval is answered, and, once
// it arrives, agentd/changes/get finds the set.
func TestChangeProposedAfterItsSetIsRegistered(t *testing.T) {
	for _, inline := range []bool{true, false} {
		name := "get"
		if inline {
			name = "inline"
		}
		t.Run("after/"+name, func(t *testing.T) {
			sc := proposalScenario(t, "after", inline)
			sc.do(0, "start")
			r := sc.ed.nextRequest("agentd/approval/request")
			if got := proposedEvents(sc.ed); len(got) != 0 {
				t.Errorf("changeProposed arrived before the change set could exist (the approval was not answered yet): %+v", got[0].Event)
			}
			r.answer(ApprovalResult{Outcome: "selected", OptionID: "allow_once"}, nil)
			p := sc.waitEvent("changeProposed", map[string]string{"step": "edit"})
			checkProposal(t, sc, p, inline)
			sc.do(0, "expect-run completed")
		})
	}
	t.Run("before/inline", func(t *testing.T) {
		sc := proposalScenario(t, "before", true)
		sc.do(0, "start")
		p := sc.waitEvent("changeProposed", map[string]string{"step": "edit"})
		checkProposal(t, sc, p, true)
		sc.changeID = p.Event.ChangeID
		sc.do(0, "resolve accept")
		sc.do(0, "expect-run completed")
	})
}

// A change set that is never registered still has its changeProposed sent,
// without the set, before the event that ends its step: when the approval
// is refused, and in review "none".
func TestChangeProposedWithoutReview(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		sc := proposalScenario(t, "after", true)
		sc.do(0, "start")
		sc.do(0, "answer-approval reject_once step=edit")
		p := sc.waitEvent("changeProposed", map[string]string{"step": "edit"})
		if p.Change != nil {
			t.Errorf("a refused change carries a change set: %+v", p.Change)
		}
		var cs ChangeSetInfo
		if err := sc.ed.call("agentd/changes/get", map[string]any{"changeId": p.Event.ChangeID}, &cs); errCode(err) != CodeNotFound {
			t.Errorf("agentd/changes/get of a refused change: %v, want not found (%d)", err, CodeNotFound)
		}
		// A refused approval skips the step: the run is partial (issue 13).
		sc.expectStepEndAfter(p, "partial")
	})
	t.Run("none", func(t *testing.T) {
		// Review none applies file changes without asking, in every front
		// end (session.RunRequest; it used to ask here, not at the
		// terminal): the run completes with no question answered.
		sc := proposalScenario(t, "none", true)
		sc.do(0, "start")
		p := sc.waitEvent("changeProposed", map[string]string{"step": "edit"})
		if p.Change != nil {
			t.Errorf("review none: changeProposed carries a change set: %+v", p.Change)
		}
		sc.expectStepEndAfter(p, "completed")
		for more := true; more; {
			select {
			case r := <-sc.ed.reqs:
				if r.Method == "agentd/approval/request" {
					t.Errorf("review none asked for approval: %s", r.Params)
				}
			default:
				more = false
			}
		}
	})
}

// expectStepEndAfter checks that the run ends with status and that the
// event ending p's step comes after p.
func (sc *scenario) expectStepEndAfter(p RunEventParams, status string) {
	sc.t.Helper()
	sc.do(0, "expect-run "+status)
	sc.ed.mu.Lock()
	defer sc.ed.mu.Unlock()
	seenProposal := false
	for _, n := range sc.ed.notes {
		var e RunEventParams
		if n.Method != "agentd/run/didChange" || json.Unmarshal(n.Params, &e) != nil {
			continue
		}
		switch {
		case e.Event.Seq == p.Event.Seq:
			seenProposal = true
		case e.Event.StepID == p.Event.StepID && e.Event.Type != engine.EventStepStarted && e.Event.Type != engine.EventApprovalPending &&
			e.Event.Type != engine.EventStepProgress && e.Event.Type != engine.EventStepOutput && !seenProposal:
			sc.t.Errorf("%s of step %s came before its changeProposed", e.Event.Type, e.Event.StepID)
		}
	}
}
