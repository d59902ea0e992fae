package main

import (
	"testing"

	"github.com/agentd/agentd/internal/fakemodel"
)

// TestServeChatTurnsCountTheirTokens drives the built binary over the
// fake model server (engine/llm's HTTP provider parses the usage its
// replies report): a plan turn records the tokens of the call that made
// its plan, a question turn the sum over its calls (a read, then the
// answer); agentd/chat/ask's result and agentd/chat/load show them.
func TestServeChatTurnsCountTheirTokens(t *testing.T) {
	ws := demoCopy(t)
	srv := fakemodel.New()
	url := srv.Start(t)
	srv.Push(
		fakemodel.Reply{Text: `{"title":"List","steps":[{"id":"l","tool":"list_dir","args":{"path":"."}}]}`, InputTokens: 1200, OutputTokens: 34},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "read_file", Args: `{"path":"greet/greet.go","why":"the greeting"}`}}, InputTokens: 500, OutputTokens: 20},
		fakemodel.Reply{Text: "It greets.", InputTokens: 700, OutputTokens: 9},
	)
	c := startServe(t, "XDG_CONFIG_HOME="+t.TempDir(), "AGENTD_MODEL=openai:test-model",
		"OPENAI_BASE_URL="+url+"/v1", "OPENAI_API_KEY=sk-test-serve")
	initialize(c, ws)
	chat := c.call("agentd/chat/new", map[string]any{})
	id, _ := chat["result"].(map[string]any)["chatId"].(string)
	if r := c.call("agentd/plan/create", map[string]any{"request": "list the files", "chatId": id, "exploreRounds": -1, "mapTokens": -1}); r["error"] != nil {
		t.Fatalf("plan/create: %v", r["error"])
	}
	r := c.call("agentd/chat/ask", map[string]any{"chatId": id, "question": "what does Hello do?"})
	if r["error"] != nil {
		t.Fatalf("chat/ask: %v", r["error"])
	}
	want := map[string]any{"input": float64(1200), "output": float64(34)}
	wantAsk := map[string]any{"input": float64(1200), "output": float64(29)}
	if got, _ := r["result"].(map[string]any)["tokens"].(map[string]any); !sameTokens(got, wantAsk) {
		t.Errorf("chat/ask's turn tokens %v, want %v", got, wantAsk)
	}
	load := c.call("agentd/chat/load", map[string]any{"chatId": id})
	turns, _ := load["result"].(map[string]any)["turns"].([]any)
	if len(turns) != 2 {
		t.Fatalf("chat/load: %v", load)
	}
	for i, w := range []map[string]any{want, wantAsk} {
		if got, _ := turns[i].(map[string]any)["tokens"].(map[string]any); !sameTokens(got, w) {
			t.Errorf("turn %d's tokens %v, want %v", i, got, w)
		}
	}
}

func sameTokens(a, b map[string]any) bool {
	return a != nil && a["input"] == b["input"] && a["output"] == b["output"]
}

// TestServeChatTurnsCostWhereThePriceIsKnown: a turn's tokens carry their
// cost in USD, summed over its calls by the price table (gpt-4o: $2.5
// and $10 a million), and no cost for a model without a price.
func TestServeChatTurnsCostWhereThePriceIsKnown(t *testing.T) {
	for _, tc := range []struct {
		model string
		cost  any
	}{{"gpt-4o", (1200*2.5 + 34*10 + 1200*2.5 + 29*10) / 1e6}, {"test-model", nil}} {
		t.Run(tc.model, func(t *testing.T) {
			ws := demoCopy(t)
			srv := fakemodel.New()
			url := srv.Start(t)
			srv.Push(
				fakemodel.Reply{Text: `{"title":"List","steps":[{"id":"l","tool":"list_dir","args":{"path":"."}}]}`, InputTokens: 1200, OutputTokens: 34},
				fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "read_file", Args: `{"path":"greet/greet.go","why":"the greeting"}`}}, InputTokens: 500, OutputTokens: 20},
				fakemodel.Reply{Text: "It greets.", InputTokens: 700, OutputTokens: 9},
			)
			c := startServe(t, "XDG_CONFIG_HOME="+t.TempDir(), "AGENTD_MODEL=openai:"+tc.model,
				"OPENAI_BASE_URL="+url+"/v1", "OPENAI_API_KEY=sk-test-serve")
			initialize(c, ws)
			chat := c.call("agentd/chat/new", map[string]any{})
			id, _ := chat["result"].(map[string]any)["chatId"].(string)
			if r := c.call("agentd/plan/create", map[string]any{"request": "list the files", "chatId": id, "exploreRounds": -1, "mapTokens": -1}); r["error"] != nil {
				t.Fatalf("plan/create: %v", r["error"])
			}
			if r := c.call("agentd/chat/ask", map[string]any{"chatId": id, "question": "what does Hello do?"}); r["error"] != nil {
				t.Fatalf("chat/ask: %v", r["error"])
			}
			load := c.call("agentd/chat/load", map[string]any{"chatId": id})
			turns, _ := load["result"].(map[string]any)["turns"].([]any)
			if len(turns) != 2 {
				t.Fatalf("chat/load: %v", load)
			}
			var sum float64
			for i, tr := range turns {
				tk, _ := tr.(map[string]any)["tokens"].(map[string]any)
				cost, has := tk["cost"]
				if tc.cost == nil {
					if has {
						t.Errorf("turn %d of a model without a price has a cost: %v", i, tk)
					}
					continue
				}
				f, _ := cost.(float64)
				sum += f
			}
			if want, ok := tc.cost.(float64); ok && (sum < want*0.999 || sum > want*1.001) {
				t.Errorf("the turns cost %v in all, want %v (%v)", sum, want, turns)
			}
		})
	}
}
