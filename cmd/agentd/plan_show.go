package main

import (
	"github.com/agentd/agentd/engine"
)

// stepTarget says in a few words what a step acts on (engine.StepTarget).
func stepTarget(s *engine.Step) string { return engine.StepTarget(s) }

func orDot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// oneLineText is s on one line, cut to n runes (engine.OneLine).
func oneLineText(s string, n int) string { return engine.OneLine(s, n) }
