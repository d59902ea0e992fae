package engine

import (
	"encoding/json"
	"github.com/agentd/agentd/engine/approval"
	"testing"
	"time"
)

func TestRunOptionsJSON(t *testing.T) {
	var o RunOptions
	err := json.Unmarshal([]byte(`{"mode":"sequential","maxParallel":3,"review":"after","rollbackOnFailure":true,
		"dryRun":true,"budget":{"maxTokens":1000,"maxCostUSD":0.5},"stepTimeout":"90s","maxRePlans":1,
		"approval":{"command":"allow","denyCommands":["rm *"]}}`), &o)
	if err != nil {
		t.Fatal(err)
	}
	if o.Mode != "sequential" || o.MaxParallel != 3 || o.Review != ReviewAfter || !o.RollbackOnFailure || !o.DryRun ||
		o.MaxTokens != 1000 || o.MaxCostUSD != 0.5 || o.StepTimeout != 90*time.Second || o.MaxRePlans == nil || *o.MaxRePlans != 1 ||
		o.Approval == nil || o.Approval.Command != approval.PolicyAllow || o.Approval.DenyCommands[0] != "rm *" {
		t.Errorf("%+v", o)
	}
	if err := json.Unmarshal([]byte(`{"stepTimeout":1500,"maxTokens":7}`), &o); err != nil || o.StepTimeout != 1500*time.Millisecond || o.MaxTokens != 7 {
		t.Errorf("%v %+v", err, o)
	}
	for _, bad := range []string{`{"stepTimeout":"soon"}`, `{"mode":"fast"}`, `{"review":"later"}`, `{"maxParallel":-1}`, `{"stepTimeout":-5}`} {
		if err := json.Unmarshal([]byte(bad), &o); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
