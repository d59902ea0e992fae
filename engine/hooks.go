package engine

import (
	"context"
	"encoding/json"

	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/workspace"
)

// The interfaces below are how front ends and later packages plug into a
// run. Each has a headless default (see defaults.go).

// ReviewMode is when file changes are shown to the user (review.Mode).
type ReviewMode = review.Mode

const (
	ReviewBefore = review.Before // held until accepted
	ReviewAfter  = review.After  // applied at once, offered for review
	ReviewNone   = review.None   // applied silently
)

// BufferSaver is a Config.Writer whose writes can land in the editor's
// open buffers without reaching the disk (the editor server's, through
// workspace/applyEdit). The rule: a change applied at once (review after
// or none) is on disk when its step goes on, as the docs say ("written at
// once"), so that agentd review, a command or another process reads what
// the editor shows. After such a write the engine asks the writer to save
// the buffers of paths (relative); it returns the paths left unsaved (the
// user kept their own unsaved edits out of the disk, or the editor could
// not save), which the step then names.
type BufferSaver interface {
	SaveWritten(ctx context.Context, paths []string, reason string) (unsaved []string)
}

// HunkRejection is a rejected hunk and the user's reason.
type HunkRejection = review.HunkRejection

// ReviewOutcome is what the user decided on a change set.
type ReviewOutcome = review.Outcome

// Reviewer shows change sets to the user.
type Reviewer interface {
	// ReviewBefore holds cs (not yet applied) until the user has decided on
	// every hunk, applies the accepted ones, and returns the outcome.
	ReviewBefore(ctx context.Context, cs *workspace.ChangeSet) (*ReviewOutcome, error)
	// OfferAfter registers an already applied cs for review; it must not block.
	OfferAfter(ctx context.Context, cs *workspace.ChangeSet) error
}

// InputRequest is a question for the user (input steps, ask_user).
type InputRequest struct {
	RunID    string   `json:"runId"`
	StepID   string   `json:"stepId"`
	Question string   `json:"question"`
	Options  []string `json:"options,omitempty"`
}

// Inputter asks the user. Headless runs have none: input steps fail with an
// error saying the plan needs an interactive front end or a default.
type Inputter interface {
	Ask(ctx context.Context, req InputRequest) (string, error)
}

// FailureAction is what to do with a failed critical step when no planner
// could recover it.
type FailureAction string

const (
	FailAbort FailureAction = "abort"
	FailSkip  FailureAction = "skip"
	FailRetry FailureAction = "retry"
)

// FailureHandler asks the user about a failed critical step (editor
// sessions). Headless: abort.
type FailureHandler interface {
	OnFailure(ctx context.Context, runID, stepID string, err error) (FailureAction, error)
}

// SnapshotRequest names what a snapshot is for.
type SnapshotRequest struct {
	RunID  string
	StepID string
	Label  string
	// Limit, when set, records only what the step changed (see
	// step_snapshot.go): the snapshotter passes it to gitops.
	Limit *gitops.SnapshotLimit
}

// RestoreRequest asks for a rollback to a snapshot. Without Overwrite the
// snapshot store protects what someone else changed (it chooses the
// protection base itself: gitops.Store.Restore), and the files it leaves
// alone are conflicts.
type RestoreRequest struct {
	SnapshotID string
	Paths      []string
	Overwrite  bool
}

// SnapshotInfo is a snapshot taken: its id and the files it left out
// (over the size limit, FIFOs, sockets, devices, unreadable), which the
// run reports so that nothing is left out silently.
type SnapshotInfo struct {
	ID      string
	Skipped []gitops.SkippedFile
}

// Snapshotter takes and restores snapshots (gitops.Store behind an adapter).
type Snapshotter interface {
	Snapshot(ctx context.Context, req SnapshotRequest) (SnapshotInfo, error)
	Restore(ctx context.Context, req RestoreRequest) (*RestoreInfo, error)
}

// Usage is model use of one call.
type Usage struct {
	InputTokens  int     `json:"inputTokens"`
	OutputTokens int     `json:"outputTokens"`
	CostUSD      float64 `json:"costUSD"`
}

// Budget lets model code check and count use against the run's budget.
type Budget interface {
	// Reserve fails with ErrBudgetExceeded if estimated tokens/cost would
	// exceed the budget; nothing is counted.
	Reserve(estTokens int, estCostUSD float64) error
	// Add counts actual use.
	Add(u Usage)
}

// ToolExecutor runs one tool call for an agent step through the same
// approval, review and snapshot path as a plan step.
type ToolExecutor func(ctx context.Context, tool string, args json.RawMessage) (*ToolCallResult, error)

// ToolCallResult is what an agent's tool call produced, as the model sees it.
type ToolCallResult struct {
	Output   any             `json:"output,omitempty"`
	Error    string          `json:"error,omitempty"`
	Rejected []HunkRejection `json:"rejected,omitempty"`
	// Note says how much of the change the user rejected (status.go),
	// in words for the model; the list above says which hunks and why.
	Note string `json:"-"`
}

// ModelCall is an llm or agent step ready to run.
type ModelCall struct {
	RunID  string
	Step   *plans.Step
	Prompt string // interpolated
	Model  string // step's model or "" for the default
	// Tools and Exec are set for agent steps.
	Tools  []tools.Tool
	Exec   ToolExecutor
	Budget Budget
	Output func(text string) // streamed model output
	// Guidance, set for agent steps, returns the words the user gave the
	// run while it goes (Run.Guide) that this step has not taken yet: the
	// step model calls it before each model call and adds each as a user
	// message (GuidancePrefix). It never blocks.
	Guidance func() []string
}

// GuidancePrefix starts the user message that gives a model the user's
// words added while it works (a run's agent steps, a chat's planner).
const GuidancePrefix = "The user adds, while the run goes: "

// ModelResult is the outcome of an llm or agent step.
type ModelResult struct {
	Text              string `json:"text"`
	Usage             Usage  `json:"usage"`
	Calls             int    `json:"calls"`
	NeedsMoreContext  bool   `json:"needsMoreContext,omitempty"`
	ContextSuggestion string `json:"contextSuggestion,omitempty"`
}

// StepModel runs llm and agent steps (engine/llm). Without one, such steps
// fail with ErrNoModel.
type StepModel interface {
	RunStep(ctx context.Context, call ModelCall) (*ModelResult, error)
}

// RecoveryRequest describes a failed critical step.
type RecoveryRequest struct {
	Plan      *plans.Plan
	StepID    string
	Error     string
	Completed map[string]json.RawMessage // outputs of completed steps
	Budget    Budget
}

// Recovery actions.
const (
	RecoverRetryWithChanges = "retry_with_changes"
	RecoverInsertSteps      = "insert_recovery_steps"
	RecoverRedesign         = "redesign_remaining_plan"
	RecoverFailGracefully   = "fail_gracefully"
)

// RecoveryDecision is the planner's answer. For retry_with_changes Step is
// the changed step (same id); for insert_recovery_steps Steps run before the
// failed step, which then runs again; for redesign_remaining_plan Steps
// replace every step not yet run.
type RecoveryDecision struct {
	Action string        `json:"action"`
	Reason string        `json:"reason"`
	Step   *plans.Step   `json:"step,omitempty"`
	Steps  []*plans.Step `json:"steps,omitempty"`
}

// RePlanRequest asks for extra steps when a step needs more context.
type RePlanRequest struct {
	Plan       *plans.Plan
	StepID     string
	Suggestion string
	Completed  map[string]json.RawMessage
	Iteration  int
	Budget     Budget
}

// Planner repairs and extends plans (engine/llm).
type Planner interface {
	Recover(ctx context.Context, req RecoveryRequest) (*RecoveryDecision, error)
	RePlan(ctx context.Context, req RePlanRequest) ([]*plans.Step, error)
}
