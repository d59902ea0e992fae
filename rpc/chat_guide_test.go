package rpc

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"go.lsp.dev/jsonrpc2"
)

// gateStepModel runs agent steps: step a tells started and waits for
// release; each step records what guidance it read before its next call.
type gateStepModel struct {
	started, release chan struct{}
	mu               sync.Mutex
	read             map[string][]string
}

func (m *gateStepModel) RunStep(ctx context.Context, call engine.ModelCall) (*engine.ModelResult, error) {
	if call.Step.ID == "a" {
		m.started <- struct{}{}
		select {
		case <-m.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var g []string
	if call.Guidance != nil {
		g = call.Guidance()
	}
	m.mu.Lock()
	m.read[call.Step.ID] = g
	m.mu.Unlock()
	return &engine.ModelResult{Text: "done", Calls: 1}, nil
}

// guideEditor is a chat editor whose runs' model steps are sm's.
func guideEditor(t *testing.T, pm PlanMaker, sm engine.StepModel) (*editor, string) {
	t.Helper()
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("zero\n"), 0o644)
	ed := startEditor(t, Options{PlanMaker: pm, StateDir: t.TempDir(),
		Configure: func(cfg *engine.Config, _ *ModelOptions) { cfg.Model = sm }}, nil)
	ed.setAuto("window/workDoneProgress/create", func(json.RawMessage) (any, error) { return nil, nil })
	ed.setAuto("window/showMessageRequest", func(json.RawMessage) (any, error) { return map[string]any{"title": "Allow once"}, nil })
	ed.initialize(ws, nil)
	var made struct {
		ChatID string `json:"chatId"`
	}
	ed.mustCall("agentd/chat/new", map[string]any{}, &made)
	return ed, made.ChatID
}

// Guidance to a turn whose run is going reaches its agent steps (the one
// running and the one not started yet, each before its next model call),
// is not queued, is recorded on the turn (chat/load) and told to the next
// turn's planner; once the run has ended, guidance is queued as after,
// saying why, and planned.
func TestChatGuidanceReachesTheRunsAgentSteps(t *testing.T) {
	pm := &scriptedPlanMaker{plans: []string{
		`{"title":"Two agents","steps":[{"id":"a","kind":"agent","prompt":"do a","tools":["read_file"]},{"id":"b","kind":"agent","prompt":"do b","tools":["read_file"],"dependsOn":["a"]}]}`,
	}}
	sm := &gateStepModel{started: make(chan struct{}, 1), release: make(chan struct{}), read: map[string][]string{}}
	ed, chat := guideEditor(t, pm, sm)
	var pl struct {
		ID string `json:"id"`
	}
	ed.mustCall("agentd/plan/create", map[string]any{"request": "rename Hello", "chatId": chat}, &pl)
	var run RunStartResult
	ed.mustCall("agentd/run/start", map[string]any{"planId": pl.ID, "options": map[string]any{"review": "none"}}, &run)
	<-sm.started
	var q ChatQueueResult
	ed.mustCall("agentd/chat/queue", map[string]any{"chatId": chat, "request": "keep the old name", "when": "guidance"}, &q)
	if q.Delivered == nil || !*q.Delivered || !slices.Equal(q.DeliveredTo, []string{"run " + run.RunID}) || len(q.Queued) != 0 || q.Reason != "" {
		t.Fatalf("guidance to the going run: %+v", q)
	}
	close(sm.release)
	v := waitChat(t, ed, chat, func(v ChatView) bool { return len(v.Turns) == 1 && v.Turns[0].Status == engine.RunCompleted })
	if !slices.Equal(v.Turns[0].Guidance, []string{"keep the old name"}) || len(v.Queued) != 0 {
		t.Fatalf("the turn as kept: %+v, queued %+v", v.Turns[0], v.Queued)
	}
	sm.mu.Lock()
	a, b := sm.read["a"], sm.read["b"]
	sm.mu.Unlock()
	if !slices.Equal(a, []string{"keep the old name"}) || !slices.Equal(b, []string{"keep the old name"}) {
		t.Errorf("the agent steps read a %q, b %q: each wants the words", a, b)
	}

	// The run has ended: queued as after, saying why, and planned, its
	// planner told of the guidance given to turn 1.
	var late ChatQueueResult
	ed.mustCall("agentd/chat/queue", map[string]any{"chatId": chat, "request": "and a test", "when": "guidance"}, &late)
	if late.Delivered == nil || *late.Delivered || !strings.Contains(late.Reason, "queued as after") {
		t.Fatalf("guidance with nothing going: %+v", late)
	}
	v = waitChat(t, ed, chat, func(v ChatView) bool { return len(v.Turns) == 2 && v.Turns[1].PlanID != "" })
	if v.Turns[1].Request != "and a test" {
		t.Fatalf("the message nothing took is not the next turn: %+v", v.Turns[1])
	}
	if asked := pm.asked(1); !strings.Contains(asked, "While it went, the user added (given to it as guidance): keep the old name") {
		t.Errorf("the next planner is not told the guidance:\n%s", asked)
	}
}

// A run with no agent step takes no guidance: queued as after, saying so.
func TestChatGuidanceToARunWithoutAgentStepsIsQueued(t *testing.T) {
	pm := &scriptedPlanMaker{plans: []string{
		`{"title":"Write one","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"one\n"}}]}`,
	}}
	ed, chat := startQueueEditor(t, pm)
	startWaitingRun(t, ed, chat, "write one")
	var q ChatQueueResult
	ed.mustCall("agentd/chat/queue", map[string]any{"chatId": chat, "request": "use two", "when": "guidance"}, &q)
	if q.Delivered == nil || *q.Delivered || !strings.Contains(q.Reason, "no agent step left") || len(q.Queued) != 1 || q.Queued[0].When != "after" {
		t.Fatalf("guidance to a run without agent steps: %+v", q)
	}
}

// agentd/chat/stop stops a plan being made for a client's request (which
// then answers -32800), one the core makes from the queue, and a run
// waiting for its review; each turn is kept as cancelled; with nothing
// going it stops nothing.
func TestChatStopStopsWhatTheTurnDoes(t *testing.T) {
	pm := &gatedPlanMaker{started: make(chan string, 1), scriptedPlanMaker: scriptedPlanMaker{plans: []string{
		`{"title":"Write one","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"one\n"}}]}`,
	}}}
	ed, chat := startQueueEditor(t, pm)
	var res ChatStopResult
	ed.mustCall("agentd/chat/stop", map[string]any{"chatId": chat}, &res)
	if res.ChatID != chat || res.Stopped == nil || len(res.Stopped) != 0 {
		t.Fatalf("stop with nothing going: %+v", res)
	}

	// A run waiting for its review.
	startWaitingRun(t, ed, chat, "write one")
	ed.mustCall("agentd/chat/stop", map[string]any{"chatId": chat}, &res)
	if len(res.Stopped) != 1 || !strings.HasPrefix(res.Stopped[0], "run ") {
		t.Fatalf("stop over a waiting run: %+v", res)
	}
	waitChat(t, ed, chat, func(v ChatView) bool { return len(v.Turns) == 1 && v.Turns[0].Status == engine.RunCancelled })

	// A client's planning.
	errc := make(chan error, 1)
	go func() {
		errc <- ed.call("agentd/plan/create", map[string]any{"request": "go slow", "chatId": chat}, nil)
	}()
	<-pm.started
	ed.mustCall("agentd/chat/stop", map[string]any{"chatId": chat}, &res)
	if !slices.Equal(res.Stopped, []string{"planning"}) {
		t.Fatalf("stop over a planning: %+v", res)
	}
	if err := <-errc; errCode(err) != jsonrpc2.Code(CodeCancelled) || !strings.Contains(err.Error(), "agentd/chat/stop") {
		t.Fatalf("the stopped plan/create answered %v, want -32800 saying why", err)
	}
	waitChat(t, ed, chat, func(v ChatView) bool { return len(v.Turns) == 2 && v.Turns[1].Status == engine.RunCancelled })

	// A planning the core started from the queue.
	ed.mustCall("agentd/chat/queue", map[string]any{"chatId": chat, "request": "queued slow"}, nil)
	<-pm.started
	ed.mustCall("agentd/chat/stop", map[string]any{"chatId": chat}, &res)
	if !slices.Equal(res.Stopped, []string{"planning"}) {
		t.Fatalf("stop over a queued planning: %+v", res)
	}
	v := waitChat(t, ed, chat, func(v ChatView) bool { return len(v.Turns) == 3 && v.Turns[2].Status == engine.RunCancelled })
	if v.Turns[2].Request != "queued slow" {
		t.Fatalf("the stopped queued turn: %+v", v.Turns[2])
	}
	if err := ed.call("agentd/chat/stop", map[string]any{"chatId": "chat-000000000000"}, nil); errCode(err) != -32003 {
		t.Errorf("stop of an unknown chat: %v, want -32003", err)
	}
	if err := ed.call("agentd/chat/stop", map[string]any{}, nil); errCode(err) != -32602 {
		t.Errorf("stop without chatId: %v, want -32602", err)
	}
}

// guidedPlanMaker plans "wait" requests once the test says the guidance
// is given, recording what req.Guidance returned then.
type guidedPlanMaker struct {
	scriptedPlanMaker
	started, given chan struct{}
	read           []string
}

func (m *guidedPlanMaker) MakePlan(ctx context.Context, req PlanRequest) (*plans.Plan, error) {
	if strings.HasSuffix(req.Request, "wait") {
		m.started <- struct{}{}
		<-m.given
		if req.Guidance != nil {
			m.read = req.Guidance()
		}
	}
	return m.scriptedPlanMaker.MakePlan(ctx, req)
}

// Guidance while the turn's plan is made goes to the planner's next call
// (PlanRequest.Guidance) and is recorded on the turn.
func TestChatGuidanceReachesThePlanner(t *testing.T) {
	pm := &guidedPlanMaker{started: make(chan struct{}, 1), given: make(chan struct{})}
	ed, chat := startQueueEditor(t, pm)
	errc := make(chan error, 1)
	go func() {
		errc <- ed.call("agentd/plan/create", map[string]any{"request": "rename and wait", "chatId": chat}, nil)
	}()
	<-pm.started
	var q ChatQueueResult
	ed.mustCall("agentd/chat/queue", map[string]any{"chatId": chat, "request": "only in greet/", "when": "guidance"}, &q)
	close(pm.given)
	if q.Delivered == nil || !*q.Delivered || !slices.Equal(q.DeliveredTo, []string{"planning"}) {
		t.Fatalf("guidance while planning: %+v", q)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pm.read, []string{"only in greet/"}) {
		t.Errorf("the planner read %q", pm.read)
	}
	var v ChatView
	ed.mustCall("agentd/chat/load", map[string]any{"chatId": chat}, &v)
	if len(v.Turns) != 1 || !slices.Equal(v.Turns[0].Guidance, []string{"only in greet/"}) || v.Turns[0].PlanID == "" {
		t.Fatalf("the turn as kept: %+v", v.Turns)
	}
}
