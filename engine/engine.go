package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/workspace"
)

// Errors callers decide on.
var (
	ErrNoModel        = errors.New("no model configured")
	ErrBudgetExceeded = errors.New("budget exceeded")
	ErrStaleVersion   = errors.New("plan version is stale")
)

// Config wires an engine. Only Tools and WS are required; nil hooks get the
// headless defaults.
type Config struct {
	Tools     *tools.Registry
	WS        *workspace.Workspace
	Approver  Approver
	Reviewer  Reviewer
	Inputter  Inputter
	OnFailure FailureHandler
	Snapshots Snapshotter
	Planner   Planner
	Model     StepModel
	Writer    workspace.FileWriter // how applied changes are written (nil: atomic on disk)
	Rules     []UpdateRule         // dynamic update rules
	Logger    *slog.Logger
	MaxSteps  int // maxStepsPerPlan, default 200
}

// RunOptions are a run's options (protocol RunOptions).
type RunOptions struct {
	RunID             string        `json:"runId,omitempty"` // generated if empty
	Mode              string        `json:"mode,omitempty"`  // "parallel" (default) or "sequential"
	MaxParallel       int           `json:"maxParallel,omitempty"`
	Review            ReviewMode    `json:"review,omitempty"`
	RollbackOnFailure bool          `json:"rollbackOnFailure,omitempty"`
	DryRun            bool          `json:"dryRun,omitempty"`
	MaxTokens         int           `json:"maxTokens,omitempty"`
	MaxCostUSD        float64       `json:"maxCostUSD,omitempty"`
	StepTimeout       time.Duration `json:"-"`
	MaxRePlans        *int          `json:"maxRePlans,omitempty"`
}

// UpdateRule may add steps after a step finishes (dynamic updates).
type UpdateRule interface {
	Name() string
	// After returns steps to add after step finished with st, and the reason.
	After(p *Plan, step *Step, st StepState) (add []*Step, reason string)
}

// Engine runs plans. Safe for concurrent use; runs are independent.
type Engine struct {
	cfg Config
}

// New returns an engine.
func New(cfg Config) *Engine { return &Engine{cfg: cfg} }

// Run is one execution of a plan.
type Run struct{}

// Start validates p and starts running it; it returns at once. The run
// stops when ctx is done (as Cancel).
func (e *Engine) Start(ctx context.Context, p *Plan, opts RunOptions) (*Run, error) {
	return nil, errors.New("engine: not implemented yet")
}

// ID returns the run's id.
func (r *Run) ID() string { return "" }

// Plan returns the plan the run is executing now (a copy; it changes when
// recovery, re-planning or rules update it).
func (r *Run) Plan() *Plan { return nil }

// State returns a copy of the run state with Steps.
func (r *Run) State() RunState { return RunState{} }

// Subscribe delivers every later event to s in order; the returned func
// unsubscribes. Events already emitted are not replayed.
func (r *Run) Subscribe(s Subscriber) (unsubscribe func()) { return func() {} }

// Pause stops starting new steps; running ones finish. Resume continues.
func (r *Run) Pause()  {}
func (r *Run) Resume() {}

// Cancel stops running steps through their context and ends the run.
func (r *Run) Cancel() {}

// RetryStep runs a failed, blocked or skipped step again (with new args if
// given), and then its dependents.
func (r *Run) RetryStep(stepID string, args []byte) error {
	return errors.New("engine: not implemented yet")
}

// SkipStep skips a step that has not started.
func (r *Run) SkipStep(stepID string) error { return errors.New("engine: not implemented yet") }

// Wait blocks until the run has finished (or ctx is done) and returns the
// final state, with Summary set.
func (r *Run) Wait(ctx context.Context) (RunState, error) {
	return RunState{}, errors.New("engine: not implemented yet")
}

// Summary renders the Markdown summary of a finished run.
func Summary(p *Plan, st RunState) string { return "" }
