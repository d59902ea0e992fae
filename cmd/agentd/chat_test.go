//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/fakemodel"
)

// agentd chat is a conversation: each turn is planned (the fake model),
// shown, run with the review; the next turn's request carries the turn
// before (its plan, the review decision and its reason, the failure); a
// failed turn is handed back with f; /undo undoes the last run; Ctrl-D ends.
func TestTermChatConversation(t *testing.T) {
	srv := fakemodel.New()
	var mu sync.Mutex
	var bodies []string
	plans := []string{
		`{"title":"One","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"one\n"}}]}`,
		`{"title":"Two","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"two\n"}},
		  {"id":"t","tool":"run_command","args":{"command":"echo 'FAIL: TestTwo wants three'; exit 1"},"dependsOn":["w"],"critical":false}]}`,
		`{"title":"Three","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"three\n"}}]}`,
	}
	srv.Handle(func(r fakemodel.Request) fakemodel.Reply {
		mu.Lock()
		defer mu.Unlock()
		bodies = append(bodies, string(r.Body))
		n := len(bodies)
		if n <= len(plans) {
			return fakemodel.Reply{Text: plans[n-1], InputTokens: 1000, OutputTokens: 100}
		}
		return fakemodel.Reply{Text: `{"steps":[]}`}
	})
	modelEnv(t, srv)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("zero\n"), 0o644)
	state := t.TempDir()
	r := startPTYIn(t, ws, nil) // agentd with no arguments on a terminal: the chat
	_ = r.waitFor("/help lists the commands; Ctrl-D ends the conversation.", 0)
	r.cmd.Process.Kill()
	r.wait()

	r = startPTY(t, nil, "chat", "--workspace", ws, "--state-dir", state, "--explore", "-1")
	at := r.waitFor("›", 0)
	r.send("/help\n")
	at = r.waitFor("/undo         undo the last run", at)
	r.send("write a.txt\n")
	at = r.waitFor("1. w [write_file] writes a.txt", at)
	at = r.waitFor(applyPrompt, at)
	r.send("n\n")
	at = r.waitFor("reason (optional", at)
	r.send("say two\n")
	at = r.waitFor("turn 1: partial; 1100 tokens, $", at)
	r.send("again\n")
	at = r.waitFor(applyPrompt, at)
	r.send("y\n")
	at = r.waitFor(allowPrompt, at)
	r.send("y\n")
	at = r.waitFor("f + Enter hands the failure back to the model", at)
	at = r.waitFor("› (f + Enter: fix it)", at)
	if got := readFile(t, filepath.Join(ws, "a.txt")); got != "two\n" {
		t.Errorf("after turn 2 a.txt = %q", got)
	}
	r.send("f\n")
	at = r.waitFor(applyPrompt, at)
	r.send("y\n")
	at = r.waitFor("turn 3: completed", at)
	if got := readFile(t, filepath.Join(ws, "a.txt")); got != "three\n" {
		t.Errorf("after the fix a.txt = %q", got)
	}
	r.send("/undo\n")
	at = r.waitFor("undid run ", at)
	r.waitFor("›", at)
	r.send("\x04") // Ctrl-D
	if code := r.wait(); code != exitOK {
		t.Fatalf("exit %d\n%s", code, r.tail())
	}
	if got := readFile(t, filepath.Join(ws, "a.txt")); got != "two\n" {
		t.Errorf("after /undo a.txt = %q, want the text before the last run", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) < 3 {
		t.Fatalf("%d model requests, want 3", len(bodies))
	}
	for _, want := range []string{"Turn 1. The user asked: write a.txt", "w [write_file] writes a.txt", "the user's reason: say two", "Now the user asks", "again"} {
		if !strings.Contains(unescapeJSONText(bodies[1]), want) {
			t.Errorf("turn 2's request lacks %q:\n%s", want, bodies[1])
		}
	}
	for _, want := range []string{"The last turn failed", "FAIL: TestTwo wants three", "step t: failed"} {
		if !strings.Contains(unescapeJSONText(bodies[2]), want) {
			t.Errorf("the fix request lacks %q:\n%s", want, bodies[2])
		}
	}
}

// unescapeJSONText makes a JSON request body's escaped newlines and quotes
// plain, to look for text in it.
func unescapeJSONText(s string) string {
	return strings.NewReplacer(`\n`, "\n", `\"`, `"`, `\u0026`, "&", `\u003c`, "<", `\u003e`, ">").Replace(s)
}

// Chat with no model refuses at start, saying how to configure one (exit
// 2), instead of starting a conversation whose every turn fails.
func TestTermChatWithoutModelRefuses(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("AGENTD_MODEL", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	r := startPTY(t, nil, "chat", "--workspace", t.TempDir(), "--state-dir", t.TempDir())
	r.waitFor("AGENTD_MODEL=openai:gpt-4o", 0)
	if code := r.wait(); code != exitUsage {
		t.Errorf("exit %d, want 2:\n%s", code, r.text())
	}
	for _, want := range []string{"agentd chat: every turn asks a model for a plan", "no model configured"} {
		if !strings.Contains(r.text(), want) {
			t.Errorf("lacks %q:\n%s", want, r.text())
		}
	}
	if strings.Contains(r.text(), "›") {
		t.Errorf("the conversation started:\n%s", r.text())
	}
}
