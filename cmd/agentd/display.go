package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/engine"
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

	mu      sync.Mutex
	partial map[string]string    // unfinished output line per step/stream
	started map[string]time.Time // when each running step started
}

func newDisplay(con *console, jsonOut io.Writer, p *engine.Plan) *display {
	d := &display{con: con, desc: map[string]string{}, partial: map[string]string{}, started: map[string]time.Time{}}
	if jsonOut != nil {
		d.json = json.NewEncoder(jsonOut)
		d.jsonW = jsonOut
	}
	d.learn(p)
	return d
}

func (d *display) learn(p *engine.Plan) {
	if p == nil {
		return
	}
	for _, s := range p.Steps {
		d.desc[s.ID] = s.Description
	}
}

func (d *display) OnEvent(ev engine.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.json != nil {
		d.json.Encode(ev)
		return
	}
	c := d.con
	step := ev.StepID
	if desc := d.desc[step]; desc != "" {
		step = fmt.Sprintf("%s (%s)", ev.StepID, desc)
	}
	switch ev.Type {
	case engine.EventRunStarted:
		c.Println(c.paint("1", "▶ run "+ev.RunID) + d.counts(ev.State))
	case engine.EventStepStarted:
		d.started[ev.StepID] = ev.Time
		c.Println(c.paint("34", "• ") + step + attempt(ev.Attempt))
	case engine.EventStepOutput:
		d.output(ev)
	case engine.EventStepRetrying:
		c.Println(c.paint("33", "↻ ") + ev.StepID + fmt.Sprintf(" retrying in %s (attempt %d): %s", time.Duration(ev.DelayMs)*time.Millisecond, ev.Attempt+1, ev.Error))
	case engine.EventStepFinished:
		d.flush(ev.StepID)
		c.Println(c.paint("32", "✓ ") + ev.StepID + d.took(ev))
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
	s := fmt.Sprintf("%s %3.0f%% %d/%d", bar, st.Progress*100, st.CompletedSteps+st.FailedSteps+st.SkippedSteps+st.BlockedSteps, st.TotalSteps)
	if len(st.CurrentSteps) > 0 {
		s += " · running " + strings.Join(st.CurrentSteps, ", ")
	}
	s += " · " + (time.Duration(st.ElapsedMs) * time.Millisecond).Round(100*time.Millisecond).String()
	if st.EtaMs != nil {
		s += " · ETA " + (time.Duration(*st.EtaMs) * time.Millisecond).Round(time.Second).String()
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
