package rpc

import (
	"log/slog"

	"github.com/agentd/agentd/engine"
)

// persister is the server's use of the workspace's journal
// (engine.Journal, shared with agentd run); plans are the session's
// (session.PlanStore).
// Runs and remembered approval rules are recorded by the engine itself,
// change sets and their review state by the review book (keepChanges). A save that fails returns an error naming the file and
// what to do; handlers return it instead of acknowledging.
type persister struct {
	j   *engine.Journal
	log *slog.Logger
}

// journal is the workspace's journal, nil without a workspace.
func (p *persister) journal() *engine.Journal {
	if p == nil {
		return nil
	}
	return p.j
}

func (p *persister) loadRuns() []engine.RunState {
	if p == nil {
		return nil
	}
	runs, err := p.j.Runs()
	if err != nil {
		p.log.Error("reading the run journal failed", "error", err)
	}
	return runs
}
