package plans

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/engine/tools"
)

// TestValidateJSONPatchPointers: a json_patch path that is not a JSON
// Pointer is a validation problem naming the step and the field, with the
// fix, not a run-time failure.
func TestValidateJSONPatchPointers(t *testing.T) {
	p := mkPlan(t, `[
		{"id":"ok","tool":"json_patch","args":{"path":"c.json","ops":[{"op":"replace","path":"/version","value":"2"}]}},
		{"id":"bump","tool":"json_patch","args":{"path":"c.json","ops":[
			{"op":"test","path":"/version","value":"1"},
			{"op":"replace","path":"version","value":"2"}]}}
	]`)
	probs := ValidatePlan(p, tools.Builtin(), 0)
	if len(probs) != 1 {
		t.Fatalf("problems %+v, want exactly one", probs)
	}
	pr := probs[0]
	if pr.StepID != "bump" || pr.Field != "args.ops[1].path" || !strings.Contains(pr.Message, `"/version"`) {
		t.Errorf("problem %+v: want step bump, field args.ops[1].path and the fix \"/version\"", pr)
	}
}
