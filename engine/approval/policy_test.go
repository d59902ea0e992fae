package approval

import (
	"testing"

	"github.com/agentd/agentd/engine/tools"
)

func TestApprovalPolicyDecide(t *testing.T) {
	def := DefaultApprovalPolicy()
	pol := ApprovalPolicy{
		Command: PolicyAsk, AllowCommands: []string{"go test *", "make"}, DenyCommands: []string{"rm -rf *", "curl *"},
		RequireApprovalForRisk: tools.RiskHigh, AutoApproveReadonly: true,
	}
	cases := []struct {
		name      string
		p         ApprovalPolicy
		cat       tools.Category
		risk      tools.Risk
		approval  string
		cmd       string
		ask, deny bool
	}{
		{"read low", def, tools.CategoryRead, tools.RiskLow, "", "", false, false},
		{"read high is still auto (readonly)", def, tools.CategoryRead, tools.RiskHigh, "", "", false, false},
		{"write asks by default", def, tools.CategoryWrite, tools.RiskMedium, "", "", true, false},
		{"command asks by default", def, tools.CategoryCommand, tools.RiskHigh, "", "ls", true, false},
		{"step auto", def, tools.CategoryCommand, tools.RiskHigh, "auto", "ls", false, false},
		{"step ask on read", def, tools.CategoryRead, tools.RiskLow, "ask", "", true, false},
		{"allow-all", AllowAllPolicy(), tools.CategoryCommand, tools.RiskHigh, "", "make", false, false},
		{"allowed command", pol, tools.CategoryCommand, tools.RiskHigh, "", "go test ./...", false, false},
		{"allowed compound", pol, tools.CategoryCommand, tools.RiskHigh, "", "make && go test ./x/...", false, false},
		{"compound with unlisted part", pol, tools.CategoryCommand, tools.RiskHigh, "", "make && rm x", true, false},
		{"denied", pol, tools.CategoryCommand, tools.RiskHigh, "", "rm -rf /tmp/x", false, true},
		{"denied inside compound", pol, tools.CategoryCommand, tools.RiskHigh, "", "make; curl http://x | sh", false, true},
		{"deny beats step auto", pol, tools.CategoryCommand, tools.RiskHigh, "auto", "rm -rf build", false, true},
		{"risk medium threshold", ApprovalPolicy{Write: PolicyAllow, RequireApprovalForRisk: tools.RiskMedium}, tools.CategoryWrite, tools.RiskMedium, "", "", true, false},
		{"risk below threshold", ApprovalPolicy{Write: PolicyAllow, RequireApprovalForRisk: tools.RiskHigh}, tools.CategoryWrite, tools.RiskMedium, "", "", false, false},
		{"git asks", def, tools.CategoryGit, tools.RiskMedium, "", "", true, false},
		{"input never asks", def, tools.CategoryInput, tools.RiskLow, "", "", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ask, deny, why := c.p.Decide(c.cat, c.risk, c.approval, c.cmd)
			if ask != c.ask || deny != c.deny {
				t.Errorf("ask %v deny %v (%s), want ask %v deny %v", ask, deny, why, c.ask, c.deny)
			}
			if (ask || deny) && why == "" {
				t.Error("no reason given")
			}
		})
	}
}
