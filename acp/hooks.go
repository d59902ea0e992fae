package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/engine"
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

// ask sends session/request_permission and returns the chosen option id,
// or "" when the client answered cancelled (the turn was cancelled: the
// spec has the client answer every pending request so).
func (s *session) ask(ctx context.Context, tc sdk.ToolCallUpdate, options []sdk.PermissionOption) (string, error) {
	res, err := s.a.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: sdk.SessionId(s.id), ToolCall: tc, Options: options})
	if err != nil {
		if ctx.Err() != nil {
			return "", nil
		}
		return "", fmt.Errorf("asking the editor for permission: %w", err)
	}
	if res.Outcome.Selected == nil {
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

// approver is the engine's Approver: it asks the user through
// session/request_permission. The engine answers from the remembered
// rules before it asks, and remembers an "always" answer.
type approver session

func (a *approver) Approve(ctx context.Context, req engine.ApprovalRequest) (engine.ApprovalDecision, error) {
	s := (*session)(a)
	title := req.Title
	if title == "" {
		title = fmt.Sprintf("Step %s wants to use %s", req.StepID, req.Tool)
	}
	status := sdk.ToolCallStatusPending
	tc := sdk.ToolCallUpdate{
		ToolCallId: sdk.ToolCallId(req.RunID + "/" + req.StepID),
		Title:      &title,
		Status:     &status,
		RawInput:   map[string]any{"tool": req.Tool, "category": req.Category, "risk": req.Risk, "command": req.Command, "cwd": req.Cwd},
	}
	if req.Detail != "" {
		tc.Content = []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(req.Detail))}
	}
	if req.Command != "" {
		k := sdk.ToolKindExecute
		tc.Kind = &k
	}
	opt, err := s.ask(ctx, tc, approvalOptions)
	if err != nil {
		return engine.ApprovalDecision{}, err
	}
	if opt == "" {
		return engine.ApprovalDecision{Reason: "the permission request was cancelled"}, nil
	}
	// ACP's option kinds are the engine's four answers (engine.Answer).
	reason := ""
	switch sdk.PermissionOptionKind(opt) {
	case sdk.PermissionOptionKindRejectOnce:
		reason = "rejected in the editor"
	case sdk.PermissionOptionKindRejectAlways:
		reason = "always rejected in the editor"
	}
	d, _ := engine.Answer(string(opt), reason)
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
	title := fmt.Sprintf("Apply the changes of step %s?", cs.StepID)
	status := sdk.ToolCallStatusPending
	kind := sdk.ToolKindEdit
	tc := sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(cs.RunID + "/" + cs.StepID), Title: &title, Status: &status, Kind: &kind}
	for _, f := range cs.Files {
		abs := filepath.Join(s.ws.Root(), filepath.FromSlash(f.Path))
		tc.Locations = append(tc.Locations, sdk.ToolCallLocation{Path: abs})
		if f.Binary {
			tc.Content = append(tc.Content, sdk.ToolContent(sdk.TextBlock(string(f.Op)+" "+f.Path+" (binary)")))
			continue
		}
		if f.Op == workspace.OpCreate {
			tc.Content = append(tc.Content, sdk.ToolDiffContent(abs, string(f.New)))
		} else {
			tc.Content = append(tc.Content, sdk.ToolDiffContent(abs, string(f.New), string(f.Old)))
		}
	}
	opt, err := s.ask(ctx, tc, reviewOptions)
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
	opt, err := s.ask(ctx, sdk.ToolCallUpdate{ToolCallId: sdk.ToolCallId(req.RunID + "/" + req.StepID), Title: &title, Kind: &kind, RawInput: json.RawMessage(raw)}, opts)
	if err != nil {
		return "", err
	}
	i, err := strconv.Atoi(opt)
	if opt == "" || err != nil || i < 0 || i >= len(req.Options) {
		return "", fmt.Errorf("step %s: the question was dismissed", req.StepID)
	}
	return req.Options[i], nil
}
