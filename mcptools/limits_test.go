package mcptools

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/engine/tools"
)

// testServer builds mcptools/internal/testserver and starts it.
func testServer(t *testing.T) *Set {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "testserver")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/agentd/agentd/mcptools/internal/testserver").CombinedOutput(); err != nil {
		t.Fatalf("building the test server: %v\n%s", err, out)
	}
	set, errs := Start(context.Background(), []Server{{Name: "t", Command: bin}}, Options{Timeout: time.Minute})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(func() { set.Close() })
	return set
}

func toolNamed(t *testing.T, set *Set, name string) tools.Tool {
	t.Helper()
	for _, tl := range set.Tools() {
		if tl.(*Tool).MCPName() == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

// TestResultIsCappedAndServerCrashIsNamed: a result larger than the cap
// of a command's output keeps its head and tail and says the cut (to the
// model in the output, to the user in what is streamed); a server that
// crashes is named with its last stderr lines, and the set goes on.
func TestResultIsCappedAndServerCrashIsNamed(t *testing.T) {
	set := testServer(t)
	var streamed strings.Builder
	env := &tools.Env{Output: func(stream, text string) { streamed.WriteString(text) }}
	res, err := toolNamed(t, set, "big").Run(t.Context(), env, json.RawMessage(`{"size":`+itoa(tools.MaxCommandOutput*4)+`}`))
	if err != nil {
		t.Fatal(err)
	}
	out := res.Output.(Output)
	if !out.Truncated || len(out.Text) > tools.MaxCommandOutput+200 || !strings.HasPrefix(out.Text, "HEAD") || !strings.HasSuffix(out.Text, "TAIL") ||
		!strings.Contains(out.Text, "bytes of the MCP tool's result cut") {
		t.Fatalf("a %d-byte result: truncated %v, %d bytes kept", tools.MaxCommandOutput*4, out.Truncated, len(out.Text))
	}
	if len(streamed.String()) > tools.MaxCommandOutput+200 || !strings.Contains(streamed.String(), "result cut") {
		t.Fatalf("%d bytes streamed to the user, without the cut said", streamed.Len())
	}

	_, err = toolNamed(t, set, "crash").Run(t.Context(), env, json.RawMessage(`{"text":"disk quota exceeded"}`))
	if err == nil || !strings.Contains(err.Error(), "MCP server t") || !strings.Contains(err.Error(), "testserver: disk quota exceeded") ||
		!strings.Contains(err.Error(), "goes on without it") {
		t.Fatalf("a crashed server: %v", err)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
