package session

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
)

// TestModelSwitchWire: the switch is the engine's model from the start;
// while no model is configured the engine refuses a plan with an llm step
// up front (as with no model at all) and the default rules add nothing;
// once the editor sets a model the same engine accepts the plan, without
// being made again.
func TestModelSwitchWire(t *testing.T) {
	env := map[string]string{"XDG_CONFIG_HOME": t.TempDir()}
	w := NewModelSwitch(ModelOptions{Root: t.TempDir(), Getenv: func(k string) string { return env[k] }})
	var cfg engine.Config
	w.Wire(&cfg)
	if cfg.Model == nil || cfg.Planner == nil || len(cfg.Rules) != len(engine.DefaultRules()) {
		t.Fatalf("not wired: %+v", cfg)
	}
	if _, ok := cfg.Rules[0].(engine.RecoveryRule); !ok {
		t.Errorf("the test-fix rule lost its recovery: %T", cfg.Rules[0])
	}
	eng := engine.New(cfg)
	p := &plans.Plan{Steps: []*plans.Step{{ID: "ask", Kind: plans.KindLLM, Prompt: "hi"}}}
	if probs := eng.MissingModel(p); len(probs) != 1 {
		t.Fatalf("no model yet: MissingModel = %v, want the llm step", probs)
	}
	if _, err := w.Planner(); err == nil {
		t.Fatal("a planner without a model")
	}
	if _, err := w.Set(t.Context(), ModelChoice{Provider: "ollama", Model: "qwen"}); err != nil {
		t.Fatal(err)
	}
	if probs := eng.MissingModel(p); len(probs) != 0 {
		t.Fatalf("after Set: MissingModel = %v", probs)
	}
	if _, err := w.Planner(); err != nil {
		t.Fatal(err)
	}
}

// TestModelChoiceHidesKey: a choice printed or logged by mistake shows
// only that a key is set.
func TestModelChoiceHidesKey(t *testing.T) {
	c := ModelChoice{Model: "openai:m", APIKey: "sk-hidden-99"}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), c.LogValue().String()} {
		if strings.Contains(s, "sk-hidden-99") {
			t.Errorf("the key shows: %s", s)
		}
	}
}

// TestModelSetKeepsTheEditorsBaseURL: a model picked in the editor keeps
// the base URL the editor's settings gave for the same provider, however
// either names the provider (its own field or "provider:model"), so code
// meant for the user's own server never goes to the provider's public
// one; another provider does not take that URL.
func TestModelSetKeepsTheEditorsBaseURL(t *testing.T) {
	const own = "http://127.0.0.1:11434/v1"
	for _, tc := range []struct {
		name   string
		editor EditorModel
		set    ModelChoice
		want   string
	}{
		{"both name the provider", EditorModel{Provider: "openai", Model: "a", BaseURL: own}, ModelChoice{Provider: "openai", Model: "b"}, own},
		{"the pick as provider:model", EditorModel{Provider: "openai", Model: "a", BaseURL: own}, ModelChoice{Model: "openai:b"}, own},
		{"the settings as provider:model", EditorModel{Model: "openai:a", BaseURL: own}, ModelChoice{Model: "openai:b"}, own},
		{"another provider", EditorModel{Model: "openai:a", BaseURL: own}, ModelChoice{Model: "anthropic:c"}, "https://api.anthropic.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"XDG_CONFIG_HOME": t.TempDir(), "OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a"}
			ed := tc.editor
			w := NewModelSwitch(ModelOptions{Root: t.TempDir(), Getenv: func(k string) string { return env[k] }, Editor: &ed})
			info, err := w.Set(t.Context(), tc.set)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(info.BaseURL, tc.want) {
				t.Errorf("after %+v over the editor's %+v: base URL %q, want %q (%s)", tc.set, tc.editor, info.BaseURL, tc.want, info.Problem)
			}
		})
	}
}
