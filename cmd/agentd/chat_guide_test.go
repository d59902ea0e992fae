package main

import (
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/fakemodel"
)

// Guidance while a chat's plan is made, over the built binary, the real
// planner and the model client: the planner's next model call carries
// the words as a user message, and the turn records them.
func TestServeChatGuidanceReachesThePlannersNextCall(t *testing.T) {
	ws := demoCopy(t)
	srv := fakemodel.New()
	url := srv.Start(t)
	started, given := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	n := 0
	srv.Handle(func(r fakemodel.Request) fakemodel.Reply {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		if k == 1 {
			close(started)
			<-given
			return fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "read_file", Args: `{"path":"greet/greet.go","why":"the greeting"}`}}}
		}
		return fakemodel.Reply{Text: `{"title":"List","steps":[{"id":"l","tool":"list_dir","args":{"path":"."}}]}`}
	})
	c := startServe(t, "XDG_CONFIG_HOME="+t.TempDir(), "AGENTD_MODEL=openai:test-model",
		"OPENAI_BASE_URL="+url+"/v1", "OPENAI_API_KEY=sk-test-serve")
	initialize(c, ws)
	chat := c.call("agentd/chat/new", map[string]any{})
	id, _ := chat["result"].(map[string]any)["chatId"].(string)
	c.send(map[string]any{"id": 900, "method": "agentd/plan/create", "params": map[string]any{"request": "make the greeting say hi", "chatId": id, "mapTokens": -1}})
	<-started
	q := c.call("agentd/chat/queue", map[string]any{"chatId": id, "request": "only touch greet/", "when": "guidance"})
	close(given)
	res, _ := q["result"].(map[string]any)
	if res == nil || res["delivered"] != true {
		t.Fatalf("guidance while planning: %v", q)
	}
	for {
		m := c.read()
		if m["id"] == float64(900) && m["method"] == nil {
			if m["error"] != nil {
				t.Fatalf("plan/create: %v", m["error"])
			}
			break
		}
	}
	reqs := srv.Requests()
	words := "The user adds, while the run goes: only touch greet/"
	if len(reqs) != 2 || strings.Contains(string(reqs[0].Body), words) || !strings.Contains(string(reqs[1].Body), words) {
		t.Fatalf("the planner's second call lacks the guidance (%d requests)", len(reqs))
	}
	load := c.call("agentd/chat/load", map[string]any{"chatId": id})
	turns, _ := load["result"].(map[string]any)["turns"].([]any)
	if len(turns) != 1 {
		t.Fatalf("chat/load: %v", load)
	}
	if g, _ := turns[0].(map[string]any)["guidance"].([]any); len(g) != 1 || g[0] != "only touch greet/" {
		t.Fatalf("the turn's guidance: %v", turns[0])
	}
}
