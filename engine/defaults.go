package engine

import (
	"context"
	"fmt"
	"github.com/agentd/agentd/engine/approval"
)

// Headless defaults for the hooks a front end did not supply:
//
//   - Approver: deny, saying how to allow (the CLI supplies a terminal
//     prompt, or allows everything with --yes; rpc asks the editor).
//   - Reviewer: none. Review mode `before` then fails the write step with
//     a message; `after` behaves as `none`.
//   - Inputter: none; input steps and ask_user fail with a message.
//   - FailureHandler: abort the run.
//   - Snapshotter, Planner, StepModel: none (no snapshots, no recovery or
//     re-planning, llm/agent steps fail with ErrNoModel).

// denyApprover refuses everything that needs approval.
type denyApprover struct{}

func (denyApprover) Approve(ctx context.Context, req approval.ApprovalRequest) (approval.ApprovalDecision, error) {
	return approval.ApprovalDecision{Allow: false, Reason: fmt.Sprintf(
		"%s needs approval and nobody can answer: run it where someone can, or allow %q in the approval policy",
		req.Title, req.Category)}, nil
}

// abortOnFailure is the headless FailureHandler.
type abortOnFailure struct{}

func (abortOnFailure) OnFailure(ctx context.Context, runID, stepID string, err error) (FailureAction, error) {
	return FailAbort, nil
}
