//go:build unix

package acp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/internal/fakemodel"
)

// TestEditorMCPServersBecomeTools passes a stdio MCP server (the small one
// in mcptools/internal/testserver, built here) and an HTTP one in
// session/new. A plan uses three of their tools: the read-only one runs
// without asking (the user's config trusts the stdio server's hints:
// mcpTrustedServers), the others ask (risk medium), each is a tool call,
// and the stdio server's process ends with the session.
func TestEditorMCPServersBecomeTools(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "testserver")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/agentd/agentd/mcptools/internal/testserver").CombinedOutput(); err != nil {
		t.Fatalf("building the test MCP server: %v\n%s", err, out)
	}
	hs := mcp.NewServer(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
	mcp.AddTool(hs, &mcp.Tool{Name: "count"}, func(ctx context.Context, req *mcp.CallToolRequest, a struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(len(a.Text)) + " letters"}}}, nil, nil
	})
	var sawHeader atomic.Value
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return hs }, nil)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawHeader.Store(r.Header.Get("X-Test"))
		h.ServeHTTP(w, r)
	}))
	defer web.Close()

	fake := fakemodel.New()
	url := fake.Start(t)
	ws, state := t.TempDir(), t.TempDir()
	pidFile := filepath.Join(state, "mcp.pid")
	if err := os.MkdirAll(filepath.Join(state, "agentd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "agentd", "config.json"), []byte(`{"mcpTrustedServers":["test"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &testClient{answer: string(sdk.PermissionOptionKindAllowOnce)}
	conn, stop, wire := startWire(t, c, modelOptions(url, state))
	ctx := boundedCtx(t)
	init, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber})
	if err != nil || !init.AgentCapabilities.McpCapabilities.Http {
		t.Fatalf("initialize: %v, mcp capabilities %+v", err, init.AgentCapabilities.McpCapabilities)
	}
	ns, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: ws, McpServers: []sdk.McpServer{
		{Stdio: &sdk.McpServerStdio{Name: "test", Command: bin, Args: []string{}, Env: []sdk.EnvVariable{{Name: "MCP_PID_FILE", Value: pidFile}}}},
		{Http: &sdk.McpServerHttpInline{Type: "http", Name: "web", Url: web.URL, Headers: []sdk.HttpHeader{{Name: "X-Test", Value: "yes"}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	fake.Push(fakemodel.Reply{Text: `{"steps":[
		{"id":"e","tool":"mcp_test_echo","args":{"text":"hi"}},
		{"id":"s","tool":"mcp_test_shout","args":{"text":"hi"},"dependsOn":["e"]},
		{"id":"n","tool":"mcp_web_count","args":{"text":"four"},"dependsOn":["s"]},
		{"id":"ag","kind":"agent","prompt":"echo yo","tools":["mcp_test_echo"],"dependsOn":["n"]}]}`},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "mcp_test_echo", Args: `{"text":"yo"}`}}},
		fakemodel.Reply{Text: "done"})
	res, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("use the tools")}})
	if err != nil || res.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %v %v", res.StopReason, err)
	}
	for step, want := range map[string]string{"e": "echo: hi", "s": "HI", "n": "4 letters"} {
		st, text, seen := lastStatus(t, wire, "/"+step)
		if !seen || st != "completed" || !strings.Contains(text, want) {
			t.Errorf("step %s: seen %v status %q content %q, want %q", step, seen, st, text, want)
		}
	}
	// The agent step's call of an MCP tool is a tool call of its own.
	if st, text, seen := lastStatus(t, wire, "/ag/mcp-1"); !seen || st != "completed" || text != "echo: yo" {
		t.Errorf("the agent step's MCP call: seen %v status %q content %q", seen, st, text)
	}
	c.mu.Lock()
	var titles []string
	for _, a := range c.asked {
		titles = append(titles, *a.ToolCall.Title)
	}
	c.mu.Unlock()
	if len(titles) != 2 || !strings.Contains(titles[0], "shout") || !strings.Contains(titles[1], "count") {
		t.Fatalf("permission requests %q: want the two tools not marked read-only", titles)
	}
	if got, _ := sawHeader.Load().(string); got != "yes" {
		t.Errorf("the HTTP server's header was %q", got)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(data))
	stop()
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the MCP server (pid %d) still runs after the session closed", pid)
		}
	}
}

// TestMCPCallIsAStep: a tool the test server marks read-only, which
// writes a.txt in the workspace and a file outside it. Untrusted, its
// call asks (the prompt names the server, the tool, the arguments and
// that it runs with the user's rights); trusted in the user's config
// (mcpTrustedServers) it runs without asking. Either way the turn's end
// names a.txt and /undo takes it back; the file outside stays, as
// docs/acp.md says.
func TestMCPCallIsAStep(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "testserver")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/agentd/agentd/mcptools/internal/testserver").CombinedOutput(); err != nil {
		t.Fatalf("building the test MCP server: %v\n%s", err, out)
	}
	for _, trusted := range []bool{false, true} {
		t.Run(map[bool]string{false: "untrusted", true: "trusted"}[trusted], func(t *testing.T) {
			fake := fakemodel.New()
			url := fake.Start(t)
			ws, state, outside := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "outside.txt")
			if trusted {
				if err := os.MkdirAll(filepath.Join(state, "agentd"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(state, "agentd", "config.json"), []byte(`{"mcpTrustedServers":["test"]}`), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c := &testClient{answer: string(sdk.PermissionOptionKindAllowOnce)}
			conn, stop := start(t, c, modelOptions(url, state))
			defer stop()
			ctx := boundedCtx(t)
			if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
				t.Fatal(err)
			}
			ns, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: ws, McpServers: []sdk.McpServer{
				{Stdio: &sdk.McpServerStdio{Name: "test", Command: bin, Args: []string{}, Env: []sdk.EnvVariable{}}}}})
			if err != nil {
				t.Fatal(err)
			}
			prompt := func(text string) string {
				t.Helper()
				c.mu.Lock()
				from := len(c.updates)
				c.mu.Unlock()
				if _, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}}); err != nil {
					t.Fatalf("prompt %q: %v", text, err)
				}
				return c.said(from)
			}
			fake.Push(fakemodel.Reply{Text: `{"steps":[{"id":"n","tool":"mcp_test_note","args":{"path":"a.txt","text":"from the tool\n","also":[` +
				strconv.Quote(outside) + `]}}]}`})
			end := prompt("take a note")
			if data, err := os.ReadFile(filepath.Join(ws, "a.txt")); err != nil || string(data) != "from the tool\n" {
				t.Fatalf("the tool did not run: a.txt %q, %v\n%s", data, err, end)
			}
			if !strings.Contains(end, "a.txt") {
				t.Errorf("the turn's end does not name a.txt, which the MCP call changed:\n%s", end)
			}
			c.mu.Lock()
			asked := append([]sdk.RequestPermissionRequest(nil), c.asked...)
			c.mu.Unlock()
			if trusted {
				if len(asked) != 0 {
					t.Errorf("a trusted server's read-only tool was asked about: %d requests", len(asked))
				}
			} else {
				if len(asked) != 1 {
					t.Fatalf("an untrusted server's readOnlyHint was taken at its word: %d permission requests, want 1", len(asked))
				}
				var text strings.Builder
				text.WriteString(*asked[0].ToolCall.Title)
				for _, ct := range asked[0].ToolCall.Content {
					if ct.Content != nil && ct.Content.Content.Text != nil {
						text.WriteString("\n" + ct.Content.Content.Text.Text)
					}
				}
				for _, want := range []string{"note", "test", "a.txt", "with your rights", "outside"} {
					if !strings.Contains(text.String(), want) {
						t.Errorf("the permission request does not say %q:\n%s", want, text.String())
					}
				}
			}
			said := prompt("/undo")
			if _, err := os.Stat(filepath.Join(ws, "a.txt")); !os.IsNotExist(err) {
				t.Errorf("/undo left a.txt, which the MCP call wrote (stat: %v):\n%s", err, said)
			}
			if _, err := os.Stat(outside); err != nil {
				t.Errorf("the file outside the workspace: %v", err)
			}
		})
	}
}
