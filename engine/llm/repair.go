package llm

import (
	"github.com/agentd/agentd/engine/plans"
)

// RepairError is a plan the model could not make valid in its repair
// round: the problems of its last answer, and that answer's plan text, so
// that a front end can show why and keep the plan for the user to fix
// rather than throw it away. errors.As finds the *plans.ValidationError
// behind it.
type RepairError struct {
	Problems []plans.Problem
	Text     string // the model's last plan, as JSON (what it answered, the JSON part)
}

func (e *RepairError) Error() string { return e.Unwrap().Error() }

// Unwrap is the validation error of the repaired plan.
func (e *RepairError) Unwrap() error { return &plans.ValidationError{Problems: e.Problems} }
