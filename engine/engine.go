package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/workspace"
)

// Errors callers decide on.
var (
	ErrNoModel        = errors.New("no model configured")
	ErrBudgetExceeded = errors.New("budget exceeded")
)

// Tunables (tests may change them).
var (
	// DefaultMaxParallel is how many steps run at once when RunOptions
	// does not say.
	DefaultMaxParallel = 4
	// MaxRecoveriesPerStep bounds how often the planner may try to recover
	// one failed step before the user (or headless abort) decides.
	MaxRecoveriesPerStep = 2
)

// Config wires an engine. Only Tools is required (WS is needed by tools that
// touch files and to apply changes); nil hooks get the headless defaults
// (see defaults.go).
type Config struct {
	Tools     *tools.Registry
	WS        *workspace.Workspace
	Approver  approval.Approver
	Reviewer  Reviewer
	Inputter  Inputter
	OnFailure FailureHandler
	Snapshots Snapshotter
	// Ledger records what the agent changed as the agent's (ledger.go);
	// used only with Snapshots (it lives in the snapshot store). The Book
	// must record its decisions' writes in it too (review.Book.RecordEdits;
	// New does it for the book it makes).
	Ledger   Ledger
	Planner  Planner
	Model    StepModel
	Writer   workspace.FileWriter // how applied changes are written (nil: atomic on disk)
	Rules    []UpdateRule         // dynamic update rules
	Logger   *slog.Logger
	MaxSteps int // maxStepsPerPlan, default 200
	// Approval is the policy of runs whose options carry none (nil:
	// DefaultApprovalPolicy).
	Approval *approval.ApprovalPolicy
	// Journal, if set, records every run's state (the first and final
	// state before Start and Wait return, progress in between) and holds
	// the remembered approval rules: a question the policy asks is first
	// answered from them, and an "always" answer is added to them.
	Journal *Journal
	// Book holds the review state of the change sets of this engine's runs
	// (nil: a new one). The engine owns it; front ends show it and pass
	// the user's decisions to it.
	Book *review.Book
	// Subscribers receive every event of every run of this engine from the
	// first on, as RunOptions.Subscribers do (the session records what a
	// run did outside the workspace through one, for every front end).
	Subscribers []Subscriber
}

// RunOptions are a run's options (protocol RunOptions).
type RunOptions struct {
	RunID       string `json:"runId,omitempty"` // generated if empty
	Mode        string `json:"mode,omitempty"`  // "parallel" (default) or "sequential"
	MaxParallel int    `json:"maxParallel,omitempty"`
	// Review is set by session.StartRun for every front end (the one
	// default: session.RunRequest.ReviewMode). Left empty, as engine
	// tests and library callers may, it is "before" when the engine has a
	// Reviewer, else "none".
	Review            ReviewMode `json:"review,omitempty"`
	RollbackOnFailure bool       `json:"rollbackOnFailure,omitempty"`
	// DryRun runs the plan without effects, per tool category:
	//   read, input:     run as usual;
	//   write, delete:   the tool runs (it only proposes), the change set is
	//                    announced (changeProposed, StepState.ChangeIDs) and
	//                    its files are in the step output, but it is never
	//                    applied, reviewed or snapshotted;
	//   command, git,
	//   network:         not executed; the output says what would have run;
	//   llm, agent:      not called: a dry run makes no model call (nor
	//                    does recovery or re-planning); the step would
	//                    run, and what depends on it runs.
	// Nothing needs approval in a dry run, since nothing takes effect.
	DryRun bool `json:"dryRun,omitempty"`
	// Concurrent allows the run while another run of the workspace is
	// running or paused (see ActiveRunError).
	Concurrent  bool          `json:"concurrent,omitempty"`
	MaxTokens   int           `json:"maxTokens,omitempty"`
	MaxCostUSD  float64       `json:"maxCostUSD,omitempty"`
	StepTimeout time.Duration `json:"-"`
	MaxRePlans  *int          `json:"maxRePlans,omitempty"`
	// Approval overrides Config.Approval for this run.
	Approval *approval.ApprovalPolicy `json:"approval,omitempty"`
	// Planning is what making the plan from a request cost (the planner's
	// calls before the run): it counts toward the run's tokens, cost and
	// budget, and the summary shows it.
	Planning *PlanningUsage `json:"-"`
	// Subscribers receive every event of the run from the first
	// (runStarted) on; Run.Subscribe only sees later ones.
	Subscribers []Subscriber `json:"-"`
}

// UpdateRule may add steps after a step finishes (dynamic updates).
type UpdateRule interface {
	Name() string
	// After returns steps to add after step finished with st, and the reason.
	After(p *plans.Plan, step *plans.Step, st StepState) (add []*plans.Step, reason string)
}

// Engine runs plans. Safe for concurrent use; runs are independent.
type Engine struct {
	cfg Config
}

// New returns an engine.
func New(cfg Config) *Engine {
	if cfg.Book == nil {
		cfg.Book = review.NewBook()
		if cfg.Snapshots != nil {
			cfg.Book.RecordEdits(LedgerRecorder(cfg.Ledger))
		}
	}
	return &Engine{cfg: cfg}
}

// Book is the review book of this engine's runs.
func (e *Engine) Book() *review.Book { return e.cfg.Book }

// Journal is the workspace's journal (nil without one).
func (e *Engine) Journal() *Journal { return e.cfg.Journal }

// NoModelFix says how to configure a model in words every front end
// shares (no flag names: each front end adds its own way, such as agentd
// run's --model or the editor's initializationOptions.model).
const NoModelFix = "configure one with AGENTD_MODEL (e.g. openai:gpt-4o with OPENAI_API_KEY) or \"model\" in ~/.config/agentd/config.json " +
	"(see Configuration in the README)"

// MissingModel lists the steps of p that need a model (llm and agent
// steps) when the engine has none: a run of p would fail at the first of
// them, so front ends refuse it up front. Nil when the engine has a model.
func (e *Engine) MissingModel(p *plans.Plan) []plans.Problem {
	if p == nil || (e.cfg.Model != nil && modelConfigured(e.cfg.Model)) {
		return nil
	}
	var probs []plans.Problem
	for _, st := range p.Steps {
		if k := st.EffectiveKind(); k == plans.KindLLM || k == plans.KindAgent {
			probs = append(probs, plans.Problem{StepID: st.ID,
				Message: fmt.Sprintf("this %s step needs a model and none is configured: %s", k, NoModelFix)})
		}
	}
	return probs
}

// modelConfigured: a step model that may be without a model for now (the
// daemon's, which the editor can set later: session.ModelSwitch) says
// whether it has one.
func modelConfigured(m StepModel) bool {
	c, ok := m.(interface{ Configured() bool })
	return !ok || c.Configured()
}

// Start validates p and starts running it; it returns at once. The run
// stops when ctx is done (as Cancel). With Config.Snapshots set, the start
// snapshot is taken before Start returns (State().Snapshots[0]); if it
// cannot be taken the run does not start. A plan with llm or agent steps
// and no Config.Model is refused up front (MissingModel), except in a dry
// run, where those steps would run.
func (e *Engine) Start(ctx context.Context, p *plans.Plan, opts RunOptions) (*Run, error) {
	if p == nil {
		return nil, errors.New("engine: no plan to run")
	}
	if e.cfg.Tools == nil {
		return nil, errors.New("engine: Config.Tools is nil; pass tools.Builtin() or a registry")
	}
	if probs := plans.ValidatePlan(p, e.cfg.Tools, e.cfg.MaxSteps); len(probs) > 0 {
		return nil, &plans.ValidationError{Problems: probs}
	}
	if !opts.DryRun {
		if probs := e.MissingModel(p); len(probs) > 0 {
			return nil, plans.CausedBy(probs, ErrNoModel)
		}
	}
	if opts.RunID == "" {
		opts.RunID = newRunID()
	}
	if e.cfg.Journal != nil && !opts.Concurrent && !opts.DryRun {
		startMu.Lock()
		defer startMu.Unlock()
		active, err := activeRun(e.cfg.Journal)
		if err != nil {
			return nil, fmt.Errorf("run %s: not started, the journal's runs cannot be read: %w", opts.RunID, err)
		}
		if active != nil {
			return nil, &ActiveRunError{RunID: active.RunID, Status: active.Status}
		}
	}
	s := newSched(e, ctx, p.Clone(), opts)
	if e.cfg.Snapshots != nil {
		info, err := e.cfg.Snapshots.Snapshot(ctx, SnapshotRequest{RunID: opts.RunID, Label: LabelRunStart})
		if err != nil {
			s.cancelRun()
			return nil, fmt.Errorf("run %s: taking the start snapshot: %w (fix the snapshot store or run without snapshots)", opts.RunID, err)
		}
		s.r.addSnapshot(info, LabelRunStart)
	}
	if e.cfg.Journal != nil {
		s.journal = &runJournal{j: e.cfg.Journal, r: s.r, log: s.log}
		if err := s.journal.save(s.compactState(), false); err != nil {
			s.cancelRun()
			return nil, fmt.Errorf("run %s: not started, its journal cannot be written: %w", opts.RunID, err)
		}
		s.r.ev.subscribe(s.journal)
	}
	for _, sub := range append(append([]Subscriber(nil), e.cfg.Subscribers...), opts.Subscribers...) {
		s.r.ev.subscribe(sub)
	}
	go s.loop()
	return s.r, nil
}

// LabelRunStart labels a run's start snapshot (SnapshotRequest.Label,
// without a StepID): the one an undo of the run returns to.
const LabelRunStart = "run start"

func newRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// OptionError is a RunOptions field that cannot be used; Field is its JSON
// name ("stepTimeout", "budget.maxTokens").
type OptionError struct {
	Field   string
	Message string
}

func (e *OptionError) Error() string { return e.Field + ": " + e.Message }

// UnmarshalJSON reads protocol RunOptions (docs/protocol.md RunOptions); it
// is the one decoder of them, for every front end. Besides the flat fields
// it accepts `budget: {maxTokens, maxCostUSD}` and `stepTimeout` as a Go
// duration string ("90s") or milliseconds. A bad value is an
// *OptionError naming the field.
func (o *RunOptions) UnmarshalJSON(data []byte) error {
	type plain RunOptions
	var aux struct {
		plain
		Budget *struct {
			MaxTokens  int     `json:"maxTokens"`
			MaxCostUSD float64 `json:"maxCostUSD"`
		} `json:"budget,omitempty"`
		StepTimeout json.RawMessage `json:"stepTimeout,omitempty"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	*o = RunOptions(aux.plain)
	if b := aux.Budget; b != nil {
		if b.MaxTokens != 0 {
			o.MaxTokens = b.MaxTokens
		}
		if b.MaxCostUSD != 0 {
			o.MaxCostUSD = b.MaxCostUSD
		}
	}
	if len(aux.StepTimeout) > 0 && string(aux.StepTimeout) != "null" {
		var s string
		if json.Unmarshal(aux.StepTimeout, &s) == nil {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				return &OptionError{"stepTimeout", fmt.Sprintf("%q is not a positive Go duration; use one such as \"90s\" or \"5m\"", s)}
			}
			o.StepTimeout = d
		} else {
			var ms int64
			if err := json.Unmarshal(aux.StepTimeout, &ms); err != nil || ms <= 0 {
				return &OptionError{"stepTimeout", "want a duration string such as \"90s\" or a positive number of milliseconds"}
			}
			o.StepTimeout = time.Duration(ms) * time.Millisecond
		}
	}
	switch o.Mode {
	case "", "parallel", "sequential":
	default:
		return &OptionError{"mode", fmt.Sprintf("must be parallel or sequential, not %q", o.Mode)}
	}
	if o.MaxParallel < 0 {
		return &OptionError{"maxParallel", "must not be negative"}
	}
	if _, err := review.ParseMode(string(o.Review)); err != nil {
		return &OptionError{"review", err.Error()}
	}
	if o.MaxTokens < 0 || o.MaxCostUSD < 0 {
		return &OptionError{"budget", "limits must not be negative"}
	}
	return nil
}

// Validate returns every problem of p (nil if valid).
func (e *Engine) Validate(p *plans.Plan) []plans.Problem {
	return plans.ValidatePlan(p, e.cfg.Tools, e.cfg.MaxSteps)
}

// EditPlan returns a new version of p with edits applied, or a
// *ValidationError if the result would be invalid.
// The history entry has source "user"; ApplyEdits records other sources.
// Callers holding a client's version check it first with CheckVersion.
func (e *Engine) EditPlan(p *plans.Plan, edits []plans.Edit, reason string) (*plans.Plan, error) {
	return plans.ApplyEdits(p, edits, plans.EditOptions{Tools: e.cfg.Tools, MaxSteps: e.cfg.MaxSteps, Reason: reason})
}
