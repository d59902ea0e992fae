package engine

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/agentd/agentd/engine/tools"
)

// This file is the contract between the plan model (parse, validate,
// references, conditions, edits) and the scheduler in this package.

// Defaults of plan-format.md.
const (
	DefaultMaxSteps      = 200
	DefaultStepTimeout   = 5 * time.Minute
	DefaultMaxDelay      = 10 * time.Second
	DefaultMaxIterations = 5
	DefaultMaxRePlans    = 2
)

// ValidatePlan returns every problem of p checked against the tools in reg
// (nil if valid). maxSteps <= 0 means DefaultMaxSteps.
func ValidatePlan(p *Plan, reg *tools.Registry, maxSteps int) []Problem { return nil }

// Clone returns a deep copy.
func (p *Plan) Clone() *Plan { return p }

// Step returns the step with id, or nil.
func (p *Plan) Step(id string) *Step { return nil }

// IsCritical reports the step's effective criticality (default true).
func (s *Step) IsCritical() bool { return s.Critical == nil || *s.Critical }

// EffectiveKind is Kind or "tool".
func (s *Step) EffectiveKind() StepKind {
	if s.Kind == "" {
		return KindTool
	}
	return s.Kind
}

// TimeoutOr returns the step's timeout, or def if it has none. The plan
// has been validated, so the duration parses.
func (s *Step) TimeoutOr(def time.Duration) time.Duration { return def }

// RetryPolicy returns the step's attempts after the first and its backoff:
// the wait before retry n (0-based) is min(delay*2^n, maxDelay).
func (s *Step) RetryPolicy() (max int, delay, maxDelay time.Duration) { return 0, 0, DefaultMaxDelay }

// Outputs maps step ids to their JSON outputs, for references.
type Outputs map[string]json.RawMessage

// ResolveArgs replaces references in a step's args: a string that is exactly
// "$id" or "${id.path}" takes the referenced value with its JSON type;
// references inside longer strings are interpolated as text.
func ResolveArgs(args json.RawMessage, out Outputs) (json.RawMessage, error) {
	return args, errors.New("engine: not implemented yet")
}

// Interpolate replaces references inside a string (prompts, commands).
func Interpolate(s string, out Outputs) (string, error) {
	return s, errors.New("engine: not implemented yet")
}

// EvalCondition evaluates a `when` or check expression after interpolation.
func EvalCondition(expr string, out Outputs) (bool, error) {
	return false, errors.New("engine: not implemented yet")
}

// References returns the step ids a step's args, prompt, when and checks refer to.
func (s *Step) References() []string { return nil }

// ParsePlan reads a JSON or YAML plan. name is used in error messages and
// to choose the format (".yaml"/".yml" = YAML; otherwise sniffed).
func ParsePlan(name string, data []byte) (*Plan, error) {
	return nil, errors.New("engine: not implemented yet")
}

// Validate returns every problem of p (nil if valid).
func (e *Engine) Validate(p *Plan) []Problem { return ValidatePlan(p, e.cfg.Tools, e.cfg.MaxSteps) }

// Edit is one plan edit (protocol Edit).
type Edit struct {
	Op     string `json:"op"` // update, insert, remove, move, skip, unskip
	StepID string `json:"stepId,omitempty"`
	Step   *Step  `json:"step,omitempty"`
	After  string `json:"after,omitempty"`
}

// EditPlan returns a new version of p with edits applied, or a
// *ValidationError if the result would be invalid.
func (e *Engine) EditPlan(p *Plan, edits []Edit, reason string) (*Plan, error) {
	return nil, errors.New("engine: not implemented yet")
}
