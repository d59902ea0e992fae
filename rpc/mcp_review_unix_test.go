//go:build unix

package rpc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/mcptools"
)

// What an MCP tool changed in the workspace is a change set of its step,
// offered for review as an applied one (review "after"): the editor lists
// it with the file's hunk, and rejecting it takes the tool's change out of
// the file. The tool is the test MCP server's "note" (it writes a file).
func TestMCPChangeIsReviewed(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "testserver")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/agentd/agentd/mcptools/internal/testserver").CombinedOutput(); err != nil {
		t.Fatalf("building the test MCP server: %v\n%s", err, out)
	}
	const orig = "one\ntwo\nthree\n"
	const plan = `{"title": "note", "steps": [
  {"id": "n", "tool": "mcp_test_note", "args": {"path": "notes.txt", "text": "one\nTWO\nthree\n"}}
]}`
	ar := &txtar.Archive{Files: []txtar.File{{Name: "plan.json", Data: []byte(plan)}}}
	sc := &scenario{t: t, ar: ar, root: t.TempDir(), stateDir: t.TempDir(), buffers: map[string]string{}, version: map[string]int{}}
	if err := os.WriteFile(filepath.Join(sc.root, "notes.txt"), []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRepo(t, sc.root)
	set, errs := mcptools.Start(t.Context(), []mcptools.Server{{Name: "test", Command: bin}}, mcptools.Options{Dir: sc.root, Logger: testLogger(t)})
	if len(errs) > 0 {
		t.Fatalf("starting the test MCP server: %v", errs)
	}
	t.Cleanup(func() { set.Close() })
	sc.tools = tools.Builtin()
	for _, tl := range set.Tools() {
		sc.tools.Register(tl)
	}
	sc.do(0, "init review=after")
	sc.do(0, "load plan.json")
	sc.do(0, "start review=after")
	sc.do(0, "answer-approval allow_once step=n") // the server's hints are not trusted
	sc.do(0, "expect-run completed")
	if got := sc.disk("notes.txt"); got != "one\nTWO\nthree\n" {
		t.Fatalf("the MCP tool did not write notes.txt: %q", got)
	}
	var list []ChangeSetInfo
	sc.ed.mustCall("agentd/changes/list", map[string]any{"runId": sc.runID}, &list)
	if len(list) != 1 || list[0].StepID != "n" || list[0].Review != "after" || len(list[0].Files) != 1 ||
		!strings.HasSuffix(list[0].Files[0].URI, "/notes.txt") || len(list[0].Files[0].Hunks) != 1 {
		t.Fatalf("the MCP call's change is not listed as step n's set with one hunk in notes.txt: %+v", list)
	}
	var cs ChangeSetInfo
	sc.ed.mustCall("agentd/changes/get", map[string]any{"changeId": list[0].ID}, &cs)
	if len(cs.Files) != 1 || len(cs.Files[0].Hunks) != 1 {
		t.Fatalf("agentd/changes/get: %+v", cs)
	}
	if h := cs.Files[0].Hunks[0]; h.Status != "pending" || h.NewText == nil || !strings.Contains(*h.NewText, "TWO") {
		t.Errorf("the hunk is not the tool's pending change: %+v", h)
	}
	sc.changeID = list[0].ID
	sc.do(0, "resolve reject")
	if got := sc.disk("notes.txt"); got != orig {
		t.Errorf("rejecting the MCP call's change left notes.txt = %q, want %q", got, orig)
	}
}
