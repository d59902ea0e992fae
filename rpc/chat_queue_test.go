package rpc

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/session"
	"go.lsp.dev/jsonrpc2"
)

// gatedPlanMaker reports an exploration read for every request; a request
// that ends in "slow" tells started and then plans until it is cancelled;
// the others are scriptedPlanMaker's.
type gatedPlanMaker struct {
	scriptedPlanMaker
	started chan string
}

func (m *gatedPlanMaker) MakePlan(ctx context.Context, req PlanRequest) (*plans.Plan, error) {
	if req.Progress != nil {
		req.Progress("exploring (round 1 of 6): Read a.txt (what it holds)")
	}
	if strings.HasSuffix(req.Request, "slow") {
		m.started <- req.Request
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return m.scriptedPlanMaker.MakePlan(ctx, req)
}

// waitChat loads the chat until ok holds, waiting for agentd/chat/changed
// between loads.
func waitChat(t *testing.T, ed *editor, chatID string, ok func(ChatView) bool) ChatView {
	t.Helper()
	for {
		ed.mu.Lock()
		from := len(ed.notes)
		ed.mu.Unlock()
		var v ChatView
		ed.mustCall("agentd/chat/load", map[string]any{"chatId": chatID}, &v)
		if ok(v) {
			return v
		}
		ed.waitNote(from, func(n note) bool {
			return n.Method == "agentd/chat/changed" && strings.Contains(string(n.Params), chatID)
		})
	}
}

// A plan turn is recorded when its planning starts (status planning, its
// request), its planner's reads stream as agentd/chat/stream activity with
// the turn's index; $/cancelRequest keeps it as cancelled, an invalid plan
// as failed with why; the next turn's planner is told both honestly.
func TestChatPlanTurnIsRecordedWhenPlanningStarts(t *testing.T) {
	pm := &gatedPlanMaker{started: make(chan string, 1), scriptedPlanMaker: scriptedPlanMaker{plans: []string{
		`{"title":"Bad","steps":[{"id":"x","tool":"no_such_tool","args":{}}]}`,
	}}}
	rc := startRaw(t, Options{PlanMaker: pm}, nil)
	rc.call(1, "initialize", map[string]any{"processId": nil, "rootUri": pathToURI(t.TempDir()), "capabilities": map[string]any{}})
	if r := rc.response(); r.Err() != nil {
		t.Fatalf("initialize: %v", r.Err())
	}
	rc.writeRaw(frame(`{"jsonrpc":"2.0","method":"initialized","params":{}}`))
	rc.call(2, "agentd/chat/new", map[string]any{})
	var made struct {
		ChatID string `json:"chatId"`
	}
	if r := rc.response(); json.Unmarshal(r.Result(), &made) != nil || made.ChatID == "" {
		t.Fatalf("chat/new: %s %v", r.Result(), r.Err())
	}
	load := func(id int64) ChatView {
		t.Helper()
		rc.call(id, "agentd/chat/load", map[string]any{"chatId": made.ChatID})
		var v ChatView
		r := rc.response()
		if err := json.Unmarshal(r.Result(), &v); err != nil {
			t.Fatalf("chat/load: %v %s", r.Err(), r.Result())
		}
		return v
	}

	rc.call(3, "agentd/plan/create", map[string]any{"request": "go slow", "chatId": made.ChatID})
	// The read streams with the turn's index, before anything else of it.
	for {
		n, ok := rc.read().(*jsonrpc2.Notification)
		if !ok || n.Method() != chatStreamMethod {
			continue
		}
		var p chatStream
		json.Unmarshal(n.Params(), &p)
		if p.ChatID != made.ChatID || p.Turn != 0 || !strings.Contains(p.Activity, "Read a.txt") || p.Text != "" {
			t.Fatalf("chat/stream while planning: %s", n.Params())
		}
		break
	}
	<-pm.started
	if v := load(4); len(v.Turns) != 1 || v.Turns[0].Request != "go slow" || v.Turns[0].Status != session.TurnPlanning || v.Turns[0].PlanID != "" {
		t.Fatalf("the turn while it plans: %+v", v.Turns)
	}
	rc.writeRaw(frame(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":3}}`))
	if r := rc.response(); errCode(r.Err()) != jsonrpc2.Code(-32800) {
		t.Fatalf("cancelled plan/create answered %v %s, want -32800", r.Err(), r.Result())
	}
	if v := load(5); len(v.Turns) != 1 || v.Turns[0].Status != engine.RunCancelled || v.Turns[0].Request != "go slow" {
		t.Fatalf("the stopped turn as kept: %+v", v.Turns)
	}

	// An invalid plan: -32001, and the turn is kept as failed, saying why.
	rc.call(6, "agentd/plan/create", map[string]any{"request": "use a tool that is not", "chatId": made.ChatID})
	if r := rc.response(); errCode(r.Err()) != jsonrpc2.Code(CodePlanInvalid) {
		t.Fatalf("an invalid plan answered %v, want %d", r.Err(), CodePlanInvalid)
	}
	v := load(7)
	if len(v.Turns) != 2 || v.Turns[1].Status != engine.RunFailed || !strings.Contains(v.Turns[1].Failure, "no_such_tool") ||
		!strings.Contains(v.Turns[1].Failure, "Send the request again") {
		t.Fatalf("the failed turn as kept: %+v", v.Turns[1])
	}

	rc.call(8, "agentd/plan/create", map[string]any{"request": "list the files", "chatId": made.ChatID})
	if r := rc.response(); r.Err() != nil {
		t.Fatalf("plan/create: %v", r.Err())
	}
	asked := pm.asked(1)
	for _, want := range []string{"Turn 1. The user asked: go slow\nThe user stopped the planning: no plan was made, nothing ran.",
		"Turn 2. The user asked: use a tool that is not\nNo plan was made, nothing ran: the model's plan is invalid"} {
		if !strings.Contains(asked, want) {
			t.Errorf("the next planner is not told %q:\n%s", want, asked)
		}
	}
	if v := load(9); len(v.Turns) != 3 || v.Turns[2].PlanID == "" || v.Turns[2].Status != "" || v.Turns[2].PlanTitle != "nothing" {
		t.Fatalf("the planned turn: %+v", v.Turns[2])
	}
}

// reviewEditor is a chat editor over a workspace with a.txt, whose runs
// wait for the review (review before) of their change.
func startQueueEditor(t *testing.T, pm PlanMaker) (*editor, string) {
	t.Helper()
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("zero\n"), 0o644)
	ed := chatEditor(t, t.TempDir(), ws, pm)
	var made session.ChatSummary
	ed.mustCall("agentd/chat/new", map[string]any{}, &made)
	return ed, made.ID
}

// startWaitingRun plans request in the chat and starts its run, which
// waits for the review of its change; it returns the change's id.
func startWaitingRun(t *testing.T, ed *editor, chat, request string) (plans.Plan, string) {
	t.Helper()
	ed.mu.Lock()
	from := len(ed.notes)
	ed.mu.Unlock()
	var pl plans.Plan
	ed.mustCall("agentd/plan/create", map[string]any{"request": request, "chatId": chat}, &pl)
	ed.mustCall("agentd/run/start", map[string]any{"planId": pl.ID, "options": map[string]any{"review": "before"}}, nil)
	n, _ := ed.waitNote(from, func(n note) bool {
		return n.Method == "agentd/run/didChange" && strings.Contains(string(n.Params), "waiting for review")
	})
	var ch struct {
		Event struct {
			ChangeID string `json:"changeId"`
		} `json:"event"`
	}
	json.Unmarshal(n.Params, &ch)
	return pl, ch.Event.ChangeID
}

// A message queued while a turn's run waits for the review stays queued
// (shown by chat/load, kept in the chat's record), can be edited and taken
// out; when the run ends the session plans the oldest as the next turn,
// told the turns before, and keeps its plan in the plan store.
func TestChatQueueWaitsForTheRunThenPlansIt(t *testing.T) {
	pm := &scriptedPlanMaker{plans: []string{
		`{"title":"Write one","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"one\n"}}]}`,
		`{"title":"Write two","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"two\n"}}]}`,
	}}
	ed, chat := startQueueEditor(t, pm)
	p1, change := startWaitingRun(t, ed, chat, "write one")

	var q ChatQueueResult
	ed.mustCall("agentd/chat/queue", map[string]any{"chatId": chat, "request": "write too"}, &q)
	if len(q.Queued) != 1 || q.Queued[0].ID != q.QueueID || q.Queued[0].When != "after" || q.Queued[0].Request != "write too" {
		t.Fatalf("queued while the run waits: %+v", q)
	}
	var drop ChatQueueResult
	ed.mustCall("agentd/chat/queue", map[string]any{"chatId": chat, "request": "drop me"}, &drop)
	ed.mustCall("agentd/chat/queue/edit", map[string]any{"chatId": chat, "queueId": q.QueueID, "request": "write two"}, nil)
	var after ChatQueueResult
	ed.mustCall("agentd/chat/unqueue", map[string]any{"chatId": chat, "queueId": drop.QueueID}, &after)
	if len(after.Queued) != 1 || after.Queued[0].Request != "write two" {
		t.Fatalf("the queue after an edit and an unqueue: %+v", after.Queued)
	}
	if err := ed.call("agentd/chat/unqueue", map[string]any{"chatId": chat, "queueId": drop.QueueID}, nil); errCode(err) != -32003 {
		t.Errorf("unqueue of a message taken out already: %v, want -32003", err)
	}
	if err := ed.call("agentd/chat/queue", map[string]any{"chatId": chat, "request": "x", "when": "sideways"}, nil); errCode(err) != -32602 {
		t.Errorf("when sideways: %v, want -32602", err)
	}
	var v ChatView
	ed.mustCall("agentd/chat/load", map[string]any{"chatId": chat}, &v)
	if len(v.Turns) != 1 || len(v.Queued) != 1 || v.Queued[0].Request != "write two" || len(pm.reqs) != 1 {
		t.Fatalf("planned before the run ended: turns %+v, queued %+v", v.Turns, v.Queued)
	}

	ed.mustCall("agentd/changes/resolve", map[string]any{"changeId": change, "decisions": []map[string]any{{"action": "accept"}}}, nil)
	v = waitChat(t, ed, chat, func(v ChatView) bool { return len(v.Turns) == 2 && v.Turns[1].PlanID != "" })
	if v.Turns[0].PlanID != p1.ID || v.Turns[0].Status != engine.RunCompleted || v.Turns[1].Request != "write two" ||
		v.Turns[1].PlanTitle != "Write two" || len(v.Queued) != 0 {
		t.Fatalf("after the run ended: turns %+v, queued %+v", v.Turns, v.Queued)
	}
	if asked := pm.asked(1); !strings.Contains(asked, "Turn 1. The user asked: write one") || !strings.HasSuffix(asked, "write two") {
		t.Errorf("the queued turn's planner was asked:\n%s", asked)
	}
	var kept plans.Plan
	ed.mustCall("agentd/plan/get", map[string]any{"planId": v.Turns[1].PlanID}, &kept)
	if kept.Title != "Write two" {
		t.Errorf("the queued turn's plan is not in the plan store: %+v", kept)
	}
}

// A message queued "now" stops the going turn: a run waiting for its
// review is cancelled, a plan being made is stopped (its plan/create
// fails saying why), and the message is planned next.
func TestChatQueueNowStopsTheGoingTurn(t *testing.T) {
	pm := &gatedPlanMaker{started: make(chan string, 1), scriptedPlanMaker: scriptedPlanMaker{plans: []string{
		`{"title":"Write one","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"one\n"}}]}`,
	}}}
	ed, chat := startQueueEditor(t, pm)
	startWaitingRun(t, ed, chat, "write one")
	ed.mustCall("agentd/chat/queue", map[string]any{"chatId": chat, "request": "list instead", "when": "now"}, nil)
	v := waitChat(t, ed, chat, func(v ChatView) bool { return len(v.Turns) == 2 && v.Turns[1].PlanID != "" })
	if v.Turns[0].Status != engine.RunCancelled || v.Turns[1].Request != "list instead" || len(v.Queued) != 0 {
		t.Fatalf("after queue now over a waiting run: turns %+v, queued %+v", v.Turns, v.Queued)
	}

	// Now over a plan being made.
	errc := make(chan error, 1)
	go func() {
		errc <- ed.call("agentd/plan/create", map[string]any{"request": "go slow", "chatId": chat}, nil)
	}()
	<-pm.started
	ed.mustCall("agentd/chat/queue", map[string]any{"chatId": chat, "request": "list again", "when": "now"}, nil)
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "queued to go now") {
		t.Fatalf("the stopped plan/create answered %v, want why it stopped", err)
	}
	v = waitChat(t, ed, chat, func(v ChatView) bool { return len(v.Turns) == 4 && v.Turns[3].PlanID != "" })
	if v.Turns[2].Request != "go slow" || v.Turns[2].Status != engine.RunCancelled || v.Turns[3].Request != "list again" {
		t.Fatalf("after queue now over a planning: %+v", v.Turns)
	}
}

// agentd/chat/restore without turn is refused naming it (0 is a turn:
// a missing one must not restore to before the first).
func TestChatRestoreNeedsTheTurn(t *testing.T) {
	ed, chat := startQueueEditor(t, &scriptedPlanMaker{})
	ed.mustCall("agentd/plan/create", map[string]any{"request": "list the files", "chatId": chat}, nil)
	err := ed.call("agentd/chat/restore", map[string]any{"chatId": chat, "what": "conversation"}, nil)
	if errCode(err) != -32602 || !strings.Contains(err.Error(), "turn") {
		t.Fatalf("restore without turn: %v, want -32602 naming turn", err)
	}
	var data struct {
		Field string `json:"field"`
	}
	if e, ok := err.(*jsonrpc2.Error); ok && e.Data != nil {
		json.Unmarshal(e.Data, &data)
	}
	if data.Field != "turn" {
		t.Errorf("restore without turn: data.field %q, want turn", data.Field)
	}
}

// An editor that closes while a turn's run waits leaves its queued
// message queued: the shutdown cancels the run, and that run's end must
// not start planning the message (a model call nobody sees, after the
// daemon was told to stop, with the message taken out of the queue). The
// next daemon over the same state shows it queued.
func TestChatQueueSurvivesTheDaemonsShutdown(t *testing.T) {
	pm := &scriptedPlanMaker{plans: []string{
		`{"title":"Write one","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"one\n"}}]}`,
	}}
	ws, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("zero\n"), 0o644)
	ed := chatEditor(t, state, ws, pm)
	var made session.ChatSummary
	ed.mustCall("agentd/chat/new", map[string]any{}, &made)
	startWaitingRun(t, ed, made.ID, "write one")
	var q ChatQueueResult
	ed.mustCall("agentd/chat/queue", map[string]any{"chatId": made.ID, "request": "then two"}, &q)
	if len(q.Queued) != 1 {
		t.Fatalf("queued: %+v", q)
	}
	ed.mustCall("shutdown", nil, nil)
	pm.mu.Lock()
	asked := len(pm.reqs)
	pm.mu.Unlock()
	if asked != 1 {
		t.Fatalf("the planner was asked %d times; the shutdown planned the queued message", asked)
	}
	next := chatEditor(t, state, ws, pm)
	var v ChatView
	next.mustCall("agentd/chat/load", map[string]any{"chatId": made.ID}, &v)
	if len(v.Queued) != 1 || v.Queued[0].Request != "then two" || len(v.Turns) != 1 {
		t.Fatalf("after the shutdown the chat holds %d turns and queue %+v, want 1 turn and the message still queued", len(v.Turns), v.Queued)
	}
}
