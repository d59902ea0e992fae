package session

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
)

// Guidance while a turn is planned goes to its planner (read through the
// func ChatTurn.Guide was given), is recorded on the turn and told to the
// next turns' planner; with nothing going, the message is queued as after,
// saying why, never lost.
func TestChatGuidanceReachesThePlannerOrIsQueued(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: t.TempDir(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := s.ChatStore()
	changes := chatWatch(cs)
	c, err := cs.New(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	started, given := make(chan struct{}), make(chan struct{})
	var read []string
	done := make(chan error, 1)
	go func() {
		var next func() []string
		_, _, err := cs.PlanTurn(ctx, ChatTurn{ChatID: c.ID, Where: "in the editor", Request: "rename Hello",
			Guide: func(f func() []string) { next = f },
			Plan: func(ctx context.Context, _ string) (*plans.Plan, error) {
				close(started)
				<-given
				read = next() // the planner's next model call
				return parsePlan(t, "plan-rename", `{"title":"Rename","steps":[{"id":"l","tool":"list_dir","args":{"path":"."}}]}`), nil
			}})
		done <- err
	}()
	<-started
	_, q, g, err := cs.Queue(ctx, c.ID, QueuedMessage{Request: "keep the old name as an alias", When: QueueGuidance})
	if err != nil || g == nil || !g.Delivered || !slices.Equal(g.To, []string{GoingPlanning}) || len(q) != 0 {
		t.Fatalf("guidance while planning: %v %+v, queued %+v", err, g, q)
	}
	close(given)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(read, []string{"keep the old name as an alias"}) {
		t.Errorf("the planner read %q", read)
	}
	got, _ := cs.Get(c.ID)
	if len(got.Turns) != 1 || !slices.Equal(got.Turns[0].Guidance, []string{"keep the old name as an alias"}) {
		t.Fatalf("the turn as kept: %+v", got.Turns)
	}
	if ctxt := got.Context("in the editor"); !strings.Contains(ctxt, "Turn 1. The user asked: rename Hello\nWhile it went, the user added (given to it as guidance): keep the old name as an alias") {
		t.Errorf("the next planner is not told the guidance:\n%s", ctxt)
	}

	// Nothing going: queued as after, saying why, and planned.
	cs.PlanQueuedWith(func(chatID string, m QueuedMessage) ChatTurn {
		return ChatTurn{Where: "in the editor", Request: m.Request, Plan: func(context.Context, string) (*plans.Plan, error) {
			return parsePlan(t, "plan-q", `{"title":"Queued","steps":[{"id":"l","tool":"list_dir","args":{"path":"."}}]}`), nil
		}}
	})
	_, _, g, err = cs.Queue(ctx, c.ID, QueuedMessage{Request: "and a test", When: QueueGuidance})
	if err != nil || g == nil || g.Delivered || !strings.Contains(g.Reason, "no turn of the chat is going") || !strings.Contains(g.Reason, "queued as after") {
		t.Fatalf("guidance with nothing going: %v %+v", err, g)
	}
	got = waitChatState(t, cs, changes, c.ID, func(c *Chat) bool { return len(c.Turns) == 2 && c.Turns[1].PlanID != "" })
	if got.Turns[1].Request != "and a test" || len(got.Turns[1].Guidance) != 0 {
		t.Fatalf("the guidance nothing took is not planned as the next turn: %+v", got.Turns[1])
	}
}

// A question being answered takes no guidance: the message is queued,
// saying so.
func TestChatGuidanceToAnAnswerIsQueued(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: t.TempDir(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := s.ChatStore()
	c, _ := cs.New(ctx, "")
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, _, err := cs.Ask(ctx, ChatQuestion{ChatID: c.ID, Question: "what is it?",
			Answer: func(ctx context.Context, _ string, _ func(string)) (string, []string, error) {
				close(started)
				<-release
				return "a greeter", nil, nil
			}})
		done <- err
	}()
	<-started
	_, q, g, err := cs.Queue(ctx, c.ID, QueuedMessage{Request: "in one line", When: QueueGuidance})
	close(release)
	if err != nil || g == nil || g.Delivered || !strings.Contains(g.Reason, "an answer takes no guidance") || len(q) != 1 || q[0].When != QueueAfter {
		t.Fatalf("guidance to an answer: %v %+v, queued %+v", err, g, q)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Stop stops a turn the core plans from the queue (no client request owns
// it): the turn is kept as cancelled; Stop with nothing going stops
// nothing; an unknown chat is an error.
func TestChatStopStopsAQueuedPlanning(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: t.TempDir(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := s.ChatStore()
	changes := chatWatch(cs)
	started := make(chan struct{}, 1)
	planErr := make(chan error, 1)
	cs.PlanQueuedWith(func(chatID string, m QueuedMessage) ChatTurn {
		return ChatTurn{Where: "in the editor", Request: m.Request, Plan: func(ctx context.Context, _ string) (*plans.Plan, error) {
			started <- struct{}{}
			<-ctx.Done()
			planErr <- context.Cause(ctx)
			return nil, ctx.Err()
		}}
	})
	c, _ := cs.New(ctx, "")
	if _, _, _, err := cs.Queue(ctx, c.ID, QueuedMessage{Request: "go slow"}); err != nil {
		t.Fatal(err)
	}
	<-started
	stopped, err := cs.Stop(ctx, c.ID)
	if err != nil || !slices.Equal(stopped, []string{GoingPlanning}) {
		t.Fatalf("Stop over a queued planning: %v %v", err, stopped)
	}
	if cause := <-planErr; !errors.Is(cause, ErrChatStopped) {
		t.Errorf("the planning was stopped with %v", cause)
	}
	got := waitChatState(t, cs, changes, c.ID, func(c *Chat) bool { return len(c.Turns) == 1 && c.Turns[0].Status != TurnPlanning })
	if got.Turns[0].Status != engine.RunCancelled || got.Turns[0].Request != "go slow" {
		t.Fatalf("the stopped turn: %+v", got.Turns[0])
	}
	if stopped, err := cs.Stop(ctx, c.ID); err != nil || len(stopped) != 0 || stopped == nil {
		t.Errorf("Stop with nothing going: %v %#v, want an empty list", err, stopped)
	}
	if _, err := cs.Stop(ctx, "chat-000000000000"); err == nil {
		t.Error("Stop of an unknown chat: no error")
	}
}

// Stop stops a question being answered: the turn is kept as cancelled
// with what was said, and Ask returns the stop.
func TestChatStopStopsAnAnswer(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: t.TempDir(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := s.ChatStore()
	c, _ := cs.New(ctx, "")
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, _, err := cs.Ask(ctx, ChatQuestion{ChatID: c.ID, Question: "what is it?",
			Answer: func(ctx context.Context, _ string, onText func(string)) (string, []string, error) {
				onText("a greeter")
				close(started)
				<-ctx.Done()
				return "", nil, ctx.Err()
			}})
		done <- err
	}()
	<-started
	stopped, err := cs.Stop(ctx, c.ID)
	if err != nil || !slices.Equal(stopped, []string{GoingAnswer}) {
		t.Fatalf("Stop over an answer: %v %v", err, stopped)
	}
	if err := <-done; !errors.Is(err, ErrChatStopped) {
		t.Fatalf("the stopped Ask returned %v", err)
	}
	got, _ := cs.Get(c.ID)
	if len(got.Turns) != 1 || got.Turns[0].Status != engine.RunCancelled || got.Turns[0].Answer != "a greeter" {
		t.Fatalf("the stopped answer as kept: %+v", got.Turns)
	}
}

// A stop that comes before the turn has its cancel (a queued message just
// taken) still records the turn, as cancelled.
func TestChatStopBeforeThePlanningStartsKeepsTheTurn(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: t.TempDir(), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := s.ChatStore()
	c, _ := cs.New(ctx, "")
	g := cs.startGoing(c.ID, GoingPlanning)
	if !g.stop(ErrChatStopped) {
		t.Fatal("the first stop of a going turn said it stopped nothing")
	}
	_, _, err = cs.PlanTurn(ctx, ChatTurn{ChatID: c.ID, Where: "in the editor", Request: "taken from the queue", going: g,
		Plan: func(ctx context.Context, _ string) (*plans.Plan, error) { <-ctx.Done(); return nil, ctx.Err() }})
	if !errors.Is(err, ErrChatStopped) {
		t.Fatalf("PlanTurn of a stopped turn returned %v", err)
	}
	got, _ := cs.Get(c.ID)
	if len(got.Turns) != 1 || got.Turns[0].Status != engine.RunCancelled || got.Turns[0].Request != "taken from the queue" {
		t.Fatalf("the turn stopped before it started: %+v", got.Turns)
	}
}
