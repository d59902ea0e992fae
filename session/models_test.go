package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/llm"
	"github.com/agentd/agentd/workspace"
)

// TestLoadModels checks the one construction of a workspace's planner and
// step model: the workspace's config chooses the model, the front end's
// override wins over it (the environment's AGENTD_MODEL over both, as
// llm.Load says), and without any model the planner answers the engine's
// "no model" error while Wire leaves the engine without a model.
func TestLoadModels(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".agentd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".agentd", "config.json"), []byte(`{"model":"openai/ws-model"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"XDG_CONFIG_HOME": t.TempDir()}
	getenv := func(k string) string { return env[k] }

	m, err := LoadModels(ModelOptions{Root: root, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Configured() || m.Settings.Model != "openai/ws-model" {
		t.Fatalf("the workspace's model is not chosen: configured %v, model %q", m.Configured(), m.Settings.Model)
	}
	var cfg engine.Config
	m.Wire(&cfg)
	if cfg.Model != engine.StepModel(m.Step) || cfg.Planner != engine.Planner(m.Planner) || len(cfg.Rules) == 0 {
		t.Fatalf("Wire did not set the step model, planner and rules: %+v", cfg)
	}

	m, err = LoadModels(ModelOptions{Root: root, Getenv: getenv, Model: "openai/flag-model",
		Editor: &llm.EditorOptions{Model: "openai/editor-model"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Settings.Model != "openai/editor-model" {
		t.Fatalf("the editor's model is not the one used: %q", m.Settings.Model)
	}
	m, err = LoadModels(ModelOptions{Root: root, Getenv: getenv, Model: "openai/flag-model"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Settings.Model != "openai/flag-model" {
		t.Fatalf("the front end's override is not the one used: %q", m.Settings.Model)
	}

	none, err := LoadModels(ModelOptions{Root: t.TempDir(), Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	if none.Configured() {
		t.Fatalf("a model is configured from nothing: %q", none.Settings.Model)
	}
	cfg = engine.Config{}
	none.Wire(&cfg)
	if cfg.Model != nil || cfg.Planner != nil || len(cfg.Rules) != 0 {
		t.Fatalf("Wire set a model without one configured: %+v", cfg)
	}
	ws := openWS(t, t.TempDir())
	if _, err := none.Planner.Create(context.Background(), llm.CreateRequest{Request: "x", Workspace: ws}); !errors.Is(err, engine.ErrNoModel) {
		t.Fatalf("planning without a model: %v, want engine.ErrNoModel", err)
	}
}

func openWS(t *testing.T, root string) *workspace.Workspace {
	t.Helper()
	ws, err := workspace.Open(root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}
