package llm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/internal/fakemodel"
)

// An agent step adds the user's guidance as a user message before its
// next model call, once: the second call carries it, the first did not.
func TestAgentStepGivesGuidanceBeforeItsNextCall(t *testing.T) {
	for _, model := range []string{"openai:gpt-4o", "anthropic:claude-sonnet-4"} {
		t.Run(model, func(t *testing.T) {
			srv := fakemodel.New()
			srv.Push(
				fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "op", Args: `{}`}}},
				fakemodel.Reply{Text: "done"},
			)
			var pending []string
			sm := NewStepModel(memSettings(srv, model, nil))
			step := &plans.Step{ID: "ag", Kind: plans.KindAgent, Prompt: "do it"}
			_, err := sm.RunStep(context.Background(), engine.ModelCall{Step: step, Prompt: "do it",
				Exec: func(ctx context.Context, tool string, args json.RawMessage) (*engine.ToolCallResult, error) {
					pending = append(pending, "keep the old name")
					return &engine.ToolCallResult{Output: "ok"}, nil
				},
				Guidance: func() []string { g := pending; pending = nil; return g }})
			if err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			words := engine.GuidancePrefix + "keep the old name"
			if strings.Contains(string(reqs[0].Body), words) || strings.Count(string(reqs[1].Body), words) != 1 {
				t.Errorf("the guidance is not in the second call only, once:\n%s\n%s", reqs[0].Body, reqs[1].Body)
			}
		})
	}
}

// The planner's next exploration call gets the guidance the same way.
func TestPlannerExplorationGivesGuidance(t *testing.T) {
	srv := fakemodel.New()
	srv.Push(
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "list_dir", Args: `{"path":".","why":"see"}`}}},
		fakemodel.Reply{Text: `{"title":"List","steps":[{"id":"l","tool":"list_dir","args":{"path":"."}}]}`},
	)
	ws := newWorkspace(t, map[string]string{"a.txt": "a\n"})
	p := NewPlanner(memSettings(srv, "openai:gpt-4o", nil), nil)
	given := false
	_, err := p.Create(context.Background(), CreateRequest{Request: "list", Workspace: ws, MapTokens: -1,
		OnProgress: func(pr Progress) {},
		Guidance: func() []string {
			if len(srv.Requests()) == 1 && !given {
				given = true
				return []string{"only the top level"}
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	words := engine.GuidancePrefix + "only the top level"
	if len(reqs) < 2 || strings.Contains(string(reqs[0].Body), words) || !strings.Contains(string(reqs[1].Body), words) {
		t.Fatalf("the planner's second call lacks the guidance (%d requests)", len(reqs))
	}
}
