package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/workspace"
)

// The permission options offered for an approval, one per ACP kind; their
// ids are the kinds.
var approvalOptions = []sdk.PermissionOption{
	{OptionId: sdk.PermissionOptionId(sdk.PermissionOptionKindAllowOnce), Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce},
	{OptionId: sdk.PermissionOptionId(sdk.PermissionOptionKindAllowAlways), Name: "Always allow", Kind: sdk.PermissionOptionKindAllowAlways},
	{OptionId: sdk.PermissionOptionId(sdk.PermissionOptionKindRejectOnce), Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
	{OptionId: sdk.PermissionOptionId(sdk.PermissionOptionKindRejectAlways), Name: "Always reject", Kind: sdk.PermissionOptionKindRejectAlways},
}

// ask sends session/request_permission about a step's tool call (after
// the tool call itself: see outbox.go) and returns the chosen option id,
// or "" when the client answered cancelled. A cancelled answer ends the
// turn: ACP's Cancel on a permission prompt means "stop", so no later step
// runs and the prompt answers stopReason cancelled.
func (s *session) ask(ctx context.Context, runID, stepID string, tc sdk.ToolCallUpdate, options []sdk.PermissionOption) (string, error) {
	res, err := s.requestPermission(ctx, sdk.RequestPermissionRequest{SessionId: sdk.SessionId(s.id), ToolCall: tc, Options: options},
		s.starter(runID, stepID))
	if err != nil {
		if ctx.Err() != nil {
			return "", nil
		}
		return "", fmt.Errorf("asking the editor for permission: %w", err)
	}
	if res.Outcome.Selected == nil {
		s.log.Info("a permission request was answered cancelled; the turn ends", "toolCallId", tc.ToolCallId)
		s.cancel()
		return "", nil
	}
	id := string(res.Outcome.Selected.OptionId)
	for _, o := range options {
		if string(o.OptionId) == id {
			return id, nil
		}
	}
	return "", fmt.Errorf("the editor chose permission option %q, which was not offered", id)
}

// approvalsAnswered is how many approvals of tool call id were answered.
func (s *session) approvalsAnswered(id sdk.ToolCallId) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.answered[id]
}

// starter builds the tool_call of a step of the running turn, for a
// permission request that comes before the step's events.
func (s *session) starter(runID, stepID string) func() sdk.SessionUpdate {
	s.mu.Lock()
	w := s.watch
	s.mu.Unlock()
	if w == nil {
		return func() sdk.SessionUpdate {
			return sdk.StartToolCall(sdk.ToolCallId(runID+"/"+stepID), stepID, sdk.WithStartStatus(sdk.ToolCallStatusPending))
		}
	}
	return w.starter(runID, stepID, sdk.ToolCallStatusPending)
}

// approver is the engine's Approver: it asks the user through
// session/request_permission. The engine answers from the remembered
// rules before it asks, and remembers an "always" answer.
type approver session

func (a *approver) Approve(ctx context.Context, req approval.ApprovalRequest) (approval.ApprovalDecision, error) {
	s := (*session)(a)
	status := sdk.ToolCallStatusPending
	title, content, locs := s.describeApproval(req)
	tc := sdk.ToolCallUpdate{
		ToolCallId: sdk.ToolCallId(req.RunID + "/" + req.StepID),
		Title:      &title,
		Status:     &status,
		Content:    content,
		Locations:  locs,
		RawInput:   map[string]any{"tool": req.Tool, "category": req.Category, "risk": req.Risk, "command": req.Command, "cwd": req.Cwd},
	}
	if req.Command != "" {
		k := sdk.ToolKindExecute
		tc.Kind = &k
	}
	opt, err := s.ask(ctx, req.RunID, req.StepID, tc, approvalOptions)
	s.mu.Lock()
	if s.answered == nil {
		s.answered = map[sdk.ToolCallId]int{}
	}
	s.answered[tc.ToolCallId]++
	s.mu.Unlock()
	if err != nil {
		return approval.ApprovalDecision{}, err
	}
	if opt == "" {
		return approval.ApprovalDecision{Reason: "the permission request was cancelled"}, nil
	}
	// ACP's option kinds are the engine's four answers (approval.Answer).
	reason := ""
	switch sdk.PermissionOptionKind(opt) {
	case sdk.PermissionOptionKindRejectOnce:
		reason = "rejected in the editor"
	case sdk.PermissionOptionKindRejectAlways:
		reason = "always rejected in the editor"
	}
	d, _ := approval.Answer(string(opt), reason)
	return d, nil
}

// reviewer is the engine's Reviewer for review mode "before" (the ask
// mode): the change set is shown as diffs in a permission request, and
// applied through the client (fs/write_text_file) or the workspace.
type reviewer session

var reviewOptions = []sdk.PermissionOption{
	{OptionId: "apply", Name: "Apply", Kind: sdk.PermissionOptionKindAllowOnce},
	{OptionId: "reject", Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce},
}

func (r *reviewer) ReviewBefore(ctx context.Context, cs *workspace.ChangeSet) (*engine.ReviewOutcome, error) {
	s := (*session)(r)
	title := fmt.Sprintf("Apply step %s's changes: %s?", cs.StepID, changeSummary(cs))
	status := sdk.ToolCallStatusPending
	kind := sdk.ToolKindEdit
	tc := sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(cs.RunID + "/" + cs.StepID), Title: &title, Status: &status, Kind: &kind}
	tc.Content, tc.Locations = changeContent(s.ws.Root(), cs)
	opt, err := s.ask(ctx, cs.RunID, cs.StepID, tc, reviewOptions)
	if err != nil {
		return nil, err
	}
	reason := ""
	switch opt {
	case "reject":
		reason = "rejected in the editor"
	case "":
		reason = "the review was cancelled"
	}
	return reviewChangeSet(ctx, s.book, s.ws, s.writer, cs, opt == "apply", reason)
}

// OfferAfter is not used: the ACP modes run in review modes before and
// none. Changes applied without review are already shown as diffs.
func (r *reviewer) OfferAfter(ctx context.Context, cs *workspace.ChangeSet) error { return nil }

// inputter answers input steps and ask_user with a permission request
// whose options are the step's choices (ACP has no free-text question).
type inputter session

func (in *inputter) Ask(ctx context.Context, req engine.InputRequest) (string, error) {
	s := (*session)(in)
	if len(req.Options) == 0 {
		return "", errors.New("step " + req.StepID + ": ACP editors can only answer questions with fixed options; give the step options")
	}
	opts := make([]sdk.PermissionOption, len(req.Options))
	for i, o := range req.Options {
		opts[i] = sdk.PermissionOption{OptionId: sdk.PermissionOptionId(strconv.Itoa(i)), Name: o, Kind: sdk.PermissionOptionKindAllowOnce}
	}
	title := req.Question
	kind := sdk.ToolKindOther
	raw, _ := json.Marshal(req)
	opt, err := s.ask(ctx, req.RunID, req.StepID, sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(req.RunID + "/" + req.StepID), Title: &title, Kind: &kind, RawInput: json.RawMessage(raw)}, opts)
	if err != nil {
		return "", err
	}
	i, err := strconv.Atoi(opt)
	if opt == "" || err != nil || i < 0 || i >= len(req.Options) {
		return "", fmt.Errorf("step %s: the question was dismissed", req.StepID)
	}
	return req.Options[i], nil
}
