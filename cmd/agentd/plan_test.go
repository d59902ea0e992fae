package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/internal/fakemodel"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/workspace"
)

// modelEnv points the agentd binary at the fake model server.
func modelEnv(t *testing.T, srv *fakemodel.Server) {
	url := srv.Start(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("AGENTD_MODEL", "openai:gpt-4o")
	t.Setenv("OPENAI_BASE_URL", url+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-cli-test-key-123")
	t.Setenv("AGENTD_STATE_DIR", t.TempDir()) // the planner's repository map cache
}

func TestPlanWithoutModelExits2(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("AGENTD_MODEL", "")
	r := agentd(t, "", "plan", "bump the version", "--workspace", t.TempDir())
	if r.code != 2 || !strings.Contains(r.stderr, "AGENTD_MODEL=ollama:qwen2.5-coder") ||
		!strings.Contains(r.stderr, "OPENAI_BASE_URL=http://localhost:8080/v1 AGENTD_MODEL=openai:local") {
		t.Fatalf("code %d stderr %s", r.code, r.stderr)
	}
}

func TestPlanWritesValidPlan(t *testing.T) {
	srv := fakemodel.New()
	srv.Push(fakemodel.Reply{Text: `{"title":"Read","steps":[{"id":"read","tool":"read_file","args":{"path":"a.txt"}}]}`})
	modelEnv(t, srv)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644)
	out := filepath.Join(t.TempDir(), "plan.json")
	r := agentd(t, "", "plan", "read a.txt", "--workspace", ws, "-o", out)
	if r.code != 0 {
		t.Fatalf("code %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "sk-cli-test-key-123") {
		t.Errorf("key on stderr: %s", r.stderr)
	}
	var p struct {
		Request string
		Steps   []map[string]any
	}
	data, _ := os.ReadFile(out)
	if err := json.Unmarshal(data, &p); err != nil || p.Request != "read a.txt" || len(p.Steps) != 1 {
		t.Fatalf("plan %s: %v", data, err)
	}
	if v := agentd(t, "", "validate", out); v.code != 0 {
		t.Errorf("validate: %d %s", v.code, v.stdout+v.stderr)
	}
	if body := string(srv.Requests()[0].Body); !strings.Contains(body, "a.txt") {
		t.Errorf("workspace summary missing from the prompt")
	}
}

func TestPlanInvalidAfterRepairExits2(t *testing.T) {
	srv := fakemodel.New()
	bad := `{"steps":[{"id":"x","tool":"nope","args":{}}]}`
	srv.Push(fakemodel.Reply{Text: bad}, fakemodel.Reply{Text: bad})
	modelEnv(t, srv)
	r := agentd(t, "", "plan", "do it", "--workspace", t.TempDir())
	if r.code != 2 || !strings.Contains(r.stderr, "nope") {
		t.Fatalf("code %d: %s", r.code, r.stderr)
	}
}

func TestRunRequestPlansThenRuns(t *testing.T) {
	srv := fakemodel.New()
	srv.Push(fakemodel.Reply{Text: `{"steps":[{"id":"w","tool":"write_file","args":{"path":"out.txt","content":"from the plan\n"}}]}`})
	modelEnv(t, srv)
	ws := t.TempDir()
	r := agentd(t, "", "run", "--request", "write out.txt", "--workspace", ws, "--yes", "--review", "none", "--no-snapshots")
	if r.code != 0 {
		t.Fatalf("code %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if got := readFile(t, filepath.Join(ws, "out.txt")); got != "from the plan\n" {
		t.Errorf("out.txt = %q", got)
	}
}

func TestWireModel(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("AGENTD_MODEL", "")
	var cfg engine.Config
	if err := wireModel(&cfg, t.TempDir(), ""); err != nil || cfg.Model != nil || cfg.Planner != nil {
		t.Fatalf("without a model: %v %+v", err, cfg)
	}
	t.Setenv("AGENTD_MODEL", "ollama:qwen2.5-coder")
	cfg.Tools = tools.Builtin()
	if err := wireModel(&cfg, t.TempDir(), ""); err != nil || cfg.Model == nil || cfg.Planner == nil || len(cfg.Rules) != 2 {
		t.Fatalf("with a model: %v %+v", err, cfg)
	}
}

func TestServeModel(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"), 0o644)
	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	// Without a model: ErrNoModel (the server's -32006).
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("AGENTD_MODEL", "")
	sm := newServeModel(nil)
	cfg := engine.Config{Tools: tools.Builtin(), WS: ws}
	sm.configure(&cfg, nil)
	// The engine has the daemon's model switch (a model set later through
	// agentd/model/set reaches it) and refuses model steps while it has none.
	llmPlan := &plans.Plan{Steps: []*plans.Step{{ID: "ask", Kind: plans.KindLLM, Prompt: "hi"}}}
	if _, err := sm.MakePlan(t.Context(), rpc.PlanRequest{Request: "x"}); !errors.Is(err, engine.ErrNoModel) || len(engine.New(cfg).MissingModel(llmPlan)) != 1 {
		t.Fatalf("err = %v", err)
	}

	// The editor's model and base URL.
	srv := fakemodel.New()
	url := srv.Start(t)
	t.Setenv("OPENAI_API_KEY", "sk-serve-test-1234")
	// The editor's model arrives through Configure, as initialize passes it.
	sm = newServeModel(nil)
	cfg = engine.Config{Tools: tools.Builtin(), WS: ws}
	sm.configure(&cfg, &rpc.ModelOptions{Provider: "openai", Model: "gpt-4o-mini", BaseURL: url + "/v1"})
	if cfg.Model == nil || cfg.Planner == nil || len(cfg.Rules) == 0 {
		t.Fatalf("engine config not wired: %+v", cfg)
	}
	srv.Push(fakemodel.Reply{Text: `{"steps":[{"id":"r","tool":"read_file","args":{"path":"main.go"}}]}`},
		fakemodel.Reply{Text: `{"steps":[{"id":"r2","tool":"read_file","args":{"path":"main.go"}}]}`})
	p, err := sm.MakePlan(t.Context(), rpc.PlanRequest{Request: "explain main", URIs: []string{ws.URI("main.go")},
		Selection: &rpc.Selection{URI: ws.URI("main.go"), Range: workspace.Range{Start: workspace.Position{Line: 3}, End: workspace.Position{Line: 3, Character: 14}}}})
	if err != nil || len(p.Steps) != 1 {
		t.Fatalf("plan %+v, %v", p, err)
	}
	body := string(srv.Requests()[0].Body)
	if !strings.Contains(body, `"model":"gpt-4o-mini"`) || !strings.Contains(body, "Selection in main.go (lines 4-4)") ||
		!strings.Contains(body, "Open in the editor") {
		t.Errorf("request: %s", body)
	}
	p.ID, p.Version = "p", 1
	np, err := sm.MakePlan(t.Context(), rpc.PlanRequest{Request: "explain main", Previous: p, Feedback: "name it r2"})
	if err != nil || np.Version != 2 || np.Steps[0].ID != "r2" {
		t.Fatalf("regenerate %+v, %v", np, err)
	}
	if !strings.Contains(string(srv.Requests()[1].Body), "name it r2") {
		t.Error("feedback not in the prompt")
	}
	// A linewise selection of lines 3-4 ends at character 0 of line 5: the
	// model is shown lines 3-4, not 3-5.
	srv.Push(fakemodel.Reply{Text: `{"steps":[{"id":"r","tool":"read_file","args":{"path":"main.go"}}]}`})
	if _, err := sm.MakePlan(t.Context(), rpc.PlanRequest{Request: "explain these", Selection: &rpc.Selection{URI: ws.URI("main.go"),
		Range: workspace.Range{Start: workspace.Position{Line: 2}, End: workspace.Position{Line: 4}}}}); err != nil {
		t.Fatal(err)
	}
	if body := string(srv.Requests()[2].Body); !strings.Contains(body, "Selection in main.go (lines 3-4)") {
		t.Errorf("a linewise selection: %s", body)
	}
}

// A plan the repair round could not fix is shown with its problems and
// kept for the user to fix (not thrown away): the path is printed, the
// file holds the model's last plan, and once fixed it validates and runs.
func TestPlanInvalidAfterRepairIsKept(t *testing.T) {
	srv := fakemodel.New()
	bad := `{"title":"Greet","steps":[{"id":"x","tool":"write_flie","args":{"path":"out.txt","content":"hi\n"}}]}`
	srv.Push(fakemodel.Reply{Text: bad}, fakemodel.Reply{Text: bad})
	modelEnv(t, srv)
	ws, state := t.TempDir(), t.TempDir()
	r := agentd(t, "", "run", "--request", "write out.txt", "--workspace", ws, "--state-dir", state, "--yes")
	if r.code != exitUsage || !strings.Contains(r.stderr, "plan: step x: tool:") {
		t.Fatalf("code %d, the problems not shown:\n%s", r.code, r.stderr)
	}
	_, rest, ok := strings.Cut(r.stderr, "the model's plan is kept in ")
	if !ok {
		t.Fatalf("the plan is not kept:\n%s", r.stderr)
	}
	path, _, _ := strings.Cut(rest, ": fix the problems")
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), `"tool": "write_flie"`) {
		t.Fatalf("the kept plan %s: %v\n%s", path, err, data)
	}
	os.WriteFile(path, []byte(strings.Replace(string(data), "write_flie", "write_file", 1)), 0o644)
	if v := agentd(t, "", "run", path, "--workspace", ws, "--state-dir", state, "--yes"); v.code != 0 || readFile(t, filepath.Join(ws, "out.txt")) != "hi\n" {
		t.Errorf("the fixed plan: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
}
