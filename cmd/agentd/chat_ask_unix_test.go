//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/fakemodel"
)

// TestTermChatAsksAQuestion: at the terminal, "? question" is answered in
// words (the model reads a file first; nothing is written), the answer
// prints, and the next plan turn's planner is told the question and its
// answer; the chat keeps the question turn for the editors.
func TestTermChatAsksAQuestion(t *testing.T) {
	srv := fakemodel.New()
	srv.Push(
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "read_file", Args: `{"path":"a.txt","why":"its text"}`}}},
		fakemodel.Reply{Text: "a.txt says zero."},
		fakemodel.Reply{Text: `{"title":"One","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"one\n"}}]}`},
	)
	modelEnv(t, srv)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("zero\n"), 0o644)
	state := t.TempDir()
	r := startPTY(t, nil, "chat", "--workspace", ws, "--state-dir", state, "--explore", "-1", "--review", "none", "--yes")
	at := r.waitFor("›", 0)
	r.send("? what does a.txt say?\n")
	at = r.waitFor("a.txt says zero.", at)
	at = r.waitFor("read: ", at)
	at = r.waitFor("›", at)
	if got := readFile(t, filepath.Join(ws, "a.txt")); got != "zero\n" {
		t.Fatalf("a question wrote a.txt: %q", got)
	}
	r.send("now write one\n")
	at = r.waitFor("turn 2: completed", at)
	r.waitFor("›", at)
	r.send("\x04")
	if code := r.wait(); code != exitOK {
		t.Fatalf("exit %d\n%s", code, r.tail())
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3 (two for the question, one plan)", len(reqs))
	}
	if body := string(reqs[0].Body); strings.Contains(body, `"response_format"`) || !strings.Contains(body, "what does a.txt say?") {
		t.Errorf("the question's model call asks for a plan or lacks the question:\n%s", body)
	}
	plan := unescapeJSONText(string(reqs[2].Body))
	for _, want := range []string{"Turn 1. The user asked a question: what does a.txt say?", "The answer given:\na.txt says zero.", "now write one"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan turn's request lacks %q:\n%s", want, plan)
		}
	}
}
