package rpc

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.lsp.dev/protocol"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
)

// ApprovalPolicy is protocol.md's ApprovalPolicy; the engine applies it.
type ApprovalPolicy = approval.ApprovalPolicy

// DefaultPolicy is the engine's default: read freely, ask before writing
// (answered by the review in review mode "before"), deleting, commands, git
// and network.
func DefaultPolicy() ApprovalPolicy { return approval.DefaultApprovalPolicy() }

// Rule is a remembered "always" answer (protocol.md Rule), kept by the
// workspace's rule store (approval.ApprovalRules) for every front end.
type Rule = approval.ApprovalRule

// approvals holds the client questions in flight (the policy is the
// workspace's: session.Policy).
type approvals struct {
	mu sync.Mutex
	// waiting cancels pending client questions at exit.
	cancels map[int]context.CancelFunc
	next    int
}

func newApprovals() *approvals {
	return &approvals{cancels: map[int]context.CancelFunc{}}
}

func (a *approvals) track(cancel context.CancelFunc) (untrack func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next++
	id := a.next
	a.cancels[id] = cancel
	return func() {
		a.mu.Lock()
		delete(a.cancels, id)
		a.mu.Unlock()
	}
}

func (a *approvals) cancelAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.cancels {
		c()
	}
}

// approver implements approval.Approver by asking the editor.
type approver Server

// approval option ids, one per kind.
const (
	optAllowOnce    = approval.AnswerAllowOnce
	optAllowAlways  = approval.AnswerAllowAlways
	optRejectOnce   = approval.AnswerRejectOnce
	optRejectAlways = approval.AnswerRejectAlways
)

var approvalOptions = []ApprovalOption{
	{OptionID: optAllowOnce, Name: "Allow once", Kind: optAllowOnce},
	{OptionID: optAllowAlways, Name: "Always allow", Kind: optAllowAlways},
	{OptionID: optRejectOnce, Name: "Reject", Kind: optRejectOnce},
	{OptionID: optRejectAlways, Name: "Always reject", Kind: optRejectAlways},
}

func (a *approver) Approve(ctx context.Context, req approval.ApprovalRequest) (approval.ApprovalDecision, error) {
	s := (*Server)(a)
	// The engine asks only when the run's policy says so and no remembered
	// rule answers; it remembers "always" answers itself.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer s.approvals.track(cancel)()

	var optionID, reason string
	if s.capabilities().approvalRequest {
		params := ApprovalRequestParams{
			RunID: req.RunID, StepID: req.StepID, Tool: req.Tool, Category: string(req.Category), Risk: string(req.Risk),
			Title: req.Title, Detail: req.Detail, Command: req.Command, Cwd: req.Cwd, ChangeID: req.ChangeID,
			Sensitive: req.Sensitive, Options: approvalOptions,
		}
		if params.Title == "" {
			params.Title = fmt.Sprintf("Step %s wants to use %s", req.StepID, req.Tool)
		}
		var res ApprovalResult
		if err := s.call(ctx, "agentd/approval/request", params, &res); err != nil {
			return approval.ApprovalDecision{}, fmt.Errorf("asking approval for step %s: %w", req.StepID, err)
		}
		if res.Outcome != "selected" {
			return approval.ApprovalDecision{Allow: false, Reason: "approval cancelled"}, nil
		}
		optionID, reason = res.OptionID, res.Reason
	} else {
		msg := fmt.Sprintf("agentd: step %q (%s, %s risk) wants to %s", req.StepID, req.Category, req.Risk, approvalTitle(req))
		if req.Detail != "" {
			msg += "\n" + req.Detail
		}
		actions := make([]protocol.MessageActionItem, len(approvalOptions))
		for i, o := range approvalOptions {
			actions[i] = protocol.MessageActionItem{Title: o.Name}
		}
		item, err := s.client.ShowMessageRequest(ctx, &protocol.ShowMessageRequestParams{
			Type: protocol.MessageTypeWarning, Message: msg, Actions: actions,
		})
		if err != nil {
			return approval.ApprovalDecision{}, fmt.Errorf("asking approval for step %s: %w", req.StepID, err)
		}
		if item == nil {
			return approval.ApprovalDecision{Allow: false, Reason: "approval dismissed"}, nil
		}
		for _, o := range approvalOptions {
			if o.Name == item.Title {
				optionID = o.OptionID
			}
		}
	}
	d, ok := approval.Answer(optionID, reason)
	if !ok {
		return approval.ApprovalDecision{}, fmt.Errorf("approval for step %s: unknown option %q", req.StepID, optionID)
	}
	return d, nil
}

func approvalTitle(req approval.ApprovalRequest) string {
	switch {
	case req.Title != "":
		return req.Title
	case req.Command != "":
		return "run `" + req.Command + "`"
	default:
		return "use " + req.Tool
	}
}

// inputter implements engine.Inputter with window/showMessageRequest.
type inputter Server

func (in *inputter) Ask(ctx context.Context, req engine.InputRequest) (string, error) {
	s := (*Server)(in)
	if len(req.Options) == 0 {
		return "", errors.New("step " + req.StepID + ": free-text questions are not supported by the editor protocol yet; give the step options")
	}
	actions := make([]protocol.MessageActionItem, len(req.Options))
	for i, o := range req.Options {
		actions[i] = protocol.MessageActionItem{Title: o}
	}
	item, err := s.client.ShowMessageRequest(ctx, &protocol.ShowMessageRequestParams{
		Type: protocol.MessageTypeInfo, Message: "agentd: " + req.Question, Actions: actions,
	})
	if err != nil {
		return "", fmt.Errorf("asking for step %s: %w", req.StepID, err)
	}
	if item == nil {
		return "", fmt.Errorf("step %s: the question was dismissed", req.StepID)
	}
	return item.Title, nil
}

// failureHandler implements engine.FailureHandler: the user chooses.
type failureHandler Server

// Titles of the failure choices.
const (
	failRetry = "Retry"
	failSkip  = "Skip"
	failAbort = "Abort"
)

func (f *failureHandler) OnFailure(ctx context.Context, runID, stepID string, err error) (engine.FailureAction, error) {
	s := (*Server)(f)
	item, cerr := s.client.ShowMessageRequest(ctx, &protocol.ShowMessageRequestParams{
		Type:    protocol.MessageTypeError,
		Message: fmt.Sprintf("agentd: step %q failed: %v", stepID, err),
		Actions: []protocol.MessageActionItem{{Title: failRetry}, {Title: failSkip}, {Title: failAbort}},
	})
	if cerr != nil {
		return engine.FailAbort, fmt.Errorf("asking what to do about step %s: %w", stepID, cerr)
	}
	if item == nil {
		return engine.FailAbort, nil
	}
	switch item.Title {
	case failRetry:
		return engine.FailRetry, nil
	case failSkip:
		return engine.FailSkip, nil
	}
	return engine.FailAbort, nil
}
