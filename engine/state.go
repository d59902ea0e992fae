package engine

import (
	"encoding/json"
	"time"

	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/journal"
)

// StepStatus is a step's state; see docs/plans.md.
type StepStatus string

const (
	StepPending   StepStatus = "pending"
	StepReady     StepStatus = "ready"
	StepRunning   StepStatus = "running"
	StepRetrying  StepStatus = "retrying"
	StepCompleted StepStatus = "completed"
	StepFailed    StepStatus = "failed"
	StepSkipped   StepStatus = "skipped"
	StepBlocked   StepStatus = "blocked"
	StepCancelled StepStatus = "cancelled"
	StepWaiting   StepStatus = "waiting" // for approval, review or input
)

// RunStatus is a run's state.
type RunStatus string

const (
	RunRunning   RunStatus = "running"
	RunPaused    RunStatus = "paused"
	RunCompleted RunStatus = "completed"
	RunFailed    RunStatus = "failed"
	RunCancelled RunStatus = "cancelled"
	RunPartial   RunStatus = "partial"
)

// StepState is one step's state in a run.
type StepState struct {
	ID         string          `json:"id"`
	Status     StepStatus      `json:"status"`
	Attempts   int             `json:"attempts"`
	StartedAt  *time.Time      `json:"startedAt,omitempty"`
	EndedAt    *time.Time      `json:"endedAt,omitempty"`
	DurationMs int64           `json:"durationMs,omitempty"`
	Error      string          `json:"error,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	ChangeIDs  []string        `json:"changeIds,omitempty"`
	// RejectedChangeIDs are the ChangeIDs the user rejected as a whole
	// (at review, or by denying the approval to write them).
	RejectedChangeIDs []string `json:"rejectedChangeIds,omitempty"`
	// PartlyRejectedChangeIDs are the ChangeIDs of which the user applied
	// some hunks and rejected others; Reason says how many.
	PartlyRejectedChangeIDs []string `json:"partlyRejectedChangeIds,omitempty"`
	// UnappliedChangeIDs are the ChangeIDs that were proposed but never
	// applied nor decided: the run stopped during their review, or applying
	// them failed.
	UnappliedChangeIDs []string `json:"unappliedChangeIds,omitempty"`
	SnapshotID         string   `json:"snapshotId,omitempty"` // taken after the step
	// IgnoredChanged names the ignored files the step's commands changed
	// that undo cannot take back (engine/ignored.go), so they are named.
	IgnoredChanged []string `json:"ignoredChanged,omitempty"`
	Reason         string   `json:"reason,omitempty"` // why skipped/blocked
	// AllowedBy is the remembered rule that allowed the step's last
	// question without asking, so no front end runs it without a trace.
	AllowedBy *AllowedBy `json:"allowedBy,omitempty"`
}

// AllowedBy is a remembered approval rule that answered a question
// (protocol StepState.allowedBy).
type AllowedBy struct {
	RuleID  string `json:"ruleId"`
	Command string `json:"command,omitempty"`
}

// String is how every front end shows it: allowed by rule-2 (`go test ./...`).
func (a AllowedBy) String() string {
	if a.Command == "" {
		return "allowed by " + a.RuleID
	}
	return "allowed by " + a.RuleID + " (`" + a.Command + "`)"
}

// RunState is a copy of a run's state; the scheduler owns the original.
type RunState struct {
	RunID          string    `json:"runId"`
	PlanID         string    `json:"planId,omitempty"`
	PlanVersion    int       `json:"planVersion"`
	Status         RunStatus `json:"status"`
	Progress       float64   `json:"progress"`
	CompletedSteps int       `json:"completedSteps"`
	FailedSteps    int       `json:"failedSteps"`
	SkippedSteps   int       `json:"skippedSteps"`
	BlockedSteps   int       `json:"blockedSteps"`
	TotalSteps     int       `json:"totalSteps"`
	CurrentSteps   []string  `json:"currentSteps"`
	StartTime      time.Time `json:"startTime"`
	ElapsedMs      int64     `json:"elapsedMs"`
	EtaMs          *int64    `json:"etaMs,omitempty"`
	LLMCalls       int       `json:"llmCalls"`
	ToolCalls      int       `json:"toolCalls"`
	Tokens         int       `json:"tokens"`
	CostUSD        float64   `json:"costUSD"`
	RePlans        int       `json:"rePlans"`
	// Planning is what making the plan from a request used (included in
	// llmCalls, tokens and costUSD).
	Planning *PlanningUsage `json:"planning,omitempty"`
	// DryRun: the run only proposed (RunOptions.DryRun).
	DryRun    bool        `json:"dryRun,omitempty"`
	Steps     []StepState `json:"steps,omitempty"`
	Snapshots []string    `json:"snapshots"`
	// SnapshotLabels says what each of Snapshots is ("run start", "after
	// STEP", "before a command of STEP").
	SnapshotLabels map[string]string `json:"snapshotLabels,omitempty"`
	// SkippedFiles are the files the run's snapshots left out (over the
	// size limit, FIFOs, sockets, devices, unreadable): a restore cannot
	// bring them back, so they are reported, never left out silently.
	SkippedFiles     []gitops.SkippedFile `json:"skippedFiles,omitempty"`
	Summary          string               `json:"summary,omitempty"`
	Error            string               `json:"error,omitempty"`
	OriginalPlan     *plans.Plan          `json:"originalPlan,omitempty"`
	FinalPlan        *plans.Plan          `json:"finalPlan,omitempty"`
	RePlanIterations int                  `json:"rePlanIterations,omitempty"`
	Rollback         *RestoreInfo         `json:"rollback,omitempty"`
	// FilesChanged lists the files the run's applied changes touched
	// (relative paths, in order of first change).
	FilesChanged []string `json:"filesChanged,omitempty"`
	// Undone says the run was undone since (journal.Undone: an undo from
	// any front end, or its own rollback); set when read from the journal.
	Undone *journal.Undone `json:"undone,omitempty"`
}

// RestoreInfo reports a rollback done because the run failed.
type RestoreInfo struct {
	SnapshotID string `json:"snapshotId"`
	// Restored names every file the rollback changed.
	Restored []string `json:"restored,omitempty"`
	// Conflicts names every file it kept as it is (Kept says why).
	Conflicts []string `json:"conflicts,omitempty"`
	Error     string   `json:"error,omitempty"`
	// Reverted is set when the rollback reverted the run's edits (its
	// ledger, as undo does) rather than restoring the start snapshot.
	Reverted bool `json:"reverted,omitempty"`
	// Kept are the files the revert left as they are, with why (the user
	// changed lines the run wrote, or another reason).
	Kept []KeptFile `json:"kept,omitempty"`
	// Overwrite is the command that gives the kept files their state from
	// before the run anyway (a safety snapshot keeps the user's version).
	Overwrite string `json:"overwrite,omitempty"`
	// RecordedAs is the ledger owner of the rollback's own writes, so the
	// rollback can itself be undone.
	RecordedAs string `json:"recordedAs,omitempty"`
}

// KeptFile is a file a rollback left as it is, and why.
type KeptFile struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}
