package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/internal/platform"
	"github.com/agentd/agentd/journal"
)

// The chats of a workspace: every front end's conversations (the editors
// over agentd/chat/*, agentd chat at the terminal, ACP sessions) kept in
// one place, the journal's chats/ folder, one record per chat written
// atomically (temp file, fsync, rename), so a chat survives a restart of
// the daemon and is continued from any front end. A chat is a Conversation
// (the rule of what each turn's planner is told lives in conversation.go);
// the store adds an id, a title and times, records each chat turn's plan,
// and learns each turn's run from the journal (Turn.Learn) and its undo
// (Conversation.Undid): whichever front end ran or undid it.

// Chat is one conversation kept with the workspace's state.
type Chat struct {
	ID        string    `json:"chatId"`
	Title     string    `json:"title"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	Conversation
	// ForkedFrom is the chat and turn this chat branched from
	// (ChatStore.Fork); Branches the chats branched from this one.
	ForkedFrom *ChatRef  `json:"forkedFrom,omitempty"`
	Branches   []ChatRef `json:"branches,omitempty"`
	// Queued are the messages waiting for the next turns, in the order
	// they will be planned (chat_queue.go).
	Queued []QueuedMessage `json:"queued,omitempty"`
}

// ChatRef is a turn of a chat (0-based): where a branch starts.
type ChatRef struct {
	ChatID string `json:"chatId"`
	Turn   int    `json:"turn"`
}

// ChatSummary is a chat in a list: its turns counted.
type ChatSummary struct {
	ID         string    `json:"chatId"`
	Title      string    `json:"title"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	Turns      int       `json:"turns"`
	ForkedFrom *ChatRef  `json:"forkedFrom,omitempty"`
}

// Summary is the chat's entry in a list.
func (c *Chat) Summary() ChatSummary {
	return ChatSummary{ID: c.ID, Title: c.Title, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, Turns: len(c.Turns), ForkedFrom: c.ForkedFrom}
}

// ChatNotFoundError: no chat of this workspace has the id.
type ChatNotFoundError struct{ ID string }

func (e *ChatNotFoundError) Error() string {
	return fmt.Sprintf("no chat %q in this workspace: agentd/chat/list (or agentd chat --list) shows the chats", e.ID)
}

// ErrNoChatStore: the workspace's journal could not be opened, so no chat
// can be kept.
var ErrNoChatStore = errors.New("chats cannot be kept: the workspace's journal cannot be opened (check the state dir, or set AGENTD_STATE_DIR)")

// maxTitle bounds a chat's title (a title from a request is its first
// line, cut here).
const maxTitle = 80

// ChatStore is the chats of one workspace, in its journal.
type ChatStore struct {
	j  *engine.Journal
	mu sync.Mutex // one read-modify-write at a time in this process

	lmu      sync.Mutex
	onChange func(chatID string)
	// planChat maps the plans of this process's chat turns to their chat
	// (the run hooks find the turn without reading every chat).
	planChat map[string]string
	// The queue (chat_queue.go): the turns going in this process, who
	// plans a queued message, how a run is cancelled; qmu takes one
	// message at a time.
	going        map[*goingTurn]bool
	queuePlanner QueuePlanner
	cancelRun    func(runID string) bool // false: not live in this process
	// guideRun gives text to the live run's agent steps (engine.Run.Guide):
	// live in this process, and the steps that take it.
	guideRun func(runID, text string) (bool, []string)
	qmu      sync.Mutex
	wg       sync.WaitGroup
	base     context.Context // the queued turns' (Close ends it)
	stopAll  context.CancelFunc
}

// NewChatStore is the chat store of the journal j (nil j: every call
// fails with ErrNoChatStore).
func NewChatStore(j *engine.Journal) *ChatStore {
	base, stop := context.WithCancel(context.Background())
	return &ChatStore{j: j, planChat: map[string]string{}, base: base, stopAll: stop}
}

// Close stops the queued messages being planned (their turns are kept
// as cancelled; the messages still queued stay queued) and waits for them.
// A front end closes the store before it cancels its runs when it shuts
// down, so a run ended by the shutdown does not start planning the next
// queued message (a model call nobody sees, the message taken out).
func (cs *ChatStore) Close() {
	if cs == nil {
		return
	}
	// Under the queue's lock: a turnEnded that saw the store open has
	// added its planning to wg before this cancels, so Wait waits for it.
	cs.qmu.Lock()
	cs.stopAll()
	cs.qmu.Unlock()
	cs.wg.Wait()
}

// OnChange sets what is told the id of each chat that changed (the editor
// server's agentd/chat/changed); nil: nothing.
func (cs *ChatStore) OnChange(f func(chatID string)) {
	cs.lmu.Lock()
	cs.onChange = f
	cs.lmu.Unlock()
}

func (cs *ChatStore) changed(id string) {
	cs.lmu.Lock()
	f := cs.onChange
	cs.lmu.Unlock()
	if f != nil {
		f(id)
	}
}

func (cs *ChatStore) dir() string { return filepath.Join(cs.j.Dir(), "chats") }

func chatRecord(id string) string { return "chats/" + id + ".json" }

// checkChatID refuses an id that is not a chat's (it names a file).
func checkChatID(id string) error {
	if id == "" {
		return errors.New("no chat id given: agentd/chat/new makes a chat, agentd/chat/list shows the chats")
	}
	if len(id) > 100 {
		return &ChatNotFoundError{ID: id[:100] + "…"}
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return &ChatNotFoundError{ID: id}
		}
	}
	return nil
}

func newChatID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "chat-" + hex.EncodeToString(b[:])
}

// titleOf is a title made from a request: its first line, cut.
func titleOf(request string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(request), "\n")
	line = strings.TrimSpace(line)
	if r := []rune(line); len(r) > maxTitle {
		line = string(r[:maxTitle-1]) + "…"
	}
	return line
}

// lock takes the process's lock and the chats' advisory file lock (every
// agentd process takes it the same way), so that no other front end
// writes a chat between a writer's reading it and writing it.
func (cs *ChatStore) lock(ctx context.Context) (func(), error) {
	if cs == nil || cs.j == nil {
		return nil, ErrNoChatStore
	}
	cs.mu.Lock()
	dir := cs.dir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		cs.mu.Unlock()
		return nil, fmt.Errorf("creating %s: %w (is the state dir writable?)", dir, err)
	}
	path := filepath.Join(dir, ".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		cs.mu.Unlock()
		return nil, fmt.Errorf("opening %s: %w (is the state dir writable?)", path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, journal.LockWait)
	defer cancel()
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		err := platform.TryLock(f)
		if err == nil {
			return func() { _ = platform.Unlock(f); _ = f.Close(); cs.mu.Unlock() }, nil
		}
		if !errors.Is(err, platform.ErrLocked) {
			_ = f.Close()
			cs.mu.Unlock()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			cs.mu.Unlock()
			return nil, fmt.Errorf("another agentd process holds %s (%v); try again", path, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// load reads the chat id as recorded.
func (cs *ChatStore) load(id string) (*Chat, error) {
	if err := checkChatID(id); err != nil {
		return nil, err
	}
	if cs == nil || cs.j == nil {
		return nil, ErrNoChatStore
	}
	var c Chat
	found, err := cs.j.Load(chatRecord(id), &c)
	if err != nil {
		return nil, fmt.Errorf("chat %s: %w", id, err)
	}
	if !found {
		return nil, &ChatNotFoundError{ID: id}
	}
	c.ID = id
	return &c, nil
}

func (cs *ChatStore) save(c *Chat) error {
	if err := cs.j.Save(chatRecord(c.ID), c); err != nil {
		return fmt.Errorf("chat %s is not saved: %w", c.ID, err)
	}
	return nil
}

// update applies f to the chat id under the lock and saves it, then tells
// OnChange.
func (cs *ChatStore) update(ctx context.Context, id string, f func(c *Chat) error) (*Chat, error) {
	if err := checkChatID(id); err != nil {
		return nil, err
	}
	unlock, err := cs.lock(ctx)
	if err != nil {
		return nil, err
	}
	c, err := cs.load(id)
	if err == nil {
		if err = f(c); err == nil {
			c.UpdatedAt = time.Now().UTC()
			err = cs.save(c)
		}
	}
	unlock()
	if err != nil {
		return nil, err
	}
	cs.changed(id)
	return c, nil
}

// New makes an empty chat; an empty title is taken from its first request.
func (cs *ChatStore) New(ctx context.Context, title string) (*Chat, error) {
	return cs.create(ctx, &Chat{Title: titleOf(title)})
}

// Import keeps a conversation held elsewhere (an older ACP session's) as a
// new chat.
func (cs *ChatStore) Import(ctx context.Context, title string, conv Conversation) (*Chat, error) {
	c := &Chat{Title: titleOf(title), Conversation: conv}
	if c.Title == "" && len(conv.Turns) > 0 {
		c.Title = titleOf(conv.Turns[0].Request)
	}
	return cs.create(ctx, c)
}

func (cs *ChatStore) create(ctx context.Context, c *Chat) (*Chat, error) {
	unlock, err := cs.lock(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	c.ID, c.CreatedAt, c.UpdatedAt = newChatID(), now, now
	err = cs.save(c)
	unlock()
	if err != nil {
		return nil, err
	}
	cs.changed(c.ID)
	return c, nil
}

// List is the workspace's chats, the latest changed first.
func (cs *ChatStore) List() ([]ChatSummary, error) {
	if cs == nil || cs.j == nil {
		return nil, ErrNoChatStore
	}
	chats, err := journal.Records[Chat](cs.j.Journal, "chats")
	if err != nil {
		return nil, err
	}
	out := make([]ChatSummary, 0, len(chats))
	for i := range chats {
		if checkChatID(chats[i].ID) == nil {
			out = append(out, chats[i].Summary())
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if !out[a].UpdatedAt.Equal(out[b].UpdatedAt) {
			return out[a].UpdatedAt.After(out[b].UpdatedAt)
		}
		return out[a].ID > out[b].ID
	})
	return out, nil
}

// Get is the chat id, its turns brought up to date with what the
// journal knows of their runs (ended, reviewed, undone, from any front
// end).
func (cs *ChatStore) Get(id string) (*Chat, error) {
	c, err := cs.load(id)
	if err != nil {
		return nil, err
	}
	cs.learnRuns(c)
	cs.liveBranches(c)
	cs.orphanedPlanning(c)
	return c, nil
}

// Rename gives the chat id a new title.
func (cs *ChatStore) Rename(ctx context.Context, id, title string) (*Chat, error) {
	t := titleOf(title)
	if t == "" {
		return nil, fmt.Errorf("chat %s: the new title is empty; give the words to call it by", id)
	}
	return cs.update(ctx, id, func(c *Chat) error { c.Title = t; return nil })
}

// Delete removes the chat id (its runs, snapshots and undo stay).
func (cs *ChatStore) Delete(ctx context.Context, id string) error {
	if err := checkChatID(id); err != nil {
		return err
	}
	unlock, err := cs.lock(ctx)
	if err != nil {
		return err
	}
	path := filepath.Join(cs.dir(), id+".json")
	err = os.Remove(path)
	unlock()
	if errors.Is(err, os.ErrNotExist) {
		return &ChatNotFoundError{ID: id}
	}
	if err != nil {
		return fmt.Errorf("deleting chat %s (%s): %w", id, path, err)
	}
	_ = platform.SyncDir(cs.dir())
	cs.lmu.Lock()
	for p, c := range cs.planChat {
		if c == id {
			delete(cs.planChat, p)
		}
	}
	cs.lmu.Unlock()
	cs.changed(id)
	return nil
}

// Context is what the planner of the chat's next turn is told before the
// request (Conversation.Context; where names the front end: "in the
// editor", "at the terminal").
func (cs *ChatStore) Context(id, where string) (string, error) {
	c, err := cs.Get(id)
	if err != nil {
		return "", err
	}
	return c.Context(where), nil
}

// QuestionContext is Context for a question asked now (answered in
// words, no plan).
func (cs *ChatStore) QuestionContext(id, where string) (string, error) {
	c, err := cs.Get(id)
	if err != nil {
		return "", err
	}
	return c.QuestionContext(where), nil
}

// AddAnswer records a question turn of the chat id (Conversation.AddAnswer)
// and returns it with its index in the chat's turns. A chat without a
// title takes the question's.
func (cs *ChatStore) AddAnswer(ctx context.Context, id string, t Turn) (*Turn, int, error) {
	var added *Turn
	idx := 0
	_, err := cs.update(ctx, id, func(c *Chat) error {
		added = c.AddAnswer(t)
		idx = len(c.Turns) - 1
		if c.Title == "" {
			c.Title = titleOf(t.Request)
		}
		return nil
	})
	return added, idx, err
}

// AddTurn records a turn of the chat id: the request and the plan made
// for it (the run of that plan, from any front end, is learned into the
// turn). A chat without a title takes the first request's.
func (cs *ChatStore) AddTurn(ctx context.Context, id, request string, plan *plans.Plan) (*Turn, error) {
	return cs.addTurn(ctx, id, request, plan, nil)
}

// addTurn is AddTurn with the tokens the plan took (nil: unknown).
func (cs *ChatStore) addTurn(ctx context.Context, id, request string, plan *plans.Plan, tokens *TurnTokens) (*Turn, error) {
	var t *Turn
	_, err := cs.update(ctx, id, func(c *Chat) error {
		t = c.Add(request, plan)
		t.Tokens = tokens
		if plan != nil {
			t.PlanID = plan.ID
		}
		if c.Title == "" {
			c.Title = titleOf(request)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if plan != nil && plan.ID != "" {
		cs.lmu.Lock()
		cs.planChat[plan.ID] = id
		cs.lmu.Unlock()
	}
	return t, nil
}

// PlanChanged shows the plan of a chat turn as it is now (edited, or
// made again); a plan of no chat turn is left alone.
func (cs *ChatStore) PlanChanged(ctx context.Context, plan *plans.Plan) {
	if plan == nil {
		return
	}
	id := cs.chatOfPlan(plan.ID)
	if id == "" {
		return
	}
	_, err := cs.update(ctx, id, func(c *Chat) error {
		for i := len(c.Turns) - 1; i >= 0; i-- {
			if t := c.Turns[i]; t.PlanID == plan.ID {
				t.SetPlan(plan)
				return nil
			}
		}
		return errNoTurn
	})
	if err != nil && !errors.Is(err, errNoTurn) {
		cs.j.Log().Error("a chat turn's new plan is not kept in its chat", "chat", id, "plan", plan.ID, "err", err)
	}
}

// chatOfPlan is the chat whose turn made plan planID ("" if none): this
// process's turns first, else every chat read.
func (cs *ChatStore) chatOfPlan(planID string) string {
	if planID == "" || cs == nil || cs.j == nil {
		return ""
	}
	cs.lmu.Lock()
	id, ok := cs.planChat[planID]
	cs.lmu.Unlock()
	if ok {
		return id
	}
	chats, err := journal.Records[Chat](cs.j.Journal, "chats")
	if err != nil {
		return ""
	}
	best, at := "", time.Time{}
	for _, c := range chats {
		for _, t := range c.Turns {
			if t.PlanID == planID && c.UpdatedAt.After(at) {
				best, at = c.ID, c.UpdatedAt
			}
		}
	}
	return best
}

// ContextOfPlan is what the planner of the turn that made plan planID
// was told (the turns before it), for a plan made again from it
// (agentd/plan/regenerate); false when no chat turn made the plan.
func (cs *ChatStore) ContextOfPlan(planID, where string) (string, bool) {
	id := cs.chatOfPlan(planID)
	if id == "" {
		return "", false
	}
	c, err := cs.Get(id)
	if err != nil {
		return "", false
	}
	for i := len(c.Turns) - 1; i >= 0; i-- {
		if c.Turns[i].PlanID == planID {
			before := Conversation{Turns: c.Turns[:i]}
			return before.Context(where), true
		}
	}
	return "", false
}

// LearnRun learns the run st (ended, read from the journal) into the
// chat turn that made its plan; a run of no chat's plan is left alone.
// Front ends that wait for their runs call it with the final state;
// every run's end reaches it through the session's subscriber too.
func (cs *ChatStore) LearnRun(ctx context.Context, st *engine.RunState) {
	if st == nil {
		return
	}
	id := cs.chatOfPlan(st.PlanID)
	if id == "" {
		return
	}
	_, err := cs.update(ctx, id, func(c *Chat) error {
		for i := len(c.Turns) - 1; i >= 0; i-- {
			if t := c.Turns[i]; t.PlanID == st.PlanID {
				cs.learn(t, st)
				return nil
			}
		}
		return errNoTurn
	})
	if err != nil && !errors.Is(err, errNoTurn) {
		cs.j.Log().Error("what a run did is not kept in its chat", "chat", id, "run", st.RunID, "err", err)
	}
}

var errNoTurn = errors.New("no turn")

// Undid marks the chat turn whose run was runID as undone (an undo from
// any front end, Conversation.Undid).
func (cs *ChatStore) Undid(ctx context.Context, runID string) { cs.markUndone(ctx, runID, true) }

// Redone marks the chat turn whose run was runID as not undone any more
// (its undo was undone).
func (cs *ChatStore) Redone(ctx context.Context, runID string) { cs.markUndone(ctx, runID, false) }

func (cs *ChatStore) markUndone(ctx context.Context, runID string, undone bool) {
	if cs == nil || cs.j == nil || runID == "" {
		return
	}
	st := cs.runState(runID)
	if st == nil {
		return
	}
	id := cs.chatOfPlan(st.PlanID)
	if id == "" {
		return
	}
	_, err := cs.update(ctx, id, func(c *Chat) error {
		if undone {
			if !c.Conversation.Undid(runID) {
				return errNoTurn
			}
			return nil
		}
		for _, t := range c.Turns {
			if t.RunID == runID {
				t.Undone = false
				return nil
			}
		}
		return errNoTurn
	})
	if err != nil && !errors.Is(err, errNoTurn) {
		cs.j.Log().Error("the undo of a run is not kept in its chat", "chat", id, "run", runID, "err", err)
	}
}

// learn is Turn.Learn of a run that ended, with the plan as it ran and
// whether it is undone now.
func (cs *ChatStore) learn(t *Turn, st *engine.RunState) {
	if st.OriginalPlan != nil {
		t.SetPlan(st.OriginalPlan)
	}
	t.Learn(cs.j, st)
	t.Undone = cs.j.UndoneOf(st.RunID) != nil
}

// runState is the journal's record of the run id (nil without one).
func (cs *ChatStore) runState(id string) *engine.RunState {
	var st engine.RunState
	found, err := cs.j.Load("runs/"+journal.RecordName(id)+".json", &st)
	if err != nil || !found {
		return nil
	}
	return &st
}

// learnRuns brings the turns of c up to date with the journal: the
// newest run of each turn's plan that has ended, its review decisions
// (made after the run too) and whether it is undone now.
func (cs *ChatStore) learnRuns(c *Chat) {
	var runs []engine.RunState
	read := false
	for _, t := range c.Turns {
		if t.PlanID == "" {
			if t.RunID != "" {
				t.Undone = t.Undone || cs.j.UndoneOf(t.RunID) != nil
			}
			continue
		}
		if !read {
			runs, _ = cs.j.Runs() // newest first
			read = true
		}
		for i := range runs {
			st := &runs[i]
			if st.PlanID != t.PlanID {
				continue
			}
			if st.Status != engine.RunRunning && st.Status != engine.RunPaused {
				cs.learn(t, st)
			} else {
				t.RunID, t.Status = st.RunID, st.Status
			}
			break
		}
	}
}

// chatRecorder is the session's subscriber that keeps each chat turn's
// run in its chat as the run starts and ends, whichever front end
// started it.
type chatRecorder struct{ s *Session }

func (r chatRecorder) OnEvent(ev engine.Event) {
	cs := r.s.chats
	if cs == nil || cs.j == nil {
		return
	}
	switch ev.Type {
	case engine.EventRunStarted:
		if ev.State == nil {
			return
		}
		planID := ev.State.PlanID
		if id := cs.chatOfPlan(planID); id != "" {
			_, err := cs.update(context.Background(), id, func(c *Chat) error {
				for i := len(c.Turns) - 1; i >= 0; i-- {
					if t := c.Turns[i]; t.PlanID == planID {
						t.RunID, t.Status, t.Undone = ev.RunID, engine.RunRunning, false
						t.Steps, t.Review, t.Failure = nil, nil, ""
						return nil
					}
				}
				return errNoTurn
			})
			if err != nil && !errors.Is(err, errNoTurn) {
				r.s.log.Error("a run's start is not kept in its chat", "chat", id, "run", ev.RunID, "err", err)
			}
		}
	case engine.EventRunFinished:
		r.s.liveRuns.Delete(ev.RunID)
		// The final state is recorded before the run's end is told.
		if st := cs.runState(ev.RunID); st != nil {
			cs.LearnRun(context.Background(), st)
			// The chat's turn ended: its queue is looked at.
			if id := cs.chatOfPlan(st.PlanID); id != "" {
				cs.turnEnded(id)
			}
		}
	}
}

// The chat store's operations on the session (the editor server's
// agentd/chat/* and plan/create with a chatId, ACP, the terminal).

// ChatStore is the session's chat store.
func (s *Session) ChatStore() *ChatStore { return s.chats }

// NewChat makes an empty chat; an empty title is taken from its first
// request.
func (s *Session) NewChat(ctx context.Context, title string) (*Chat, error) {
	return s.chats.New(ctx, title)
}

// Chats lists the workspace's chats, the latest changed first.
func (s *Session) Chats() ([]ChatSummary, error) { return s.chats.List() }

// Chat is the chat id with its turns up to date.
func (s *Session) Chat(id string) (*Chat, error) { return s.chats.Get(id) }

// RenameChat gives the chat id a new title.
func (s *Session) RenameChat(ctx context.Context, id, title string) (*Chat, error) {
	return s.chats.Rename(ctx, id, title)
}

// DeleteChat removes the chat id.
func (s *Session) DeleteChat(ctx context.Context, id string) error { return s.chats.Delete(ctx, id) }

// ChatContext is what the planner of the chat's next turn is told before
// the request.
func (s *Session) ChatContext(id, where string) (string, error) { return s.chats.Context(id, where) }

// AddChatTurn records a turn of the chat id: the request and its plan.
func (s *Session) AddChatTurn(ctx context.Context, id, request string, plan *plans.Plan) (*Turn, error) {
	return s.chats.AddTurn(ctx, id, request, plan)
}
