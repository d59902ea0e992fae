package acp

import (
	"fmt"
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
	if _, err := conn.Prompt(boundedCtx(t), sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("write a.txt")}}); err != nil {
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

// session/new refuses a state dir inside the workspace (or its .git) and a
// cwd that is the home directory, before writing anything (issue 24,
// points 2 and 6).
func TestNewSessionRefusesBadPlaces(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, tc := range []struct{ cwd, state, want string }{
		{ws, filepath.Join(ws, "state"), "put the state dir outside"},
		{ws, filepath.Join(ws, ".git", "agentd"), "put the state dir outside"},
		{home, t.TempDir(), "--allow-broad-workspace"},
	} {
		conn, stop := start(t, &testClient{}, Options{StateDir: tc.state})
		ctx := boundedCtx(t)
		if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
			t.Fatal(err)
		}
		_, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: tc.cwd, McpServers: []sdk.McpServer{}})
		stop()
		if err == nil || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("session/new in %s with state dir %s: %v, want an error saying %q", tc.cwd, tc.state, err, tc.want)
		}
		if strings.HasPrefix(tc.state, ws) {
			if _, err := os.Lstat(tc.state); err == nil {
				t.Errorf("%s was created", tc.state)
			}
		}
	}
}
