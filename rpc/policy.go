package rpc

import (
	"context"
	"encoding/json"
)

func policyMethods() map[string]method {
	return map[string]method{
		"agentd/policy/get": {call: (*Server).policyGet},
		"agentd/policy/set": {call: (*Server).policySet},
	}
}

// PolicyState is agentd/policy/get's result and agentd/policy/set's params:
// the ApprovalPolicy plus the remembered rules.
type PolicyState struct {
	ApprovalPolicy
	Rules []Rule `json:"rules"`
}

func (s *Server) policyState() PolicyState {
	pol, rules := s.approvals.get()
	if rules == nil {
		rules = []Rule{}
	}
	sortRules(rules)
	return PolicyState{ApprovalPolicy: pol, Rules: rules}
}

func (s *Server) policyGet(ctx context.Context, params json.RawMessage) (any, error) {
	return s.policyState(), nil
}

// policySet replaces the policy fields that are given and, if "rules" is
// given, the remembered rules (so a rule is revoked by leaving it out), or
// removes the rules named in "revoke".
func (s *Server) policySet(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		ApprovalPolicy
		Rules  *[]Rule  `json:"rules"`
		Revoke []string `json:"revoke"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(params, &fields)
	pol, rules := s.approvals.get()
	for _, v := range []struct {
		name string
		src  string
		dst  *string
	}{
		{"read", p.Read, &pol.Read}, {"write", p.Write, &pol.Write}, {"delete", p.Delete, &pol.Delete},
		{"command", p.Command, &pol.Command}, {"git", p.Git, &pol.Git},
	} {
		if _, ok := fields[v.name]; ok {
			if v.src != "ask" && v.src != "allow" {
				return nil, badParam(v.name, "must be \"ask\" or \"allow\", not %q", v.src)
			}
			*v.dst = v.src
		}
	}
	if _, ok := fields["network"]; ok {
		if p.Network != "ask" && p.Network != "allow" {
			return nil, badParam("network", "must be \"ask\" or \"allow\", not %q", p.Network)
		}
		pol.Network = p.Network
	}
	if _, ok := fields["requireApprovalForRisk"]; ok {
		switch p.RequireApprovalForRisk {
		case "", "low", "medium", "high":
		default:
			return nil, badParam("requireApprovalForRisk", "must be low, medium or high, not %q", p.RequireApprovalForRisk)
		}
		pol.RequireApprovalForRisk = p.RequireApprovalForRisk
	}
	if _, ok := fields["autoApproveReadonly"]; ok {
		pol.AutoApproveReadonly = p.AutoApproveReadonly
	}
	if _, ok := fields["allowCommands"]; ok {
		pol.AllowCommands = p.AllowCommands
	}
	if _, ok := fields["denyCommands"]; ok {
		pol.DenyCommands = p.DenyCommands
	}
	if p.Rules != nil {
		known := map[string]Rule{}
		for _, r := range rules {
			known[r.ID] = r
		}
		var kept []Rule
		for i, r := range *p.Rules {
			if r.ID == "" {
				return nil, badParam("rules["+itoa(i)+"].id", "rules are kept by id; new rules come from \"always\" answers")
			}
			if _, ok := known[r.ID]; !ok {
				return nil, badParam("rules["+itoa(i)+"].id", "no rule %q", r.ID)
			}
			kept = append(kept, known[r.ID])
		}
		rules = kept
	}
	if len(p.Revoke) > 0 {
		drop := map[string]bool{}
		for _, id := range p.Revoke {
			drop[id] = true
		}
		var kept []Rule
		for _, r := range rules {
			if !drop[r.ID] {
				kept = append(kept, r)
			}
		}
		rules = kept
	}
	s.approvals.setPolicy(pol, rules)
	s.persist.savePolicy(pol, rules)
	return s.policyState(), nil
}
