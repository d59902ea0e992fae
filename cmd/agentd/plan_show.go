package main

import (
	"github.com/agentd/agentd/engine/plans"
)

// stepTarget says in a few words what a step acts on (plans.StepTarget).
func stepTarget(s *plans.Step) string { return plans.StepTarget(s) }
