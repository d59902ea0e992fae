package plans

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/workspace"
)

// fakePlanTool is a tool with a schema and nothing else, for validation tests.
type fakePlanTool struct {
	name   string
	schema string
}

func (f fakePlanTool) Name() string             { return f.name }
func (f fakePlanTool) Description() string      { return "fake " + f.name }
func (f fakePlanTool) Category() tools.Category { return tools.CategoryRead }
func (f fakePlanTool) Risk() tools.Risk         { return tools.RiskLow }
func (f fakePlanTool) Schema() json.RawMessage  { return json.RawMessage(f.schema) }
func (f fakePlanTool) Run(context.Context, *tools.Env, json.RawMessage) (*tools.Result, error) {
	return &tools.Result{}, nil
}

// testRegistry has small stand-ins for a few built-in tools.
func planTestRegistry() *tools.Registry {
	r := tools.NewRegistry()
	r.Register(fakePlanTool{"read_file", `{"type":"object","properties":{"path":{"type":"string","minLength":1},"startLine":{"type":"integer","minimum":1},"endLine":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}`})
	r.Register(fakePlanTool{"write_file", `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}`})
	r.Register(fakePlanTool{"edit_file", `{"type":"object","properties":{"path":{"type":"string"},"edits":{"type":"array","minItems":1,"items":{"type":"object","properties":{"oldText":{"type":"string"},"newText":{"type":"string"}},"required":["oldText","newText"],"additionalProperties":false}}},"required":["path","edits"],"additionalProperties":false}`})
	r.Register(fakePlanTool{"run_command", `{"type":"object","properties":{"command":{"type":"string","minLength":1},"cwd":{"type":"string"},"env":{"type":"object","additionalProperties":{"type":"string"}},"timeout":{"type":"string"},"okExitCodes":{"type":"array","items":{"type":"integer"}}},"required":["command"],"additionalProperties":false}`})
	r.Register(fakePlanTool{"search_files", `{"type":"object","properties":{"glob":{"type":"string"}},"required":["glob"],"additionalProperties":false}`})
	r.Register(fakePlanTool{"git", `{"type":"object","properties":{"action":{"enum":["status","diff","log","commit","apply"]},"message":{"type":"string"}},"required":["action"]}`})
	r.Register(fakePlanTool{"json_patch", `{"type":"object","properties":{"path":{"type":"string"},"ops":{"type":"array","items":{"type":"object","properties":{"op":{"enum":["add","remove","replace","move","copy","test"]},"path":{"type":"string"},"value":{}},"required":["op","path"]}}},"required":["path","ops"]}`})
	r.Register(fakePlanTool{"list_dir", `{"type":"object","properties":{"path":{"anyOf":[{"type":"string"},{"type":"null"}]},"depth":{"type":"integer"}}}`})
	return r
}

// mustParse parses a JSON plan or fails the test.
func mustParse(t *testing.T, src string) *Plan {
	t.Helper()
	p, err := ParsePlan("test.json", []byte(src))
	if err != nil {
		t.Fatalf("ParsePlan: %v", err)
	}
	return p
}

// problemKey is the part of a problem tests compare exactly.
type problemKey struct{ StepID, Field string }

func problemKeys(ps []Problem) []problemKey {
	out := make([]problemKey, len(ps))
	for i, p := range ps {
		out[i] = problemKey{p.StepID, p.Field}
	}
	return out
}

// readFixture reads testdata/plans/name.
func readFixture(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join("testdata", "plans", filepath.FromSlash(name)))
}

// editor edits plans as engine.Engine.EditPlan does, against reg.
type editor struct{ reg *tools.Registry }

func (e editor) EditPlan(p *Plan, edits []Edit, reason string) (*Plan, error) {
	return ApplyEdits(p, edits, EditOptions{Tools: e.reg, Reason: reason})
}

// mkPlan parses a plan of the given steps (a JSON array).
func mkPlan(t *testing.T, stepsJSON string) *Plan {
	t.Helper()
	p, err := ParsePlan("test.json", []byte(`{"title":"test","steps":`+stepsJSON+`}`))
	if err != nil {
		t.Fatalf("parse plan: %v", err)
	}
	return p
}

// openWSWith opens a workspace holding files (path -> content), closed at
// the test's end.
func openWSWith(t *testing.T, files map[string]string) *workspace.Workspace {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}
