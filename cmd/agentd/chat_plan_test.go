package main

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/fakemodel"
)

// A chat's plan turn over the real planner and model client: the turn is
// in the chat as soon as planning starts, the planner's reads stream as
// agentd/chat/stream activity, and $/cancelRequest while the model hangs
// mid-exploration keeps the turn, with its request, as cancelled.
func TestServeChatPlanCancelledMidExplorationIsKept(t *testing.T) {
	ws := demoCopy(t)
	srv := fakemodel.New()
	url := srv.Start(t)
	srv.Push(
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "read_file", Args: `{"path":"greet/greet.go","why":"the greeting"}`}}},
		fakemodel.Reply{Fault: fakemodel.FaultHang},
	)
	c := startServe(t, "XDG_CONFIG_HOME="+t.TempDir(), "AGENTD_MODEL=openai:test-model",
		"OPENAI_BASE_URL="+url+"/v1", "OPENAI_API_KEY=sk-test-serve")
	initialize(c, ws)
	chat := c.call("agentd/chat/new", map[string]any{})
	id, _ := chat["result"].(map[string]any)["chatId"].(string)

	c.send(map[string]any{"id": 900, "method": "agentd/plan/create", "params": map[string]any{"request": "make the greeting say hi", "chatId": id, "mapTokens": -1}})
	for {
		m := c.read()
		if m["id"] != nil && m["method"] == nil {
			t.Fatalf("plan/create answered before it was cancelled: %v", m)
		}
		if m["method"] != "agentd/chat/stream" {
			continue
		}
		p := m["params"].(map[string]any)
		if p["chatId"] == id && p["turn"] == float64(0) && strings.Contains(p["activity"].(string), "greet/greet.go") {
			break
		}
	}
	// The model hangs on the next round: the planner is mid-exploration.
	c.send(map[string]any{"method": "$/cancelRequest", "params": map[string]any{"id": 900}})
	for {
		m := c.read()
		if m["id"] == float64(900) && m["method"] == nil {
			e, _ := m["error"].(map[string]any)
			if e == nil || e["code"] != float64(-32800) {
				t.Fatalf("the cancelled plan/create answered %v, want -32800", m)
			}
			break
		}
	}
	load := c.call("agentd/chat/load", map[string]any{"chatId": id})
	turns, _ := load["result"].(map[string]any)["turns"].([]any)
	if len(turns) != 1 {
		t.Fatalf("chat after the cancelled plan: %v", load["result"])
	}
	turn := turns[0].(map[string]any)
	if turn["request"] != "make the greeting say hi" || turn["status"] != "cancelled" || turn["planId"] != nil {
		t.Fatalf("the cancelled turn as kept: %v", turn)
	}
}
