//go:build unix

package acp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/internal/fakemodel"
)

// TestHungMCPServerIsNamedAndStopped: of three servers the editor
// passes, "mute" reads its stdin and never answers initialize, "stuck"
// answers the handshake but never a call of its tool hang, "test" works.
// The bounds come from the user's config (mcpStartTimeout,
// mcpCallTimeout), set small here. The chat names mute with the end of
// its stderr; an agent step's call of hang fails with "did not answer
// tools/call hang within 1s" and stuck's stderr, which the model gets as
// the tool's result and the user on the call; stuck's process is
// stopped; the agent's next call (test's echo) and a later turn work,
// and stuck's other tool fails at once, naming why.
func TestHungMCPServerIsNamedAndStopped(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "testserver")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/agentd/agentd/mcptools/internal/testserver").CombinedOutput(); err != nil {
		t.Fatalf("building the test MCP server: %v\n%s", err, out)
	}
	fake := fakemodel.New()
	url := fake.Start(t)
	ws, state := t.TempDir(), t.TempDir()
	pidFile := filepath.Join(state, "stuck.pid")
	if err := os.MkdirAll(filepath.Join(state, "agentd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "agentd", "config.json"), []byte(`{"mcpStartTimeout":"2s","mcpCallTimeout":"1s"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &testClient{answer: string(sdk.PermissionOptionKindAllowOnce)}
	conn, stop, wire := startWire(t, c, modelOptions(url, state))
	defer stop()
	ctx := boundedCtx(t)
	if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	ns, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: ws, McpServers: []sdk.McpServer{
		{Stdio: &sdk.McpServerStdio{Name: "test", Command: bin, Args: []string{}, Env: []sdk.EnvVariable{}}},
		{Stdio: &sdk.McpServerStdio{Name: "mute", Command: bin, Args: []string{}, Env: []sdk.EnvVariable{{Name: "MCP_HANG", Value: "initialize"}}}},
		{Stdio: &sdk.McpServerStdio{Name: "stuck", Command: bin, Args: []string{}, Env: []sdk.EnvVariable{{Name: "MCP_PID_FILE", Value: pidFile}}}},
	}})
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

	fake.Push(fakemodel.Reply{Text: `{"steps":[{"id":"ag","kind":"agent","prompt":"look it up","tools":["mcp_stuck_hang","mcp_test_echo"]}]}`},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "mcp_stuck_hang", Args: `{"text":"waiting for the lock on db.sqlite"}`}}},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c2", Name: "mcp_test_echo", Args: `{"text":"still here"}`}}},
		fakemodel.Reply{Text: "done"})
	prompt("look it up")
	said := c.said(0)
	for _, want := range []string{`"mute": did not answer initialize within 2s`, "its stderr ends:\ntestserver: stuck before the handshake"} {
		if !strings.Contains(said, want) {
			t.Errorf("the chat does not say %q:\n%s", want, said)
		}
	}
	want := []string{"MCP server stuck did not answer tools/call hang within 1s", "stopped it", "its stderr ends:\ntestserver: waiting for the lock on db.sqlite"}
	st, text, seen := lastStatus(t, wire, "/ag/mcp-1")
	if !seen || st != "failed" {
		t.Errorf("the hung call: seen %v, status %q", seen, st)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the user is not told %q on the hung call:\n%s", w, text)
		}
	}
	var toModel string
	for _, r := range fake.Requests() {
		if strings.Contains(string(r.Body), "did not answer tools/call") {
			toModel = string(r.Body)
		}
	}
	for _, w := range []string{"MCP server stuck did not answer tools/call hang within 1s", "stopped it", "its stderr ends:", "testserver: waiting for the lock on db.sqlite"} {
		if !strings.Contains(toModel, w) {
			t.Errorf("the model is not told %q (the request with the call's result: %.2000s)", w, toModel)
		}
	}
	if st, text, _ := lastStatus(t, wire, "/ag/mcp-2"); st != "completed" || text != "echo: still here" {
		t.Errorf("the call after the hung one: status %q, %q", st, text)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(data))
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the hung server (pid %d) still runs", pid)
	}

	// A later turn: the working server's tools work, the stopped one's fail
	// at once, saying why.
	fake.Push(fakemodel.Reply{Text: `{"steps":[{"id":"e","tool":"mcp_test_echo","args":{"text":"later"}},
		{"id":"s","tool":"mcp_stuck_shout","args":{"text":"x"},"dependsOn":["e"]}]}`})
	prompt("again")
	if st, text, _ := lastStatus(t, wire, "/e"); st != "completed" || !strings.Contains(text, "echo: later") {
		t.Errorf("a later turn's call of the working server: status %q, %q", st, text)
	}
	if st, text, _ := lastStatus(t, wire, "/s"); st != "failed" || !strings.Contains(text, "was stopped earlier") || !strings.Contains(text, "did not answer tools/call hang") {
		t.Errorf("a later call of the stopped server: status %q, %q", st, text)
	}
}
