package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/fakemodel"
)

// TestServeChatAskAnswersThroughTheModel drives the built binary: a
// question in a chat goes through engine/llm's HTTP provider to the fake
// model server, which reads a file and answers; the answer streams as
// agentd/chat/stream before the result, the chat keeps the question turn,
// nothing in the workspace changes, and the model was never offered a
// write tool nor asked for a plan.
func TestServeChatAskAnswersThroughTheModel(t *testing.T) {
	ws := demoCopy(t)
	before := treeDigest(t, ws)
	srv := fakemodel.New()
	url := srv.Start(t)
	srv.Push(
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "read_file", Args: `{"path":"greet/greet.go","why":"the greeting"}`}}},
		fakemodel.Reply{Text: "Hello returns the greeting (`greet/greet.go`)."},
	)
	c := startServe(t, "XDG_CONFIG_HOME="+t.TempDir(), "AGENTD_MODEL=openai:test-model",
		"OPENAI_BASE_URL="+url+"/v1", "OPENAI_API_KEY=sk-test-serve")
	initialize(c, ws)
	chat := c.call("agentd/chat/new", map[string]any{})
	id, _ := chat["result"].(map[string]any)["chatId"].(string)
	r := c.call("agentd/chat/ask", map[string]any{"chatId": id, "question": "what does Hello return?"})
	if r["error"] != nil {
		t.Fatalf("chat/ask: %v", r["error"])
	}
	res := r["result"].(map[string]any)
	if res["answer"] != "Hello returns the greeting (`greet/greet.go`)." || res["question"] != true {
		t.Fatalf("chat/ask result: %v", res)
	}
	var streamed strings.Builder
	for _, m := range c.queued {
		if m["method"] == "agentd/chat/stream" {
			streamed.WriteString(m["params"].(map[string]any)["text"].(string))
		}
	}
	if streamed.String() != res["answer"] {
		t.Errorf("streamed %q before the result, want the answer", streamed.String())
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	for i, q := range reqs {
		body := string(q.Body)
		for _, bad := range []string{`"write_file"`, `"edit_file"`, `"run_command"`, `"response_format"`} {
			if strings.Contains(body, bad) {
				t.Errorf("model call %d offers or asks %s", i, bad)
			}
		}
	}
	if read := "TrimSpace(name)"; strings.Contains(string(reqs[0].Body), read) || !strings.Contains(string(reqs[1].Body), read) {
		t.Error("the file the model read did not reach it")
	}
	load := c.call("agentd/chat/load", map[string]any{"chatId": id})
	turns, _ := load["result"].(map[string]any)["turns"].([]any)
	if len(turns) != 1 || turns[0].(map[string]any)["question"] != true {
		t.Fatalf("chat after the question: %v", load["result"])
	}
	if after := treeDigest(t, ws); after != before {
		t.Error("answering a question changed the workspace")
	}
}

// treeDigest is a digest of every file's path and bytes under root.
func treeDigest(t *testing.T, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		h.Write([]byte(filepath.ToSlash(rel) + "\x00"))
		h.Write(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
