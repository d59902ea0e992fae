// Package approval decides whether a tool call may happen, each rule once
// for every front end: the approval policy (policy.go), the request, the
// four answers and the Approver hook (this file), the remembered "always"
// rules (approvalrules.go), the gate before a model reads a sensitive file
// (sensitive.go), and a call's risk and whether it may change files behind
// a change set (approval_calls.go). The scheduler in package engine asks
// through it; it imports no part of engine.
package approval

import (
	"context"

	"github.com/agentd/agentd/engine/tools"
)

// ApprovalRequest asks whether a step may do something. It and
// ApprovalDecision carry no json tags: no front end sends them as they are.
// The editor's wire form is protocol.ApprovalRequestParams and
// protocol.ApprovalResult (rpc/approval.go converts field by field); ACP and
// the terminal build their own.
type ApprovalRequest struct {
	RunID    string
	StepID   string
	Tool     string
	Category tools.Category
	Risk     tools.Risk
	Title    string
	Detail   string
	Command  string
	Cwd      string
	ChangeID string
	// Sensitive: the call reads a file on the sensitive list
	// (engine/approval/sensitive.go); Category is read and Title names the path.
	Sensitive bool
}

// ApprovalDecision is the answer. Always makes it a rule for later requests
// of the same kind: the engine adds it to the workspace's rule store
// (Config.Journal), which every front end shares.
type ApprovalDecision struct {
	Allow  bool
	Always bool
	Reason string
}

// The four answers to an approval question, named as every front end
// names them (the protocol's optionId, ACP's permission option kind, the
// terminal's y/a/n/N).
const (
	AnswerAllowOnce    = "allow_once"
	AnswerAllowAlways  = "allow_always"
	AnswerRejectOnce   = "reject_once"
	AnswerRejectAlways = "reject_always"
)

// Answer is the one mapping of the four answers to a decision; reason is
// the user's (or the front end's words for a rejection). False for any
// other answer.
func Answer(answer, reason string) (ApprovalDecision, bool) {
	d := ApprovalDecision{Reason: reason}
	switch answer {
	case AnswerAllowOnce:
		d.Allow = true
	case AnswerAllowAlways:
		d.Allow, d.Always = true, true
	case AnswerRejectOnce:
	case AnswerRejectAlways:
		d.Always = true
	default:
		return ApprovalDecision{}, false
	}
	return d, true
}

// Approver decides on steps that need permission. Approve blocks until the
// user answers or ctx is done; the run goes on with independent steps.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (ApprovalDecision, error)
}

// AllowAll is an Approver that allows everything (agentd run --yes).
type AllowAll struct{}

func (AllowAll) Approve(ctx context.Context, req ApprovalRequest) (ApprovalDecision, error) {
	return ApprovalDecision{Allow: true, Reason: "allowed: every step is allowed in this run"}, nil
}
