package rpc

import (
	"log/slog"

	"github.com/agentd/agentd/engine"
)

// persister is the server's use of the workspace's journal
// (engine.Journal, shared with agentd run): plans and the session policy.
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

func (p *persister) savePlan(pl *engine.Plan) error {
	if p == nil {
		return nil
	}
	if err := p.j.SavePlan(pl); err != nil {
		p.log.Error("saving a plan failed", "plan", pl.ID, "error", err)
		return err
	}
	return nil
}

func (p *persister) loadPlans() []*engine.Plan {
	if p == nil {
		return nil
	}
	pls, err := p.j.Plans()
	if err != nil {
		p.log.Error("reading saved plans failed", "error", err)
	}
	return pls
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
