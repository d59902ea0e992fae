// Package plans is the plan model every front end and the scheduler share:
// Plan and Step (this file), parsing (parse.go), validation (validate.go,
// argschema.go), references (refs.go), conditions (cond.go), edits and
// versions (edit.go), renaming a step (rename.go), the planner's context
// (plancontext.go) and plan files (planfile.go). It imports no part of
// engine: the scheduler (package engine) runs what this package accepts.
package plans

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// StepKind is what a step does.
type StepKind string

const (
	KindTool       StepKind = "tool"
	KindLLM        StepKind = "llm"
	KindAgent      StepKind = "agent"
	KindValidation StepKind = "validation"
	KindInput      StepKind = "input"
	KindDecision   StepKind = "decision"
)

// Plan is a versioned value: an edit makes a new Plan with Version+1 and an
// entry in History. Never mutate a Plan that a run or another goroutine may
// hold; Clone it.
type Plan struct {
	ID        string       `json:"id,omitempty"`
	Version   int          `json:"version,omitempty"`
	Title     string       `json:"title,omitempty"`
	Request   string       `json:"request,omitempty"`
	Steps     []*Step      `json:"steps"`
	CreatedAt time.Time    `json:"createdAt,omitzero"`
	History   []PlanUpdate `json:"history,omitempty"`
	// Context is what the planner's model read before planning (plancontext.go).
	Context []ContextItem `json:"context,omitempty"`
	// Source is the file the plan was read from, for error messages.
	Source string `json:"-"`
}

// Step is one step of a plan; see docs/plans.md for every field.
type Step struct {
	ID          string          `json:"id"`
	Description string          `json:"description,omitempty"`
	Kind        StepKind        `json:"kind,omitempty"`
	Tool        string          `json:"tool,omitempty"`
	Args        json.RawMessage `json:"args,omitempty"`

	// llm and agent steps.
	Prompt        string   `json:"prompt,omitempty"`
	Tools         []string `json:"tools,omitempty"`
	MaxIterations int      `json:"maxIterations,omitempty"`
	Model         string   `json:"model,omitempty"`

	// validation steps: every check must hold.
	Checks []Check `json:"checks,omitempty"`
	// input steps.
	Question string   `json:"question,omitempty"`
	Options  []string `json:"options,omitempty"`
	// decision steps: the first branch whose condition holds is taken; the
	// steps named by the other branches are skipped.
	Branches []Branch `json:"branches,omitempty"`

	DependsOn  []string `json:"dependsOn,omitempty"`
	When       string   `json:"when,omitempty"`
	Critical   *bool    `json:"critical,omitempty"`
	Risk       string   `json:"risk,omitempty"`
	Approval   string   `json:"approval,omitempty"`
	Retry      *Retry   `json:"retry,omitempty"`
	Timeout    string   `json:"timeout,omitempty"`
	Reversible *bool    `json:"reversible,omitempty"`
	// Skip is set when the user skipped the step while editing the plan.
	Skip bool `json:"skip,omitempty"`
}

// Check is one condition of a validation step.
type Check struct {
	Expr    string `json:"expr"`
	Message string `json:"message,omitempty"`
}

// Branch is one choice of a decision step.
type Branch struct {
	When  string   `json:"when,omitempty"` // empty = otherwise
	Steps []string `json:"steps"`
}

// Retry is a step's retry policy; durations are Go durations ("1s").
type Retry struct {
	Max      int    `json:"max"`
	Delay    string `json:"delay,omitempty"`
	MaxDelay string `json:"maxDelay,omitempty"`
}

// PlanUpdate is one entry of a plan's history.
type PlanUpdate struct {
	Version int       `json:"version"`
	Time    time.Time `json:"time"`
	Source  string    `json:"source"` // "user", "recovery", "replan", "rule", "load"
	Reason  string    `json:"reason"`
	Action  string    `json:"action,omitempty"` // e.g. "insert_recovery_steps"
	StepIDs []string  `json:"stepIds,omitempty"`
}

// Problem is one validation problem. File is the plan's source if known.
type Problem struct {
	File    string `json:"file,omitempty"`
	StepID  string `json:"stepId,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	// Line and Col locate a syntax error in File (1-based; 0 = unknown).
	Line int `json:"line,omitempty"`
	Col  int `json:"column,omitempty"`
}

// ValidationError carries every problem of a plan. A syntax error is one
// Problem with its Line and Col, and unwraps to the *ParseError; a plan
// that needs a model the engine lacks unwraps to ErrNoModel.
type ValidationError struct {
	Problems []Problem
	cause    error
}

// Unwrap returns the *ParseError behind a syntax error, ErrNoModel, or nil.
func (e *ValidationError) Unwrap() error { return e.cause }

// CausedBy returns a ValidationError of problems that unwraps to cause (the
// engine's ErrNoModel).
func CausedBy(problems []Problem, cause error) *ValidationError {
	return &ValidationError{Problems: problems, cause: cause}
}

// String renders the problem as `file: step "id": field: message`.
func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File + ": ")
	}
	if p.StepID != "" {
		b.WriteString("step " + strconv.Quote(p.StepID) + ": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Error lists every problem, one a line after the first.
func (e *ValidationError) Error() string {
	switch len(e.Problems) {
	case 0:
		return "plan invalid"
	case 1:
		return "plan invalid: " + e.Problems[0].String()
	}
	var b strings.Builder
	b.WriteString("plan invalid: " + strconv.Itoa(len(e.Problems)) + " problems:")
	for _, p := range e.Problems {
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}
