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
