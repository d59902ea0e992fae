package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine/tools"
)

// TestToolErrorAudiences: a tool error's advice for a model ("check the
// path with list_dir") reaches an agent step's model, while the step error
// a person sees (state, stepFailed event) carries only the person's text.
func TestToolErrorAudiences(t *testing.T) {
	ws := openWSWith(t, map[string]string{"here.txt": "x\n"})
	var modelSaw string
	m := &fakeModel{run: func(ctx context.Context, call ModelCall) (*ModelResult, error) {
		r, err := call.Exec(ctx, "read_file", json.RawMessage(`{"path":"missing.txt"}`))
		if err != nil {
			return nil, err
		}
		modelSaw = r.Error
		return &ModelResult{Text: "done", Calls: 1}, nil
	}}
	e := New(Config{Tools: tools.Builtin(), WS: ws, Model: m})
	p := mkPlan(t, `[
		{"id":"ag","kind":"agent","prompt":"read it","tools":["read_file"]},
		{"id":"plain","tool":"read_file","args":{"path":"missing.txt"},"critical":false}
	]`)
	st, rec := runPlan(t, e, p, RunOptions{})

	if !strings.Contains(modelSaw, "missing.txt does not exist") || !strings.Contains(modelSaw, "list_dir") {
		t.Errorf("the model was told %q; want the error and the hint to use list_dir", modelSaw)
	}
	s := stepState(t, st, "plain")
	if s.Status != StepFailed || !strings.Contains(s.Error, "missing.txt does not exist") {
		t.Fatalf("plain step %s: %q", s.Status, s.Error)
	}
	if strings.Contains(s.Error, "list_dir") || strings.Contains(s.Error, "search_files") {
		t.Errorf("the person's step error carries advice for a model: %q", s.Error)
	}
	failed := rec.of(EventStepFailed)
	if len(failed) == 0 {
		t.Fatalf("no stepFailed event: %v", rec.trace())
	}
	for _, ev := range failed {
		if strings.Contains(ev.Error, "list_dir") {
			t.Errorf("stepFailed event carries advice for a model: %q", ev.Error)
		}
	}
}
