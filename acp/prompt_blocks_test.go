package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/internal/fakemodel"
)

// TestPromptBlocksAreParagraphs: a prompt's text blocks (and embedded
// files) reach the planner a blank line apart, never glued; a slash
// command in any block is recognised; the text beside a command other
// than /plan is sent to no model, and the chat says so; a block that
// starts with a path is a request, not an unknown command.
func TestPromptBlocksAreParagraphs(t *testing.T) {
	fake := fakemodel.New()
	url := fake.Start(t)
	ws, state := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "greet.go"), []byte("package greet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &testClient{}
	conn, stop := start(t, c, modelOptions(url, state))
	defer stop()
	ns := openSession(t, conn, sdk.ClientCapabilities{}, ws, modePlanOnly)
	ctx := boundedCtx(t)
	prompt := func(blocks ...sdk.ContentBlock) (string, error) {
		t.Helper()
		c.mu.Lock()
		mark := len(c.updates)
		c.mu.Unlock()
		_, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: blocks})
		return c.said(mark), err
	}
	// what the planner was told last, JSON-decoded.
	lastAsked := func() string {
		t.Helper()
		reqs := fake.Requests()
		if len(reqs) == 0 {
			t.Fatal("no request reached the model")
		}
		var m struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(reqs[len(reqs)-1].Body, &m); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, msg := range m.Messages {
			if msg.Role == "user" {
				if s, ok := msg.Content.(string); ok {
					b.WriteString(s)
				} else {
					j, _ := json.Marshal(msg.Content)
					b.Write(j)
				}
			}
		}
		return b.String()
	}
	plan := `{"title":"Look","steps":[{"id":"l","tool":"list_dir","args":{"path":"."}}]}`

	fake.Push(fakemodel.Reply{Text: plan})
	if said, err := prompt(sdk.TextBlock("look at"), sdk.TextBlock("the greeting"),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file://" + filepath.Join(ws, "greet.go"), Text: "package greet"}}),
		sdk.TextBlock("and say what it does")); err != nil {
		t.Fatalf("prompt: %v\n%s", err, said)
	}
	asked := lastAsked()
	for _, want := range []string{"look at\n\nthe greeting\n\n<file name=", "</file>\n\nand say what it does"} {
		if !strings.Contains(asked, want) {
			t.Errorf("the planner was not told %q; blocks glued:\n%s", want, asked)
		}
	}

	// A command in the second block runs; the text beside it goes nowhere.
	n := len(fake.Requests())
	said, err := prompt(sdk.TextBlock("run the slow thing"), sdk.TextBlock("/snapshots"))
	if err != nil {
		t.Fatalf("text + /snapshots: %v\n%s", err, said)
	}
	if len(fake.Requests()) != n {
		t.Errorf("text + /snapshots reached the model:\n%s", lastAsked())
	}
	if !strings.Contains(said, "No snapshots yet") || !strings.Contains(said, "Not sent: /snapshots runs alone") || !strings.Contains(said, "> run the slow thing") {
		t.Errorf("text + /snapshots: the chat says\n%s", said)
	}

	// /plan in the first block takes the other blocks as its request.
	fake.Push(fakemodel.Reply{Text: plan})
	if said, err := prompt(sdk.TextBlock("/plan"), sdk.TextBlock("add a README")); err != nil || !strings.Contains(said, "Type /run") {
		t.Fatalf("/plan + text: %v\n%s", err, said)
	}
	if asked := lastAsked(); !strings.Contains(asked, "add a README") || strings.Contains(asked, "/plan") {
		t.Errorf("/plan + text: the planner was told\n%s", asked)
	}

	// Two commands: neither runs.
	n = len(fake.Requests())
	if said, err := prompt(sdk.TextBlock("/snapshots"), sdk.TextBlock("/rules")); err == nil || !strings.Contains(err.Error(), "two slash commands") || strings.Contains(said, "No snapshots") {
		t.Errorf("two commands: err %v\n%s", err, said)
	}

	// A path is a request.
	fake.Push(fakemodel.Reply{Text: plan})
	if said, err := prompt(sdk.TextBlock("/tmp/greet.go is broken")); err != nil {
		t.Fatalf("a prompt starting with a path: %v\n%s", err, said)
	}
	if len(fake.Requests()) != n+1 || !strings.Contains(lastAsked(), "/tmp/greet.go is broken") {
		t.Errorf("a prompt starting with a path did not reach the planner")
	}
}
