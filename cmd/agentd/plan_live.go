package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/session"
)

// planOpts are `agentd plan`'s planner options.
type planOpts struct {
	explore   int // exploration rounds (0: default, -1: none)
	mapTokens int // repository map budget (0: default, -1: none)
	stateDir  string
	budget    engine.Budget // if set, charged for the planner's calls
	used      *engine.Usage // if set, receives what the planner used
	verbose   bool          // show the model's text as it streams
	// con, if set, asks before the planner's model reads a sensitive file
	// (session.PlanRequest.Approve); nil, or standard input closed: the file
	// is left out with a note. yes allows every such read.
	con *console
	yes bool
}

// planLive shows the planner's progress on stderr: on a terminal a live
// line with a spinner, the phase and the time it has taken so far, redrawn
// 8 times a second, so a slow or hung model is seen to be waited for;
// plain lines otherwise. Its warnings, log lines and (verbose) the model's
// streamed text print above the live line, never over it; when the plan
// is made, what the model looked at.
type planLive struct {
	cmd     string
	w       io.Writer
	tty     bool
	verbose bool

	mu     sync.Mutex
	line   bool
	phase  string
	t0     time.Time
	frame  int
	text   strings.Builder // streamed text not yet printed (no newline yet)
	stop   chan struct{}
	ended  chan struct{}
	closed bool
	held   bool // a question is on screen: no redraw
}

func newPlanLive(cmd string, w io.Writer) *planLive {
	tty := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	l := &planLive{cmd: cmd, w: w, tty: tty, t0: time.Now(), stop: make(chan struct{}), ended: make(chan struct{})}
	if tty {
		go l.tick()
	} else {
		close(l.ended)
	}
	return l
}

func (l *planLive) tick() {
	defer close(l.ended)
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.mu.Lock()
			l.frame++
			l.draw()
			l.mu.Unlock()
		}
	}
}

// draw redraws the live line (l.mu held).
func (l *planLive) draw() {
	if !l.tty || l.phase == "" || l.closed || l.held {
		return
	}
	fmt.Fprintf(l.w, "\r\033[K%s agentd %s: %s · %s", spinner[l.frame%len(spinner)], l.cmd, l.phase,
		time.Since(l.t0).Round(100*time.Millisecond))
	l.line = true
}

func (l *planLive) progress(p session.PlanProgress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.phase = p.String()
	if l.tty {
		l.draw()
		return
	}
	fmt.Fprintf(l.w, "agentd %s: %s\n", l.cmd, p.String())
}

// approver is session.PlanRequest.Approve at the terminal: the planner's
// model wants to read a sensitive file (approval.ReadGate). The live line
// stops while the question is on screen. With standard input closed the
// answer is approval.ErrCannotAsk: the file is left out, and the planner
// says so.
func (l *planLive) approver(con *console, yes bool) func(context.Context, approval.ApprovalRequest) (approval.ApprovalDecision, error) {
	var one sync.Mutex // one question at a time
	return func(ctx context.Context, req approval.ApprovalRequest) (approval.ApprovalDecision, error) {
		if yes {
			return approval.ApprovalDecision{Allow: true}, nil
		}
		one.Lock()
		defer one.Unlock()
		l.mu.Lock()
		l.clear()
		l.held = true
		l.mu.Unlock()
		defer func() {
			l.mu.Lock()
			l.held = false
			l.draw()
			l.mu.Unlock()
		}()
		text := fmt.Sprintf("%s the planner's model wants to %s\n    %s\n", con.paint("33", "?"), lowerFirst(req.Title), req.Detail)
		ans, err := con.Choose(ctx, text, "allow this read? [y]es [n]o, then Enter:", "yn", 0)
		switch {
		case errors.Is(err, errNoAnswer):
			return approval.ApprovalDecision{}, fmt.Errorf("%w: %v", approval.ErrCannotAsk, err)
		case err != nil:
			return approval.ApprovalDecision{}, err
		case ans == 'y':
			return approval.ApprovalDecision{Allow: true}, nil
		}
		return approval.ApprovalDecision{Reason: "denied at the terminal"}, nil
	}
}

// println prints a line above the live line.
func (l *planLive) println(s string) {
	l.clear()
	fmt.Fprintln(l.w, s)
	l.draw()
}

// streamed is session.PlanRequest.OnText: with verbose, the model's text in
// whole lines above the live line.
func (l *planLive) streamed(s string) {
	if !l.verbose {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.text.WriteString(s)
	t := l.text.String()
	i := strings.LastIndexByte(t, '\n')
	if i < 0 {
		return
	}
	l.text.Reset()
	l.text.WriteString(t[i+1:])
	for _, line := range strings.Split(t[:i], "\n") {
		l.println("  │ model: " + line)
	}
}

// Write is the planner's log (slog text lines): above the live line.
func (l *planLive) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l.println(line)
	}
	return len(p), nil
}

func (l *planLive) warnings(ws []plans.Problem) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range ws {
		l.println(fmt.Sprintf("agentd %s: %s", l.cmd, w.String()))
	}
}

func (l *planLive) clear() {
	if l.line {
		fmt.Fprint(l.w, "\r\033[K")
		l.line = false
	}
}

// done stops the live line and shows what the model looked at.
func (l *planLive) done(plan *plans.Plan) {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.stop)
	}
	if rest := l.text.String(); l.verbose && rest != "" {
		l.clear()
		fmt.Fprintln(l.w, "  │ model: "+rest)
		l.text.Reset()
	}
	l.clear()
	l.mu.Unlock()
	<-l.ended
	if t := plans.ContextText(plan); t != "" {
		fmt.Fprint(l.w, t)
	}
}
