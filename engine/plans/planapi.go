package plans

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/agentd/agentd/engine/tools"
)

// This file is the contract between the plan model (parse, validate,
// references, conditions, edits) and the scheduler (package engine).

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
//
// A nil reg skips the checks that need tools (tool names, args schemas).
func ValidatePlan(p *Plan, reg *tools.Registry, maxSteps int) []Problem {
	return validatePlan(p, reg, maxSteps)
}

// Clone returns a deep copy.
func (p *Plan) Clone() *Plan { return p.clone() }

// Step returns the step with id, or nil.
func (p *Plan) Step(id string) *Step { return p.step(id) }

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
func (s *Step) TimeoutOr(def time.Duration) time.Duration { return s.timeoutOr(def) }

// RetryPolicy returns the step's attempts after the first and its backoff:
// the wait before retry n (0-based) is min(delay*2^n, maxDelay).
//
// Without retry.delay the first wait is DefaultRetryDelay (1s); without
// retry.maxDelay the cap is DefaultMaxDelay (10s).
func (s *Step) RetryPolicy() (max int, delay, maxDelay time.Duration) { return s.retryPolicy() }

// Outputs maps step ids to their JSON outputs, for references.
type Outputs map[string]json.RawMessage

// ResolveArgs replaces references in a step's args: a string that is exactly
// "$id" or "${id.path}" takes the referenced value with its JSON type;
// references inside longer strings are interpolated as text.
//
// A reference to a missing output or field is an error naming the
// reference and the field of args it is in.
func ResolveArgs(args json.RawMessage, out Outputs) (json.RawMessage, error) {
	return resolveArgs(args, out)
}

// Interpolate replaces references inside a string (prompts, commands).
// Values that are not strings are written as compact JSON; "$$" is "$".
func Interpolate(s string, out Outputs) (string, error) {
	return interpolate(s, out)
}

// EvalCondition evaluates a `when` or check expression after interpolation.
// The language is described in cond.go and docs/plans.md.
func EvalCondition(expr string, out Outputs) (bool, error) {
	return evalCondition(expr, out)
}

// References returns the step ids a step's args, prompt, when and checks refer to.
// Ids containing dots are cut at the first "." or "[" here; Plan.References
// resolves them against the plan's steps.
func (s *Step) References() []string { return s.references() }

// ParsePlan reads a JSON or YAML plan. name is used in error messages and
// to choose the format (".yaml"/".yml" = YAML; otherwise sniffed).
//
// Every error is a *ValidationError: a syntax error is one Problem with
// its line and column (and unwraps to a *ParseError); unknown fields and
// fields of the wrong JSON type are one Problem each, naming the step and
// the field. ParsePlan does not validate: call ValidatePlan (or
// Engine.Validate) on the result. A plan without a version gets version 1.
func ParsePlan(name string, data []byte) (*Plan, error) {
	return parsePlan(name, data)
}

// ErrStaleVersion is what an edit or a check against an older version of
// a plan wraps (CheckVersion).
var ErrStaleVersion = errors.New("plan version is stale")

// Edit is one plan edit (protocol Edit).
type Edit struct {
	Op     string `json:"op"` // update, insert, remove, move, skip, unskip
	StepID string `json:"stepId,omitempty"`
	Step   *Step  `json:"step,omitempty"`
	After  string `json:"after,omitempty"`
}

// ReasonToModel reports whether the reasons for rejecting a change set of
// step stepID reach a model: the step is an llm or agent step, which is
// told which hunks were rejected and why (protocol ChangeSet
// reasonToModel).
func (p *Plan) ReasonToModel(stepID string) bool {
	if p == nil {
		return false
	}
	for _, st := range p.Steps {
		if st.ID == stepID {
			k := st.EffectiveKind()
			return k == KindLLM || k == KindAgent
		}
	}
	return false
}
