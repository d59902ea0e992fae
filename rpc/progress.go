package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/protocol"

	"github.com/agentd/agentd/engine"
)

// OutputInterval is the shortest time between two stepOutput notifications
// of one run: output arriving faster is coalesced so a chatty command
// cannot flood the editor.
var OutputInterval = 50 * time.Millisecond

// maxCoalesced bounds the text held for one step and stream between two
// flushes; older text is dropped (and said so) beyond it.
const maxCoalesced = 256 << 10

// coalescer merges stepOutput events per step and stream and sends them at
// most once per interval.
type coalescer struct {
	interval time.Duration
	send     func(engine.Event)

	mu      sync.Mutex
	sendMu  sync.Mutex // keeps sends in order
	order   []string
	pending map[string]*engine.Event
	last    time.Time
	timer   *time.Timer
	stopped bool
}

func newCoalescer(interval time.Duration, send func(engine.Event)) *coalescer {
	return &coalescer{interval: interval, send: send, pending: map[string]*engine.Event{}}
}

func (c *coalescer) add(ev engine.Event) {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	key := ev.StepID + "\x00" + ev.Stream
	if p, ok := c.pending[key]; ok {
		p.Text += ev.Text
		if len(p.Text) > maxCoalesced {
			cut := len(p.Text) - maxCoalesced
			p.Text = "[agentd: output truncated]\n" + p.Text[cut:]
		}
		p.Seq, p.Time, p.State = ev.Seq, ev.Time, ev.State
	} else {
		e := ev
		c.pending[key] = &e
		c.order = append(c.order, key)
	}
	now := time.Now()
	due := c.last.Add(c.interval)
	if now.Before(due) {
		if c.timer == nil {
			c.timer = time.AfterFunc(due.Sub(now), c.flush)
		}
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.flush()
}

// flush sends everything pending now.
func (c *coalescer) flush() {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.mu.Lock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if len(c.order) == 0 {
		c.mu.Unlock()
		return
	}
	evs := make([]engine.Event, 0, len(c.order))
	for _, k := range c.order {
		evs = append(evs, *c.pending[k])
	}
	c.order = c.order[:0]
	clear(c.pending)
	c.last = time.Now()
	c.mu.Unlock()
	for _, ev := range evs {
		c.send(ev)
	}
}

// stop flushes and turns the coalescer off.
func (c *coalescer) stop() {
	c.flush()
	c.mu.Lock()
	c.stopped = true
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	c.mu.Unlock()
}

// progressTokens maps $/progress tokens to runs.
type progressTokens struct {
	mu sync.Mutex
	m  map[string]string // JSON token -> run id
}

func newProgressTokens() *progressTokens { return &progressTokens{m: map[string]string{}} }

func (p *progressTokens) add(token, runID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[token] = runID
}

func (p *progressTokens) run(token string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id, ok := p.m[token]
	return id, ok
}

func (p *progressTokens) remove(token string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, token)
}

type workDoneProgress struct {
	Kind        string `json:"kind"`
	Title       string `json:"title,omitempty"`
	Message     string `json:"message,omitempty"`
	Percentage  *int   `json:"percentage,omitempty"`
	Cancellable bool   `json:"cancellable,omitempty"`
}

func (s *Server) sendProgress(token string, v workDoneProgress) {
	b, _ := json.Marshal(v)
	err := s.client.Progress(s.ctx, &protocol.ProgressParams{Token: protocol.String(token), Value: b})
	if err != nil {
		s.log.Debug("progress not sent", "error", err)
	}
}

// beginProgress creates a work-done progress token for a run if the client
// supports it. It runs on an async request, never on the read loop.
func (s *Server) beginProgress(ctx context.Context, e *runEntry) {
	if !s.capabilities().workDoneProgress {
		return
	}
	token := "agentd/run/" + e.id
	if err := s.client.WorkDoneProgressCreate(ctx, &protocol.WorkDoneProgressCreateParams{Token: protocol.String(token)}); err != nil {
		s.log.Warn("client refused a progress token; no $/progress for this run", "run", e.id, "error", err)
		return
	}
	raw, _ := json.Marshal(token)
	s.progress.add(string(raw), e.id)
	zero := 0
	title := "agentd"
	if pl, err := s.plans.get(e.planID); err == nil && pl.Title != "" {
		title = "agentd: " + pl.Title
	}
	e.mu.Lock()
	e.token = token
	e.begun = true
	e.mu.Unlock()
	s.sendProgress(token, workDoneProgress{Kind: "begin", Title: title, Cancellable: true, Percentage: &zero, Message: "starting"})
}

// ProgressInterval is the shortest time between two $/progress reports of
// a run. A report that comes sooner is deferred, not dropped: when the
// interval ends the latest state is reported, so the editor never shows a
// step that has long finished.
var ProgressInterval = 100 * time.Millisecond

func (s *Server) reportProgress(e *runEntry, ev engine.Event) {
	e.progMu.Lock()
	defer e.progMu.Unlock()
	e.mu.Lock()
	token, begun := e.token, e.begun
	e.mu.Unlock()
	if !begun {
		return
	}
	if wait := ProgressInterval - time.Since(e.lastReport); wait > 0 {
		if e.reportTimer == nil {
			e.reportTimer = time.AfterFunc(wait, func() { s.deferredReport(e) })
		}
		return
	}
	st := ev.State
	if st == nil && e.run != nil {
		cur := e.run.State()
		st = &cur
	}
	s.sendReport(e, token, st)
}

// deferredReport sends the report a rate-limited event held back.
func (s *Server) deferredReport(e *runEntry) {
	e.progMu.Lock()
	defer e.progMu.Unlock()
	e.reportTimer = nil
	e.mu.Lock()
	token, begun := e.token, e.begun
	e.mu.Unlock()
	if !begun || e.run == nil {
		return
	}
	st := e.run.State()
	s.sendReport(e, token, &st)
}

// sendReport sends one report; the caller holds e.progMu.
func (s *Server) sendReport(e *runEntry, token string, st *engine.RunState) {
	if st == nil {
		return
	}
	e.lastReport = time.Now()
	pct := int(st.Progress * 100)
	msg := fmt.Sprintf("%d/%d steps", st.CompletedSteps+st.FailedSteps+st.SkippedSteps, st.TotalSteps)
	if len(st.CurrentSteps) > 0 {
		msg += " — " + strings.Join(st.CurrentSteps, ", ")
	}
	s.sendProgress(token, workDoneProgress{Kind: "report", Message: msg, Percentage: &pct})
}

func (s *Server) endProgress(e *runEntry, final engine.RunState) {
	e.progMu.Lock()
	defer e.progMu.Unlock()
	if e.reportTimer != nil {
		e.reportTimer.Stop()
		e.reportTimer = nil
	}
	e.mu.Lock()
	token, begun := e.token, e.begun
	e.begun = false
	e.mu.Unlock()
	if !begun {
		return
	}
	raw, _ := json.Marshal(token)
	s.progress.remove(string(raw))
	s.sendProgress(token, workDoneProgress{Kind: "end", Message: "run " + string(final.Status)})
}
