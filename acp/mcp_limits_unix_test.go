//go:build unix

package acp

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/internal/fakemodel"
)

// TestMCPResultIsCappedOverACP: an MCP tool (the test server's big)
// returns 4 MiB, once as a plan's tool step and once to an agent step's
// model. What the model gets next, what the user sees on the tool calls,
// every file of the run journal and the ACP session file each stay under
// the documented cap (tools.MaxCommandOutput, with room for what is
// around it), and the cut is said to the model and to the user.
func TestMCPResultIsCappedOverACP(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "testserver")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/agentd/agentd/mcptools/internal/testserver").CombinedOutput(); err != nil {
		t.Fatalf("building the test MCP server: %v\n%s", err, out)
	}
	const size = 4 << 20
	limit := tools.MaxCommandOutput + 256<<10 // the cap and what is around it
	fake := fakemodel.New()
	url := fake.Start(t)
	ws, state := t.TempDir(), t.TempDir()
	c := &testClient{answer: string(sdk.PermissionOptionKindAllowOnce)}
	conn, stop, wire := startWire(t, c, modelOptions(url, state))
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
	args := `{"size":` + strconv.Itoa(size) + `}`
	fake.Push(fakemodel.Reply{Text: `{"steps":[{"id":"b","tool":"mcp_test_big","args":` + args + `},
		{"id":"ag","kind":"agent","prompt":"read it","tools":["mcp_test_big"],"dependsOn":["b"]}]}`},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "mcp_test_big", Args: args}}},
		fakemodel.Reply{Text: "done"})
	res, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("read the big thing")}})
	if err != nil || res.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("prompt: %v %v", res.StopReason, err)
	}
	const cut = "the MCP tool's result was cut"

	// The model: the request after the agent's call carries its result, cut.
	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3 (plan, agent, agent after the call)", len(reqs))
	}
	for i, r := range reqs {
		if len(r.Body) > limit {
			t.Errorf("model request %d is %d bytes, over %d", i, len(r.Body), limit)
		}
	}
	if body := string(reqs[2].Body); !strings.Contains(body, "(truncated: this tool result is") {
		t.Errorf("the model is not told of the cut (%d bytes): %.500s", len(body), body)
	}

	// The user: both tool calls show the head, the tail and the cut.
	for _, id := range []string{"/b", "/ag/mcp-1"} {
		st, text, seen := lastStatus(t, wire, id)
		if !seen || st != "completed" || len(text) > limit || !strings.Contains(text, cut) || !strings.Contains(text, "bytes are not shown") || !strings.HasSuffix(strings.TrimSuffix(text, "\n```"), "]") {
			t.Errorf("tool call %s: seen %v, status %q, %d bytes, cut said %v", id, seen, st, len(text), strings.Contains(text, cut))
		}
	}

	// The run journal and the session file.
	var files int
	err = filepath.WalkDir(filepath.Join(state, "workspaces"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(p, string(filepath.Separator)+"journal"+string(filepath.Separator)) {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files++
		if info.Size() > int64(limit) {
			t.Errorf("%s is %d bytes, over %d", p, info.Size(), limit)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	session, _ := filepath.Glob(filepath.Join(state, "workspaces", "*", "journal", "acp", "sessions", string(ns.SessionId)+".json"))
	if len(session) != 1 || files < 2 {
		t.Fatalf("the session file %v, %d journal files", session, files)
	}
	data, err := os.ReadFile(session[0])
	if err != nil || !strings.Contains(string(data), cut) || !strings.Contains(string(data), "left out of the session file") {
		t.Errorf("the session file does not say the cuts (%v)", err)
	}
}
