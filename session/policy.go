package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
)

// The approval policy lives in the workspace's journal (policy.json), one
// for every front end: the terminal, the editor server and ACP read it at
// each run, an editor changes it through agentd/policy/set, and nothing
// overrides it at start-up. Without one it is approval.DefaultApprovalPolicy
// (writes are reviewed; commands, deletes, git and network ask).

// FieldError is a bad field of a policy change; Field is its protocol
// name ("write", "revoke[1]").
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// savedPolicy is policy.json. Rules is only read: older builds kept the
// remembered rules there; they now live in the journal's rule store.
type savedPolicy struct {
	Policy approval.ApprovalPolicy `json:"policy"`
	Rules  []approval.ApprovalRule `json:"rules,omitempty"`
}

// Policy is the workspace's approval policy.
func (s *Session) Policy() (approval.ApprovalPolicy, error) {
	if s.Journal == nil {
		return approval.DefaultApprovalPolicy(), nil
	}
	s.policyMu.Lock()
	defer s.policyMu.Unlock()
	var sp savedPolicy
	ok, err := s.Journal.Load("policy.json", &sp)
	if err != nil {
		return approval.DefaultApprovalPolicy(), err
	}
	if !ok {
		return approval.DefaultApprovalPolicy(), nil
	}
	// Rules an older build kept in policy.json join the shared store.
	if len(sp.Rules) > 0 {
		if err := s.Journal.Rules().Import(sp.Rules); err != nil {
			s.log.Error("could not move the remembered approval rules to the shared store", "error", err)
		} else if err := s.Journal.Save("policy.json", savedPolicy{Policy: sp.Policy}); err != nil {
			s.log.Error("could not drop the moved rules from policy.json", "error", err)
		}
	}
	if err := ValidatePolicy(sp.Policy); err != nil {
		return approval.DefaultApprovalPolicy(), fmt.Errorf("the saved approval policy %s/policy.json: %w", s.Journal.Dir(), err)
	}
	return sp.Policy, nil
}

// ValidatePolicy is the one check of an approval policy.
func ValidatePolicy(p approval.ApprovalPolicy) error {
	for _, v := range []struct{ name, val string }{
		{"read", p.Read}, {"write", p.Write}, {"delete", p.Delete},
		{"command", p.Command}, {"git", p.Git}, {"network", p.Network},
	} {
		if v.val != "" && v.val != approval.PolicyAsk && v.val != approval.PolicyAllow {
			return &FieldError{v.name, fmt.Sprintf("must be \"ask\" or \"allow\", not %q", v.val)}
		}
	}
	switch p.RequireApprovalForRisk {
	case "", "low", "medium", "high":
	default:
		return &FieldError{"requireApprovalForRisk", fmt.Sprintf("must be low, medium or high, not %q", p.RequireApprovalForRisk)}
	}
	return nil
}

// SetPolicy changes the fields of the policy present in patch (a JSON
// object of ApprovalPolicy fields), validates the result and saves it.
// Nothing changes on error.
func (s *Session) SetPolicy(patch json.RawMessage) (approval.ApprovalPolicy, error) {
	next, err := s.PatchPolicy(patch)
	if err != nil {
		return next, err
	}
	return next, s.SavePolicy(next)
}

// PatchPolicy is the policy with the fields present in patch changed,
// validated, not saved.
func (s *Session) PatchPolicy(patch json.RawMessage) (approval.ApprovalPolicy, error) {
	pol, err := s.Policy()
	if err != nil {
		return pol, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(patch, &fields); err != nil {
		return pol, &FieldError{"params", "must be an object of policy fields"}
	}
	next := pol
	// Decoding over the current policy changes only the fields given.
	if err := json.Unmarshal(patch, &next); err != nil {
		return pol, &FieldError{"params", err.Error()}
	}
	if _, ok := fields["allowCommands"]; !ok {
		next.AllowCommands = pol.AllowCommands
	}
	if _, ok := fields["denyCommands"]; !ok {
		next.DenyCommands = pol.DenyCommands
	}
	for _, f := range []struct {
		name string
		v    string
	}{{"read", next.Read}, {"write", next.Write}, {"delete", next.Delete}, {"command", next.Command}, {"git", next.Git}, {"network", next.Network}} {
		if _, ok := fields[f.name]; ok && f.v == "" {
			return pol, &FieldError{f.name, "must be \"ask\" or \"allow\", not \"\""}
		}
	}
	if err := ValidatePolicy(next); err != nil {
		return pol, err
	}
	return next, nil
}

// SavePolicy makes pol the workspace's policy, for every front end.
func (s *Session) SavePolicy(pol approval.ApprovalPolicy) error {
	if err := ValidatePolicy(pol); err != nil {
		return err
	}
	if s.Journal == nil {
		return ErrNoJournal
	}
	s.policyMu.Lock()
	defer s.policyMu.Unlock()
	return s.Journal.Save("policy.json", savedPolicy{Policy: pol})
}

// Rules is the workspace's store of remembered approval rules.
func (s *Session) Rules() (*approval.ApprovalRules, error) {
	if s.Journal == nil {
		return nil, ErrNoJournal
	}
	return s.Journal.Rules(), nil
}

// Revoke removes the remembered rules ids, all or none: an unknown id is a
// *FieldError naming it ("revoke[i]") wrapping approval.ErrNoSuchRule, the
// same in every front end. The check and the removal are one step under
// the store's lock.
func (s *Session) Revoke(ids ...string) error {
	if s.Journal == nil {
		return ErrNoJournal
	}
	return Revoke(s.Journal, ids...)
}

// Revoke removes the remembered rules ids from j's store (Session.Revoke,
// for a front end that holds only the journal, such as agentd rules).
func Revoke(j *engine.Journal, ids ...string) error {
	err := j.Rules().Revoke(ids...)
	var unknown *approval.UnknownRuleError
	if errors.As(err, &unknown) {
		field := "revoke"
		for i, id := range ids {
			if id == unknown.ID {
				field = "revoke[" + strconv.Itoa(i) + "]"
				break
			}
		}
		return &RuleError{FieldError: FieldError{field, unknown.Error()}}
	}
	return err
}

// RuleError is an unknown rule id in a revoke: its text is the same in
// every front end (no remembered rule "rule-9"); Field says which id.
type RuleError struct{ FieldError }

func (e *RuleError) Error() string { return e.Message }

// Unwrap makes errors.Is(err, approval.ErrNoSuchRule) hold.
func (e *RuleError) Unwrap() error { return approval.ErrNoSuchRule }
