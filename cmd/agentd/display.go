package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/workspace"
)

// display shows a run's events: JSON lines (--json), plain lines (not a
// terminal), or plain lines plus a live status line (terminal). It shows
// everything an editor would: steps, output, retries, approvals, changes,
// snapshots, plan updates and the final state.
type display struct {
	con   *console
	json  *json.Encoder
	jsonW io.Writer
	desc  map[string]string
	// dryRun: show each proposed change in full (nothing else shows it).
	dryRun bool
	render func(cs *workspace.ChangeSet) string
	// root is the workspace, named in the run's first line.
	root string

	mu      sync.Mutex
	partial map[string]string    // unfinished output line per step/stream
	started map[string]time.Time // when each running step started
	last    *engine.RunState     // the latest state, for the ticking status line
	t0      time.Time            // when the run started (local clock)
	frame   int                  // spinner frame

	// shown counts what was shown, by key (see shownKey), so a prompt
	// waits until what led to it is on the screen.
	smu     sync.Mutex // guards shown, shownCh (never held while printing)
	shown   map[string]int
	shownCh chan struct{} // closed and replaced on every change of shown

	run   *engine.Run // set once the run started (changes of a dry run)
	ready chan struct{}
	stop  chan struct{}
	done  chan struct{}
}

// tickEvery is how often the status line redraws with no event (spinner
// and elapsed time): 8 times a second.
const tickEvery = 125 * time.Millisecond

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func newDisplay(con *console, jsonOut io.Writer, p *plans.Plan) *display {
	d := &display{con: con, desc: map[string]string{}, partial: map[string]string{}, started: map[string]time.Time{},
		shown: map[string]int{}, shownCh: make(chan struct{}), ready: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}), t0: time.Now()}
	if jsonOut != nil {
		d.json = newJSONEncoder(jsonOut)
		d.jsonW = jsonOut
	}
	d.learn(p)
	return d
}

func (d *display) learn(p *plans.Plan) {
	if p == nil {
		return
	}
	for _, s := range p.Steps {
		d.desc[s.ID] = s.Description
	}
}

// setRun lets the display look up change sets, and starts the ticker.
func (d *display) setRun(r *engine.Run) {
	d.run = r
	close(d.ready)
	if d.con.tty && d.json == nil {
		go d.tick()
	} else {
		close(d.done)
	}
}

// tick redraws the status line with no event: the spinner turns and the
// elapsed time counts while steps run, even in a quiet `sleep`.
func (d *display) tick() {
	defer close(d.done)
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			d.mu.Lock()
			d.frame++
			line := ""
			if d.last != nil {
				line = d.status(d.last)
			}
			d.mu.Unlock()
			if line != "" {
				d.con.SetStatus(line)
			}
		}
	}
}

// close stops the ticker.
func (d *display) close() {
	select {
	case <-d.stop:
	default:
		close(d.stop)
	}
	select {
	case <-d.ready:
		<-d.done
	default:
	}
}

// shownKey names what a prompt waits for: the proposal of a change set, or
// the n-th approval request of a step.
func shownKey(kind, id string) string { return kind + "\x00" + id }

func (d *display) markShown(key string) {
	d.smu.Lock()
	defer d.smu.Unlock()
	d.shown[key]++
	close(d.shownCh)
	d.shownCh = make(chan struct{})
}

// waitShown waits until key was shown n times (or ctx ends, or 5s pass:
// a prompt never hangs on the display).
func (d *display) waitShown(ctx context.Context, key string, n int) {
	deadline := time.After(5 * time.Second)
	for {
		d.smu.Lock()
		ok, ch := d.shown[key] >= n, d.shownCh
		d.smu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-deadline:
			return
		}
	}
}

func (d *display) OnEvent(ev engine.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if ev.State != nil {
		d.last = ev.State
	}
	switch ev.Type {
	case engine.EventChangeProposed:
		defer d.markShown(shownKey("change", ev.ChangeID))
	case engine.EventApprovalPending:
		defer d.markShown(shownKey("approval", ev.StepID))
	}
	if d.json != nil {
		out := jsonEvent{Event: ev}
		if ev.Type == engine.EventChangeProposed {
			<-d.ready
			if cs, ok := d.run.Change(ev.ChangeID); ok {
				out.Patch = changePatch(cs)
			}
		}
		// Through the console: a JSON line never lands inside a prompt
		// shown on the same terminal.
		d.con.Write(func() { d.json.Encode(out) })
		return
	}
	c := d.con
	step := ev.StepID
	if desc := d.desc[step]; desc != "" {
		step = fmt.Sprintf("%s (%s)", ev.StepID, desc)
	}
	switch ev.Type {
	case engine.EventRunStarted:
		head := "▶ run " + ev.RunID
		if d.root != "" {
			head += " in " + d.root
		}
		c.Println(c.paint("1", head) + d.counts(ev.State))
	case engine.EventStepStarted:
		d.started[ev.StepID] = ev.Time
		c.Println(c.paint("34", "• ") + step + attempt(ev.Attempt))
	case engine.EventStepOutput:
		d.output(ev)
	case engine.EventStepProgress:
		if ev.AllowedBy != nil {
			c.Println(c.paint("90", "  ✓ ") + ev.StepID + " " + ev.AllowedBy.String())
		}
	case engine.EventStepRetrying:
		c.Println(c.paint("33", "↻ ") + ev.StepID + fmt.Sprintf(" retrying in %s (attempt %d): %s", time.Duration(ev.DelayMs)*time.Millisecond, ev.Attempt+1, ev.Error))
	case engine.EventStepFinished:
		d.flush(ev.StepID)
		if strings.HasPrefix(ev.Reason, engine.WouldRunPrefix) {
			c.Println(c.paint("36", "○ ") + ev.StepID + " " + ev.Reason)
			break
		}
		c.Println(c.paint("32", "✓ ") + ev.StepID + d.took(ev) + reason(ev.Reason))
	case engine.EventStepFailed:
		d.flush(ev.StepID)
		c.Println(c.paint("31", "✗ ") + ev.StepID + ": " + ev.Error)
	case engine.EventStepSkipped:
		c.Println(c.paint("90", "– ") + ev.StepID + " skipped" + reason(ev.Reason))
	case engine.EventStepBlocked:
		c.Println(c.paint("90", "⊘ ") + ev.StepID + " blocked" + reason(ev.Reason))
	case engine.EventPlanUpdated:
		c.Println(c.paint("35", "✎ plan updated") + fmt.Sprintf(" to version %d", ev.PlanVersion) + reason(ev.Reason))
	case engine.EventChangeProposed:
		if d.dryRun && d.render != nil {
			// Nothing else shows a dry run's changes: show them in full.
			<-d.ready
			if cs, ok := d.run.Change(ev.ChangeID); ok {
				c.Println(d.render(cs) + "\n" + c.paint("90", "  (dry run: not applied)"))
				break
			}
		}
		c.Println(c.paint("36", "~ ") + ev.StepID + " proposed change " + ev.ChangeID)
	case engine.EventApprovalPending:
		c.Println(c.paint("33", "? ") + ev.StepID + " waiting for approval" + reason(ev.Reason))
	case engine.EventSnapshotTaken:
		where := "run start"
		if ev.StepID != "" {
			where = "after " + ev.StepID
		}
		c.Println(c.paint("90", "◆ snapshot "+short(ev.SnapshotID)+" ("+where+")"))
	case engine.EventRunPaused:
		c.Println(c.paint("33", "⏸ paused"))
	case engine.EventRunResumed:
		c.Println(c.paint("33", "▶ resumed"))
	case engine.EventRunFinished:
		for k := range d.partial {
			d.flushKey(k)
		}
		d.last = nil
		c.Done()
		c.Println(c.paint("1", "■ run "+ev.Status) + d.counts(ev.State))
		return
	}
	if ev.State != nil {
		c.SetStatus(d.status(ev.State))
	}
}

func (d *display) output(ev engine.Event) {
	key := ev.StepID + "\x00" + ev.Stream
	text := d.partial[key] + ev.Text
	lines := strings.Split(text, "\n")
	d.partial[key] = lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		d.con.Println(d.con.paint("90", "  │ "+ev.StepID+": ") + l)
	}
}

func (d *display) flush(stepID string) {
	for k := range d.partial {
		if strings.HasPrefix(k, stepID+"\x00") {
			d.flushKey(k)
		}
	}
}

func (d *display) flushKey(k string) {
	if s := d.partial[k]; s != "" {
		step, _, _ := strings.Cut(k, "\x00")
		d.con.Println(d.con.paint("90", "  │ "+step+": ") + s)
	}
	delete(d.partial, k)
}

func (d *display) took(ev engine.Event) string {
	t0, ok := d.started[ev.StepID]
	if !ok || ev.Time.IsZero() {
		return ""
	}
	return d.con.paint("90", " ("+ev.Time.Sub(t0).Round(time.Millisecond).String()+")")
}

func (d *display) counts(st *engine.RunState) string {
	if st == nil {
		return ""
	}
	return fmt.Sprintf(" · %d/%d done, %d failed, %d skipped, %d blocked", st.CompletedSteps, st.TotalSteps, st.FailedSteps, st.SkippedSteps, st.BlockedSteps)
}

func (d *display) status(st *engine.RunState) string {
	const width = 20
	filled := int(st.Progress * width)
	if filled > width {
		filled = width
	}
	bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
	s := fmt.Sprintf("%s %s %3.0f%% %d/%d", spinner[d.frame%len(spinner)], bar, st.Progress*100, st.CompletedSteps+st.FailedSteps+st.SkippedSteps+st.BlockedSteps, st.TotalSteps)
	if len(st.CurrentSteps) > 0 {
		s += " · running " + strings.Join(st.CurrentSteps, ", ")
	}
	// Elapsed on the local clock, so it counts between events too.
	s += " · " + time.Since(d.t0).Round(100*time.Millisecond).String()
	if st.Tokens > 0 || st.CostUSD > 0 {
		s += fmt.Sprintf(" · %d tokens $%.4f", st.Tokens, st.CostUSD)
	}
	if eta, ok := d.etaWorthShowing(st); ok {
		s += " · ETA " + eta.String()
	}
	return s
}

func attempt(n int) string {
	if n > 1 {
		return fmt.Sprintf(" (attempt %d)", n)
	}
	return ""
}

func reason(r string) string {
	if r == "" {
		return ""
	}
	return ": " + r
}

func short(id string) string {
	if len(id) > 10 {
		return id[:10]
	}
	return id
}

// etaWorthShowing is the run's ETA when it is an estimate worth showing: a
// second or more, and not already overtaken by a step still running
// (beside a command that has run for minutes, "ETA 0s" says nothing true).
// d.mu is held.
func (d *display) etaWorthShowing(st *engine.RunState) (time.Duration, bool) {
	if st.EtaMs == nil {
		return 0, false
	}
	eta := (time.Duration(*st.EtaMs) * time.Millisecond).Round(time.Second)
	if eta < time.Second {
		return 0, false
	}
	now := time.Now()
	for _, id := range st.CurrentSteps {
		if t0, ok := d.started[id]; ok && now.Sub(t0) > eta {
			return 0, false
		}
	}
	return eta, true
}
