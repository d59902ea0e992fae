package session

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
)

// chatWatch tells each change of a chat on a channel, so a test waits
// for the chat's state, never for time.
func chatWatch(cs *ChatStore) <-chan string {
	ch := make(chan string, 256)
	cs.OnChange(func(id string) {
		select {
		case ch <- id:
		default:
		}
	})
	return ch
}

// waitChatState gets the chat until ok holds, waiting for a change between.
func waitChatState(t *testing.T, cs *ChatStore, changes <-chan string, id string, ok func(*Chat) bool) *Chat {
	t.Helper()
	for {
		c, err := cs.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(c) {
			return c
		}
		<-changes
	}
}

// A plan turn is in the chat from the start of its planning (status
// planning, its index told at once); a message queued meanwhile waits,
// and is planned as the next turn, through the same PlanTurn, when that
// planning ends; the planner of the queued turn is told the turn before.
// A stopped planning is kept as cancelled, a failed one as failed, and
// the next planner is told so.
func TestChatQueuePlansWhenTheGoingTurnEnds(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: t.TempDir(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := s.ChatStore()
	changes := chatWatch(cs)
	var mu sync.Mutex
	var asked []string
	plan := func(title string) func(context.Context, string) (*plans.Plan, error) {
		return func(_ context.Context, request string) (*plans.Plan, error) {
			mu.Lock()
			asked = append(asked, request)
			mu.Unlock()
			return parsePlan(t, "plan-"+title, `{"title":"`+title+`","steps":[{"id":"l","tool":"list_dir","args":{"path":"."}}]}`), nil
		}
	}
	cs.PlanQueuedWith(func(chatID string, m QueuedMessage) ChatTurn {
		return ChatTurn{Where: "in the editor", Request: m.Request, Plan: plan("queued")}
	})
	c, err := cs.New(ctx, "")
	if err != nil {
		t.Fatal(err)
	}

	release := make(chan struct{})
	started := make(chan int, 1)
	done := make(chan error, 1)
	go func() {
		_, _, err := cs.PlanTurn(ctx, ChatTurn{ChatID: c.ID, Where: "in the editor", Request: "first",
			Started: func(n int) { started <- n },
			Plan: func(ctx context.Context, r string) (*plans.Plan, error) {
				<-release
				return plan("first")(ctx, r)
			}})
		done <- err
	}()
	if n := <-started; n != 0 {
		t.Fatalf("the first turn's index %d", n)
	}
	if got, _ := cs.Get(c.ID); len(got.Turns) != 1 || got.Turns[0].Status != TurnPlanning || got.Turns[0].Request != "first" {
		t.Fatalf("the turn while it plans: %+v", got.Turns)
	}
	qid, q, _, err := cs.Queue(ctx, c.ID, QueuedMessage{Request: "second"})
	if err != nil || len(q) != 1 || q[0].ID != qid || q[0].When != QueueAfter {
		t.Fatalf("queued while planning: %v %+v", err, q)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := waitChatState(t, cs, changes, c.ID, func(c *Chat) bool { return len(c.Turns) == 2 && c.Turns[1].PlanID != "" })
	if got.Turns[0].PlanID != "plan-first" || got.Turns[0].Status != "" || got.Turns[1].Request != "second" ||
		got.Turns[1].PlanTitle != "queued" || len(got.Queued) != 0 {
		t.Fatalf("after the first turn's planning ended: %+v, queued %+v", got.Turns, got.Queued)
	}
	mu.Lock()
	second := asked[1]
	mu.Unlock()
	if !strings.Contains(second, "Turn 1. The user asked: first") || !strings.HasSuffix(second, "second") {
		t.Errorf("the queued turn's planner was asked:\n%s", second)
	}

	// Stopped, then failed: both kept, both told.
	stop, cancel := context.WithCancel(ctx)
	_, _, err = cs.PlanTurn(stop, ChatTurn{ChatID: c.ID, Where: "in the editor", Request: "stop me",
		Plan: func(ctx context.Context, _ string) (*plans.Plan, error) {
			cancel()
			<-ctx.Done()
			return nil, ctx.Err()
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a stopped planning returned %v", err)
	}
	_, _, err = cs.PlanTurn(ctx, ChatTurn{ChatID: c.ID, Where: "in the editor", Request: "fail me",
		Plan: func(context.Context, string) (*plans.Plan, error) { return nil, errors.New("the model said 500") }})
	if err == nil {
		t.Fatal("a failed planning returned no error")
	}
	got, _ = cs.Get(c.ID)
	if got.Turns[2].Status != engine.RunCancelled || got.Turns[3].Status != engine.RunFailed ||
		!strings.Contains(got.Turns[3].Failure, "the model said 500") || !strings.Contains(got.Turns[3].Failure, "Send the request again") {
		t.Fatalf("the stopped and failed turns as kept: %+v %+v", got.Turns[2], got.Turns[3])
	}
	if got.Failed() != nil {
		t.Error("a failed planning is offered to \"fix it\" as a failed run")
	}
	ctxt := got.Context("in the editor")
	for _, want := range []string{"Turn 3. The user asked: stop me\nThe user stopped the planning: no plan was made, nothing ran.",
		"Turn 4. The user asked: fail me\nNo plan was made, nothing ran: the plan could not be made: the model said 500"} {
		if !strings.Contains(ctxt, want) {
			t.Errorf("the next planner is not told %q:\n%s", want, ctxt)
		}
	}
}

// A question may start its chat (NewChat), as a plan turn does: the
// terminal's first turn.
func TestChatAskStartsItsChat(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: t.TempDir(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tn, idx, id, err := s.ChatStore().Ask(ctx, ChatQuestion{NewChat: true, Where: "at the terminal", Question: "what is here?",
		Answer: func(context.Context, string, func(string)) (string, []string, error) { return "nothing yet", nil, nil }})
	if err != nil || id == "" || idx != 0 || tn.Answer != "nothing yet" {
		t.Fatalf("Ask with NewChat: %v %q %d %+v", err, id, idx, tn)
	}
	c, err := s.Chat(id)
	if err != nil || len(c.Turns) != 1 || !c.Turns[0].Question || c.Title != "what is here?" {
		t.Fatalf("the chat the question started: %v %+v", err, c)
	}
}

// A turn recorded as planning by a process that ended before its plan
// was made (nobody holds its planning lock) shows as failed, saying so;
// one whose lock is held (another process still plans it) stays planning.
func TestChatPlanningLeftByAnEndedProcessShowsFailed(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: t.TempDir(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := s.ChatStore()
	c, err := cs.New(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	other := &goingTurn{chatID: c.ID, turn: -1} // another process's, not in this store
	if _, err := cs.update(ctx, c.ID, func(c *Chat) error {
		c.Turns = append(c.Turns, &Turn{Request: "left", Status: TurnPlanning}, &Turn{Request: "held", Status: TurnPlanning})
		other.hold(cs.planningLock(c.ID, 1), 1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	defer other.release()
	got, err := cs.Get(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Turns[0].Status != engine.RunFailed || !strings.Contains(got.Turns[0].Failure, "ended (closed or crashed)") {
		t.Errorf("a planning nobody holds: %+v", got.Turns[0])
	}
	if got.Turns[1].Status != TurnPlanning {
		t.Errorf("a planning another process holds: %+v", got.Turns[1])
	}
}
