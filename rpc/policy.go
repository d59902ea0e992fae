package rpc

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentd/agentd/engine"
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

func (s *Server) policyState() (PolicyState, error) {
	st := PolicyState{ApprovalPolicy: s.approvals.get(), Rules: []Rule{}}
	if j := s.persist.journal(); j != nil {
		rules, err := j.Rules().List()
		if err != nil {
			return st, err
		}
		st.Rules = rules
	}
	return st, nil
}

// ruleStore is the workspace's rule store, shared with agentd run.
func (s *Server) ruleStore() (*engine.ApprovalRules, error) {
	j := s.persist.journal()
	if j == nil {
		if _, err := s.workspace(); err != nil {
			return nil, err
		}
		return nil, errors.New("the workspace's journal could not be opened (see the log); remembered rules are unavailable")
	}
	return j.Rules(), nil
}

func (s *Server) policyGet(ctx context.Context, params json.RawMessage) (any, error) {
	return s.policyState()
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
	pol := s.approvals.get()
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
	if p.Rules != nil || len(p.Revoke) > 0 {
		store, err := s.ruleStore()
		if err != nil {
			return nil, err
		}
		if p.Rules != nil {
			ids := make([]string, 0, len(*p.Rules))
			for i, r := range *p.Rules {
				if r.ID == "" {
					return nil, badParam("rules["+itoa(i)+"].id", "rules are kept by id; new rules come from \"always\" answers")
				}
				ids = append(ids, r.ID)
			}
			if err := store.Keep(ids); err != nil {
				if errors.Is(err, engine.ErrNoSuchRule) {
					return nil, badParam("rules", "%v", err)
				}
				return nil, err
			}
		}
		if len(p.Revoke) > 0 {
			// Unknown ids are ignored: the rule is gone either way.
			rules, err := store.List()
			if err != nil {
				return nil, err
			}
			known := map[string]bool{}
			for _, r := range rules {
				known[r.ID] = true
			}
			var ids []string
			for _, id := range p.Revoke {
				if known[id] {
					ids = append(ids, id)
				}
			}
			if err := store.Revoke(ids...); err != nil && !errors.Is(err, engine.ErrNoSuchRule) {
				return nil, err
			}
		}
	}
	if err := s.persist.savePolicy(pol); err != nil {
		return nil, err
	}
	s.approvals.setPolicy(pol)
	return s.policyState()
}
