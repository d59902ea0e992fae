package rpc

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentd/agentd/engine/approval"
	wire "github.com/agentd/agentd/protocol"
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
	sess, err := s.session()
	if err != nil {
		return PolicyState{ApprovalPolicy: DefaultPolicy(), Rules: []Rule{}}, nil
	}
	pol, err := sess.Policy()
	if err != nil {
		return PolicyState{}, err
	}
	st := PolicyState{ApprovalPolicy: pol, Rules: []Rule{}}
	if sess.Journal != nil {
		rules, err := sess.Journal.Rules().List()
		if err != nil {
			return st, err
		}
		st.Rules = rules
	}
	return st, nil
}

func (s *Server) policyGet(ctx context.Context, params json.RawMessage) (any, error) {
	return s.policyState()
}

// policySet changes the policy fields that are given (the session
// validates them: the one check of every front end) and, if "rules" is
// given, keeps only those remembered rules, or removes the rules named in
// "revoke". An unknown id in either changes nothing.
func (s *Server) policySet(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.PolicySetParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.session()
	if err != nil {
		return nil, err
	}
	pol, err := sess.PatchPolicy(params)
	if err != nil {
		return nil, err
	}
	var keep []string
	if p.Rules != nil { // "rules": [] keeps none; absent or null keeps all
		keep = make([]string, 0, len(p.Rules))
		for i, r := range p.Rules {
			if r.ID == "" {
				return nil, badParam("rules["+itoa(i)+"].id", "rules are kept by id; new rules come from \"always\" answers")
			}
			keep = append(keep, r.ID)
		}
	}
	if len(p.Revoke) > 0 {
		if err := sess.Revoke(p.Revoke...); err != nil {
			return nil, err
		}
	}
	if keep != nil {
		store, err := sess.Rules()
		if err != nil {
			return nil, err
		}
		if err := store.Keep(keep); err != nil {
			if errors.Is(err, approval.ErrNoSuchRule) {
				return nil, badParam("rules", "%v", err)
			}
			return nil, err
		}
	}
	if err := sess.SavePolicy(pol); err != nil {
		return nil, err
	}
	return s.policyState()
}
