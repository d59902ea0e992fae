package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/internal/platform"
)

// The chat's queue: a message sent while a turn of the chat is going (its
// plan being made, its question answered, its run running or paused) is
// kept in the chat's record (Chat.Queued) and planned by the session as
// the chat's next turn when the going turn ends, in the process whose
// turn ended: "after" waits for it, "now" stops it first. The one rule of
// every front end (the editors' agentd/chat/queue).

// The ways a queued message waits.
const (
	QueueAfter = "after" // when the chat's going turn ends
	QueueNow   = "now"   // the going turn is stopped first
	// QueueGuidance: given to the going turn instead (Queue); queued as
	// after when nothing can take it.
	QueueGuidance = "guidance"
)

// What a chat's going turn is doing in this process (Stop names it).
const (
	GoingPlanning = "planning"
	GoingAnswer   = "answer"
)

// QueuedMessage is a message waiting for a chat's next turn.
type QueuedMessage struct {
	ID        string    `json:"queueId"`
	Request   string    `json:"request"`
	When      string    `json:"when"`
	CreatedAt time.Time `json:"createdAt"`
	// Context is what the user attached, as the front end has it (the
	// editors' PlanContext); read when the message is planned.
	Context json.RawMessage `json:"context,omitempty"`
}

// ErrNoQueued: the chat's queue holds no message of that id (planned
// already, or taken out).
var ErrNoQueued = errors.New("no such message in the chat's queue: it was planned already or taken out (agentd/chat/load shows the queue)")

// QueuePlanner makes the turn that plans a queued message of chat chatID
// (its Plan, Keep and Started), as the front end's own requests are
// planned; the session fills ChatID and plans it with PlanTurn.
type QueuePlanner func(chatID string, m QueuedMessage) ChatTurn

// PlanQueuedWith sets who plans this process's queued messages (the
// editor server); without one, messages stay queued.
func (cs *ChatStore) PlanQueuedWith(f QueuePlanner) {
	cs.lmu.Lock()
	cs.queuePlanner = f
	cs.lmu.Unlock()
}

// goingTurn is a turn of a chat going in this process: a plan being made
// or a question answered, stopped by cancel.
type goingTurn struct {
	chatID string
	kind   string // GoingPlanning or GoingAnswer
	mu     sync.Mutex
	cancel context.CancelCauseFunc
	// stopped is the cause of a stop asked before cancel was set: set
	// then, it stops the turn at once.
	stopped error
	// A planning whose planner takes guidance (ChatTurn.Guide): the words
	// given, and how many the planner has read.
	guided   bool
	guidance []string
	read     int
	// A plan turn's: its index and the lock file held while it plans
	// (heldPlanning).
	turn int
	held *os.File
}

// hold keeps the turn's planning lock path, held (locked) until the turn
// ends; a lock that cannot be taken is left (the turn then shows as
// planning only to this process).
func (g *goingTurn) hold(path string, turn int) []string {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil && platform.TryLock(f) != nil {
		f.Close()
		f = nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err == nil {
		g.held = f
	}
	g.turn = turn
	return append([]string(nil), g.guidance...)
}

// release lets the turn's planning lock go and removes it.
func (g *goingTurn) release() {
	g.mu.Lock()
	f := g.held
	g.held = nil
	g.mu.Unlock()
	if f != nil {
		_ = platform.Unlock(f)
		_ = f.Close()
		_ = os.Remove(f.Name())
	}
}

// ErrStoppedForQueued is the error of a turn stopped by a message queued
// "now": the chat keeps the turn as cancelled and plans the message next.
var ErrStoppedForQueued = errors.New("stopped: a message was queued to go now (agentd/chat/queue with when now); the chat keeps this turn as cancelled and plans that message next")

// ErrChatStopped is the error of a turn stopped by agentd/chat/stop
// (ChatStore.Stop): the chat keeps it as cancelled.
var ErrChatStopped = errors.New("stopped by the user (agentd/chat/stop): the chat keeps this turn as cancelled")

// stoppedCause says whether err is a chat's stop (Stop, or a message
// queued now), the cause of a turn's cancelled context.
func stoppedCause(ctx context.Context) error {
	if cause := context.Cause(ctx); errors.Is(cause, ErrStoppedForQueued) || errors.Is(cause, ErrChatStopped) {
		return cause
	}
	return nil
}

func (g *goingTurn) setCancel(c context.CancelCauseFunc) {
	g.mu.Lock()
	g.cancel = c
	stopped := g.stopped
	g.mu.Unlock()
	if stopped != nil {
		c(stopped)
	}
}

// stop stops the turn with cause; false when it was stopped already.
func (g *goingTurn) stop(cause error) bool {
	g.mu.Lock()
	c, was := g.cancel, g.stopped
	if was == nil {
		g.stopped = cause
	}
	g.mu.Unlock()
	if was != nil {
		return false
	}
	if c != nil {
		c(cause)
	}
	return true
}

// guide gives text to the turn's planner: false when it takes none (an
// answer, a planner without guidance, a turn stopped). It returns the
// turn's index (-1 before it is recorded: startTurn records the words).
func (g *goingTurn) guide(text string) (bool, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.kind != GoingPlanning || !g.guided || g.stopped != nil {
		return false, -1
	}
	g.guidance = append(g.guidance, text)
	return true, g.turn
}

// readGuidance is the words given to the turn's planner since it last
// read them (ChatTurn.Guide's func).
func (g *goingTurn) readGuidance() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.read >= len(g.guidance) {
		return nil
	}
	out := append([]string(nil), g.guidance[g.read:]...)
	g.read = len(g.guidance)
	return out
}

func (cs *ChatStore) startGoing(chatID, kind string) *goingTurn {
	g := &goingTurn{chatID: chatID, kind: kind, turn: -1}
	cs.lmu.Lock()
	if cs.going == nil {
		cs.going = map[*goingTurn]bool{}
	}
	cs.going[g] = true
	cs.lmu.Unlock()
	return g
}

// endGoing: the turn g ended (its end recorded); the chat's queue is
// looked at.
func (cs *ChatStore) endGoing(g *goingTurn) {
	g.release()
	cs.lmu.Lock()
	delete(cs.going, g)
	cs.lmu.Unlock()
	cs.turnEnded(g.chatID)
}

// goingOf are the chat's turns going in this process.
func (cs *ChatStore) goingOf(chatID string) []*goingTurn {
	cs.lmu.Lock()
	defer cs.lmu.Unlock()
	var out []*goingTurn
	for g := range cs.going {
		if g.chatID == chatID {
			out = append(out, g)
		}
	}
	return out
}

// planningLock is the file a process holds locked while it plans turn
// idx of the chat id: a turn recorded as planning whose lock nobody holds
// was left by a process that ended before its plan was made.
func (cs *ChatStore) planningLock(id string, idx int) string {
	return filepath.Join(cs.dir(), fmt.Sprintf(".planning-%s-%d.lock", id, idx))
}

// heldPlanning says whether turn idx of the chat id is still being
// planned: by this process, or by another that holds its lock.
func (cs *ChatStore) heldPlanning(id string, idx int) bool {
	for _, g := range cs.goingOf(id) {
		g.mu.Lock()
		n := g.turn
		g.mu.Unlock()
		if n == idx {
			return true
		}
	}
	path := cs.planningLock(id, idx)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	defer f.Close()
	if err := platform.TryLock(f); err != nil {
		return true // held (or unknown: left as it is)
	}
	_ = os.Remove(path)
	_ = platform.Unlock(f)
	return false
}

// orphanedPlanning shows the turns of c recorded as planning that no
// process plans any more (it was closed or crashed) as failed, saying so.
func (cs *ChatStore) orphanedPlanning(c *Chat) {
	for i, t := range c.Turns {
		if t.Status == TurnPlanning && !cs.heldPlanning(c.ID, i) {
			t.Status = engine.RunFailed
			t.Failure = "the agentd process that was making its plan ended (closed or crashed) before the plan was made: send the request again"
		}
	}
}

// liveRuns are the runs of the chat's turns still running or paused, as
// the journal has them.
func liveRuns(c *Chat) []string {
	var out []string
	for _, t := range c.Turns {
		if t.RunID != "" && (t.Status == engine.RunRunning || t.Status == engine.RunPaused) {
			out = append(out, t.RunID)
		}
	}
	return out
}

// Guided is what became of a message given as guidance (Queue with
// QueueGuidance): Delivered with what took it ("planning", "run <id>"),
// or not, with Reason, the message then queued as after.
type Guided struct {
	Delivered bool
	To        []string
	Reason    string
}

// Queue keeps m in the chat id's queue ("now" ahead of the "after" ones)
// and returns the queue and m's id. With nothing going in the chat, the
// message is planned at once; with "now", the going turn is stopped (its
// planning or answer in this process, its run when this process runs it)
// and the message planned when it has ended. With "guidance" the words
// are given to the going turn instead (Guide); when nothing takes them,
// the message is queued as "after" and the *Guided says why.
func (cs *ChatStore) Queue(ctx context.Context, id string, m QueuedMessage) (string, []QueuedMessage, *Guided, error) {
	if strings.TrimSpace(m.Request) == "" {
		return "", nil, nil, &FieldError{Field: "request", Message: "the message is empty: say what the next turn should do"}
	}
	switch m.When {
	case "":
		m.When = QueueAfter
	case QueueAfter, QueueNow, QueueGuidance:
	default:
		return "", nil, nil, &FieldError{Field: "when", Message: fmt.Sprintf("must be %q, %q or %q, not %q", QueueAfter, QueueNow, QueueGuidance, m.When)}
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	m.ID, m.CreatedAt = "q-"+hex.EncodeToString(b[:]), time.Now().UTC()
	var guided *Guided
	if m.When == QueueGuidance {
		g, err := cs.Guide(ctx, id, m.Request)
		if err != nil {
			return "", nil, nil, err
		}
		guided = g
		if g.Delivered {
			q, err := cs.queued(id)
			return m.ID, q, guided, err
		}
		m.When = QueueAfter
	}
	c, err := cs.update(ctx, id, func(c *Chat) error {
		if m.When == QueueNow {
			at := 0
			for at < len(c.Queued) && c.Queued[at].When == QueueNow {
				at++
			}
			c.Queued = append(c.Queued[:at], append([]QueuedMessage{m}, c.Queued[at:]...)...)
		} else {
			c.Queued = append(c.Queued, m)
		}
		return nil
	})
	if err != nil {
		return "", nil, nil, err
	}
	if m.When == QueueNow {
		cs.stopGoing(c, ErrStoppedForQueued)
	}
	cs.turnEnded(id)
	q, err := cs.queued(id)
	return m.ID, q, guided, err
}

// stopGoing stops what the chat c's going turn does in this process (its
// planning or answer, with cause; its live runs, cancelled) and says what
// it stopped: "planning", "answer", "run <id>".
func (cs *ChatStore) stopGoing(c *Chat, cause error) []string {
	stopped := []string{}
	seen := map[string]bool{}
	for _, g := range cs.goingOf(c.ID) {
		if g.stop(cause) && !seen[g.kind] {
			seen[g.kind] = true
			stopped = append(stopped, g.kind)
		}
	}
	cs.lmu.Lock()
	cancelRun := cs.cancelRun
	cs.lmu.Unlock()
	if cancelRun != nil {
		cs.learnRuns(c)
		for _, run := range liveRuns(c) {
			if cancelRun(run) {
				stopped = append(stopped, "run "+run)
			}
		}
	}
	return stopped
}

// Stop stops what the chat id's going turn is doing in this process,
// whoever started it (a client's request, the queue): its planning (kept
// as cancelled), its answer, its live run (cancelled). It returns what
// it stopped; empty when nothing was going. The queue then goes on as
// after any turn that ended.
func (cs *ChatStore) Stop(ctx context.Context, id string) ([]string, error) {
	c, err := cs.Get(id)
	if err != nil {
		return nil, err
	}
	return cs.stopGoing(c, ErrChatStopped), nil
}

// Guide gives text to the chat id's going turn in this process: to its
// planner's next model call (a planning whose planner takes guidance), and
// to the agent steps of its live run still running or not started (each
// before its next model call). The turns that took it record it (Turn.
// Guidance). When nothing takes it, the result says why; the caller
// queues it (Queue does, as after).
func (cs *ChatStore) Guide(ctx context.Context, id, text string) (*Guided, error) {
	c, err := cs.Get(id)
	if err != nil {
		return nil, err
	}
	res := &Guided{}
	var why []string
	record := map[int]bool{} // turns to record the words on
	var runs []string        // runs that took them
	for _, g := range cs.goingOf(id) {
		switch ok, idx := g.guide(text); {
		case ok:
			res.To = append(res.To, GoingPlanning)
			if idx >= 0 {
				record[idx] = true
			}
		case g.kind == GoingAnswer:
			why = append(why, "a question is being answered, and an answer takes no guidance")
		default:
			why = append(why, "its plan is being made by a planner that takes no guidance (or is stopping)")
		}
	}
	cs.lmu.Lock()
	guideRun := cs.guideRun
	cs.lmu.Unlock()
	cs.learnRuns(c)
	for _, run := range liveRuns(c) {
		live, takers := false, []string(nil)
		if guideRun != nil {
			live, takers = guideRun(run, text)
		}
		switch {
		case len(takers) > 0:
			res.To = append(res.To, "run "+run)
			runs = append(runs, run)
		case live:
			why = append(why, fmt.Sprintf("run %s has no agent step left to run (only agent steps take guidance)", run))
		default:
			why = append(why, fmt.Sprintf("run %s is run by another agentd process", run))
		}
	}
	for i, t := range c.Turns {
		if t.Status == TurnPlanning && !cs.planningHere(id, i) {
			why = append(why, "its plan is being made by another agentd process")
		}
	}
	if len(res.To) == 0 {
		if len(why) == 0 {
			why = append(why, "no turn of the chat is going in this agentd")
		}
		res.Reason = strings.Join(why, "; ") + ": the message was queued as after"
		return res, nil
	}
	res.Delivered = true
	if len(record) > 0 || len(runs) > 0 {
		_, err = cs.update(context.WithoutCancel(ctx), id, func(c *Chat) error {
			cs.learnRuns(c)
			for i, t := range c.Turns {
				if record[i] || (t.RunID != "" && slices.Contains(runs, t.RunID)) {
					t.Guidance = append(t.Guidance, text)
				}
			}
			return nil
		})
	}
	return res, err
}

// planningHere says whether turn idx of the chat id is planned by this
// process.
func (cs *ChatStore) planningHere(id string, idx int) bool {
	for _, g := range cs.goingOf(id) {
		g.mu.Lock()
		n := g.turn
		g.mu.Unlock()
		if n == idx {
			return true
		}
	}
	return false
}

func (cs *ChatStore) queued(id string) ([]QueuedMessage, error) {
	c, err := cs.load(id)
	if err != nil {
		return nil, err
	}
	if c.Queued == nil {
		return []QueuedMessage{}, nil
	}
	return c.Queued, nil
}

// EditQueued gives the queued message qid of the chat id new words.
func (cs *ChatStore) EditQueued(ctx context.Context, id, qid, request string) ([]QueuedMessage, error) {
	if strings.TrimSpace(request) == "" {
		return nil, &FieldError{Field: "request", Message: "the message is empty: say what the next turn should do, or take it out (agentd/chat/unqueue)"}
	}
	c, err := cs.update(ctx, id, func(c *Chat) error {
		for i := range c.Queued {
			if c.Queued[i].ID == qid {
				c.Queued[i].Request = request
				return nil
			}
		}
		return fmt.Errorf("chat %s, message %q: %w", id, qid, ErrNoQueued)
	})
	if err != nil {
		return nil, err
	}
	return orEmpty(c.Queued), nil
}

// Unqueue takes the queued message qid out of the chat id's queue.
func (cs *ChatStore) Unqueue(ctx context.Context, id, qid string) ([]QueuedMessage, error) {
	c, err := cs.update(ctx, id, func(c *Chat) error {
		for i := range c.Queued {
			if c.Queued[i].ID == qid {
				c.Queued = append(c.Queued[:i], c.Queued[i+1:]...)
				return nil
			}
		}
		return fmt.Errorf("chat %s, message %q: %w", id, qid, ErrNoQueued)
	})
	if err != nil {
		return nil, err
	}
	return orEmpty(c.Queued), nil
}

func orEmpty(q []QueuedMessage) []QueuedMessage {
	if q == nil {
		return []QueuedMessage{}
	}
	return q
}

// turnEnded looks at the chat id's queue when a turn of it ended (or a
// message was queued): with nothing going in the chat (no planning or
// answer in this process, no run running or paused) and a planner, the
// oldest message is taken out and planned as the next turn.
func (cs *ChatStore) turnEnded(id string) {
	if cs == nil || cs.j == nil {
		return
	}
	cs.qmu.Lock()
	defer cs.qmu.Unlock()
	cs.lmu.Lock()
	planner := cs.queuePlanner
	cs.lmu.Unlock()
	if planner == nil || cs.base.Err() != nil || len(cs.goingOf(id)) > 0 {
		return
	}
	c, err := cs.Get(id)
	if err != nil || len(c.Queued) == 0 || len(liveRuns(c)) > 0 {
		return
	}
	var m QueuedMessage
	_, err = cs.update(context.Background(), id, func(c *Chat) error {
		if len(c.Queued) == 0 {
			return errNoTurn
		}
		m, c.Queued = c.Queued[0], c.Queued[1:]
		return nil
	})
	if err != nil {
		if !errors.Is(err, errNoTurn) {
			cs.j.Log().Error("a queued message is not taken from its chat", "chat", id, "err", err)
		}
		return
	}
	// Going before the lock is let go: no second message is taken.
	g := cs.startGoing(id, GoingPlanning)
	t := planner(id, m)
	t.ChatID, t.NewChat, t.going = id, false, g
	if t.Request == "" {
		t.Request = m.Request
	}
	cs.wg.Add(1)
	go func() {
		defer cs.wg.Done()
		if _, _, err := cs.PlanTurn(cs.base, t); err != nil {
			// The turn keeps why (failed or cancelled); the log too.
			cs.j.Log().Info("a queued message's plan was not made", "chat", id, "queued", m.ID, "err", err)
		}
	}()
}
