package acp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/internal/fakemodel"
)

// A change the user rejects at the permission prompt is not reported
// completed, nor shown as a diff: the step is skipped (failed, in ACP's
// words) with the reason (issue 24, point 4).
func TestRejectedChangeNotCompleted(t *testing.T) {
	fake := fakemodel.New()
	url := fake.Start(t)
	ws, state := t.TempDir(), t.TempDir()
	c := &testClient{answer: "reject"}
	conn, stop := start(t, c, modelOptions(url, state))
	defer stop()
	ns := openSession(t, conn, sdk.ClientCapabilities{}, ws, "")
	fake.Push(fakemodel.Reply{Text: `{"steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"x\n"}}]}`})
	if _, err := conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("write a.txt")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); err == nil {
		t.Fatalf("a.txt was written although the change was rejected")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var last *sdk.SessionToolCallUpdate
	for _, u := range c.updates {
		if tc := u.ToolCallUpdate; tc != nil && tc.Status != nil && *tc.Status != sdk.ToolCallStatusInProgress && *tc.Status != sdk.ToolCallStatusPending {
			last = tc
		}
	}
	if last == nil {
		t.Fatalf("no final tool call update in %d updates", len(c.updates))
	}
	if *last.Status != sdk.ToolCallStatusFailed {
		t.Errorf("the rejected step ends %q, want failed", *last.Status)
	}
	text := ""
	for _, cc := range last.Content {
		if cc.Diff != nil {
			t.Errorf("the rejected step still shows a diff of %s", cc.Diff.Path)
		}
		if cc.Content != nil && cc.Content.Content.Text != nil {
			text += cc.Content.Content.Text.Text
		}
	}
	if !strings.Contains(text, "skipped: change rejected") {
		t.Errorf("the step's final text %q does not say it was skipped because the change was rejected", text)
	}
}
