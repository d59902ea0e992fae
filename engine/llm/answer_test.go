package llm

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/internal/fakemodel"
)

// TestAnswerReadsThenAnswersInWords: a question is answered after the
// model reads the workspace with the read-only tools; the answer streams,
// no plan schema is asked for, no write tool is offered, and nothing is
// written.
func TestAnswerReadsThenAnswersInWords(t *testing.T) {
	for _, model := range []string{"openai:gpt-4o", "anthropic:claude-sonnet-4"} {
		t.Run(model, func(t *testing.T) {
			ws := newWorkspace(t, exploreFiles)
			srv := fakemodel.New()
			srv.Push(
				fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{
					{ID: "c1", Name: "read_file", Args: `{"path":"cart/discount.go","why":"the discount rule"}`},
				}},
				fakemodel.Reply{Text: "The discount is a tenth of the total (`cart/discount.go`, `Discount`)."},
			)
			var mu sync.Mutex
			var streamed strings.Builder
			var prog progressLog
			pl := NewPlanner(tcpSettings(t, srv, model), tools.Builtin())
			ans, err := pl.Answer(context.Background(), CreateRequest{Request: "how is the discount computed?", Workspace: ws,
				OnProgress: prog.add, OnText: func(s string) { mu.Lock(); streamed.WriteString(s); mu.Unlock() }})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(ans.Text, "a tenth of the total") {
				t.Errorf("answer %q", ans.Text)
			}
			if len(ans.Context) != 1 || ans.Context[0].Tool != "read_file" || ans.Context[0].Why != "the discount rule" {
				t.Errorf("context %+v", ans.Context)
			}
			if len(ans.Read) != 1 || !strings.Contains(ans.Read[0], "cart/discount.go") || !strings.HasSuffix(ans.Read[0], "(the discount rule)") {
				t.Errorf("read %q", ans.Read)
			}
			mu.Lock()
			if !strings.Contains(streamed.String(), "a tenth of the total") {
				t.Errorf("the answer did not stream: %q", streamed.String())
			}
			mu.Unlock()
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model calls, want 2", len(reqs))
			}
			if got := strings.Join(toolNames(reqs[0]), ","); got != "read_file,list_dir,search_files,search_code" {
				t.Errorf("tools offered while answering: %s", got)
			}
			first := messagesOf(reqs[0])
			if !strings.Contains(first, "## Question") || !strings.Contains(first, "how is the discount computed?") || !strings.Contains(first, "answer in words") {
				t.Errorf("first prompt: %s", first)
			}
			for i, r := range reqs {
				if r.JSON["response_format"] != nil || strings.Contains(string(r.Body), `"plan"`) {
					t.Errorf("request %d asks for a plan: %s", i, r.Body)
				}
			}
			if !strings.Contains(messagesOf(reqs[1]), "MaxDiscount") {
				t.Error("the file read did not reach the model")
			}
		})
	}
}

// TestAnswerWhenTheRoundsAreUsedUp: a model that keeps exploring is asked
// for the answer in words, not for a plan.
func TestAnswerWhenTheRoundsAreUsedUp(t *testing.T) {
	ws := newWorkspace(t, exploreFiles)
	srv := fakemodel.New()
	srv.Handle(func(r fakemodel.Request) fakemodel.Reply {
		if len(toolNames(r)) == 0 {
			return fakemodel.Reply{Text: "It sums the items."}
		}
		return fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "x", Name: "list_dir", Args: `{"path":"."}`}}}
	})
	pl := NewPlanner(tcpSettings(t, srv, "openai:gpt-4o"), tools.Builtin())
	ans, err := pl.Answer(context.Background(), CreateRequest{Request: "what does Total do?", Workspace: ws, ExploreRounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ans.Text != "It sums the items." {
		t.Errorf("answer %q", ans.Text)
	}
	reqs := srv.Requests()
	last := messagesOf(reqs[len(reqs)-1])
	if !strings.Contains(last, "Answer the question now, in words") || strings.Contains(last, "with the plan") {
		t.Errorf("final call: %s", last)
	}
}
