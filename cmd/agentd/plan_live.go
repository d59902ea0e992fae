package main

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/llm"
)

// planOpts are `agentd plan`'s planner options.
type planOpts struct {
	explore   int // exploration rounds (0: default, -1: none)
	mapTokens int // repository map budget (0: default, -1: none)
	stateDir  string
	budget    engine.Budget // if set, charged for the planner's calls
	used      *engine.Usage // if set, receives what the planner used
}

// planLive shows the planner's progress on stderr (a live line on a
// terminal, plain lines otherwise), its warnings, and, when the plan is
// made, what the model looked at.
type planLive struct {
	cmd  string
	w    io.Writer
	tty  bool
	mu   sync.Mutex
	line bool
}

func newPlanLive(cmd string, w io.Writer) *planLive {
	tty := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &planLive{cmd: cmd, w: w, tty: tty}
}

func (l *planLive) progress(p llm.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tty {
		fmt.Fprintf(l.w, "\r\033[Kagentd %s: %s", l.cmd, p.String())
		l.line = true
		return
	}
	fmt.Fprintf(l.w, "agentd %s: %s\n", l.cmd, p.String())
}

func (l *planLive) warnings(ws []engine.Problem) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	for _, w := range ws {
		fmt.Fprintf(l.w, "agentd %s: %s\n", l.cmd, w.String())
	}
}

func (l *planLive) clear() {
	if l.line {
		fmt.Fprint(l.w, "\r\033[K")
		l.line = false
	}
}

func (l *planLive) done(plan *engine.Plan) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	if t := engine.ContextText(plan); t != "" {
		fmt.Fprint(l.w, t)
	}
}
