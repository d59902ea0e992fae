package rpc

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/engine/plans"
)

// TestPlanLoadText: a plan file the user chose outside the workspace is sent
// as text; it is parsed by its name's format and bounded like a file.
func TestPlanLoadText(t *testing.T) {
	ed := startEditor(t, Options{}, nil)
	ed.initialize(t.TempDir(), nil)
	var pl plans.Plan
	yaml := "title: From outside\nsteps:\n  - id: read\n    tool: read_file\n    args: {path: a.txt}\n"
	ed.mustCall("agentd/plan/load", map[string]any{"text": yaml, "name": "/home/u/plans/outside.yaml"}, &pl)
	if pl.Title != "From outside" || len(pl.Steps) != 1 || pl.Steps[0].ID != "read" {
		t.Fatalf("plan %+v", pl)
	}
	defer func(n int64) { plans.MaxPlanSize = n }(plans.MaxPlanSize)
	plans.MaxPlanSize = 16
	err := ed.call("agentd/plan/load", map[string]any{"text": yaml, "name": "outside.yaml"}, nil)
	if errCode(err) != -32602 || !strings.Contains(err.Error(), "text") {
		t.Fatalf("oversize text: %v", err)
	}
}
