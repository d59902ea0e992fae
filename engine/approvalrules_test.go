package engine

import (
	"testing"

	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/tools"
)

// A second process's store (another front end) sees the rules at once.
func TestApprovalRulesShared(t *testing.T) {
	state, root := t.TempDir(), t.TempDir()
	a, err := OpenJournal(state, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenJournal(state, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := approval.ApprovalRequest{Category: tools.CategoryCommand, Tool: "run_command", Command: "make"}
	if _, err := a.Rules().Remember(req, true, ""); err != nil {
		t.Fatal(err)
	}
	if r, err := b.Rules().Match(req); err != nil || r == nil {
		t.Fatalf("the other store does not see the rule: %v %v", r, err)
	}
}
