package main

import (
	"github.com/agentd/agentd/engine"
)

// stepTarget says in a few words what a step acts on (engine.StepTarget).
func stepTarget(s *engine.Step) string { return engine.StepTarget(s) }
