package rpc

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/session"
)

// scriptedPlanMaker answers plan requests with its plans in turn and
// keeps what the planner was asked (the request it would send the model).
type scriptedPlanMaker struct {
	mu    sync.Mutex
	plans []string
	reqs  []PlanRequest
}

func (m *scriptedPlanMaker) MakePlan(ctx context.Context, req PlanRequest) (*plans.Plan, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = append(m.reqs, req)
	text := `{"title":"nothing","steps":[{"id":"r","tool":"list_dir","args":{"path":"."}}]}`
	if n := len(m.reqs); n <= len(m.plans) {
		text = m.plans[n-1]
	}
	p, err := plans.ParsePlan("plan.json", []byte(text))
	if err != nil {
		return nil, err
	}
	p.Request = req.Request // as engine/llm's planner does
	return p, nil
}

func (m *scriptedPlanMaker) asked(i int) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i >= len(m.reqs) {
		return ""
	}
	return m.reqs[i].Request
}

func chatEditor(t *testing.T, state, ws string, pm PlanMaker) *editor {
	t.Helper()
	ed := startEditor(t, Options{PlanMaker: pm, StateDir: state}, nil)
	ed.setAuto("window/workDoneProgress/create", func(json.RawMessage) (any, error) { return nil, nil })
	// The steps' approvals (the default policy asks before a write).
	ed.setAuto("window/showMessageRequest", func(json.RawMessage) (any, error) { return map[string]any{"title": "Allow once"}, nil })
	ed.initialize(ws, nil)
	return ed
}

// runTurn starts the plan with review none and waits for the chat to
// learn the run's end (agentd/chat/changed, then agentd/chat/load).
func runTurn(t *testing.T, ed *editor, chatID, planID string) ChatView {
	t.Helper()
	ed.mu.Lock()
	from := len(ed.notes)
	ed.mu.Unlock()
	var res RunStartResult
	ed.mustCall("agentd/run/start", map[string]any{"planId": planID, "options": map[string]any{"review": "none"}}, &res)
	for {
		_, from = ed.waitNote(from, func(n note) bool {
			return n.Method == "agentd/chat/changed" && strings.Contains(string(n.Params), chatID)
		})
		var v ChatView
		ed.mustCall("agentd/chat/load", map[string]any{"chatId": chatID}, &v)
		last := v.Turns[len(v.Turns)-1]
		if last.RunID == res.RunID && last.Status != "" && last.Status != engine.RunRunning && last.Status != engine.RunPaused {
			return v
		}
	}
}

// The chat on the wire: agentd/chat/new, plan/create with chatId (each
// turn's planner is told the turns before: requests, plans, how the runs
// ended, failures with output, undos), chat/list, chat/load, rename,
// delete, agentd/chat/changed; a new server over the same state dir (a
// daemon restart) keeps the chat, and turn 3 still carries turns 1-2.
func TestChatOnTheWire(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("zero\n"), 0o644)
	pm := &scriptedPlanMaker{plans: []string{
		`{"title":"Write one","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"one\n"}},
		  {"id":"r","tool":"read_file","args":{"path":"missing.txt"},"dependsOn":["w"],"critical":false}]}`,
		`{"title":"Write two","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"two\n"}}]}`,
		`{"title":"Write three","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"three\n"}}]}`,
	}}
	ed := chatEditor(t, state, ws, pm)

	var made session.ChatSummary
	ed.mustCall("agentd/chat/new", map[string]any{}, &made)
	if !strings.HasPrefix(made.ID, "chat-") || made.Title != "" || made.Turns != 0 {
		t.Fatalf("chat/new: %+v", made)
	}
	chat := made.ID
	ed.waitNote(0, func(n note) bool {
		return n.Method == "agentd/chat/changed" && strings.Contains(string(n.Params), chat)
	})

	// Turn 1: the planner is told the request alone.
	var p1 plans.Plan
	ed.mustCall("agentd/plan/create", map[string]any{"request": "write one", "chatId": chat}, &p1)
	if got := pm.asked(0); got != "write one" {
		t.Fatalf("turn 1's planner was asked %q, want the request alone", got)
	}
	if p1.Request != "write one" {
		t.Errorf("turn 1's plan request %q, want the user's words", p1.Request)
	}
	v := runTurn(t, ed, chat, p1.ID)
	t1 := v.Turns[0]
	if v.Title != "write one" || t1.Request != "write one" || t1.PlanID != p1.ID || t1.PlanTitle != "Write one" ||
		len(t1.PlanSteps) != 2 || !strings.Contains(t1.Failure, "missing.txt") || t1.StartSnapshot == "" {
		t.Fatalf("turn 1 as loaded: %+v", t1)
	}

	// Turn 2: the planner is told turn 1: its request, plan and outcome.
	var p2 plans.Plan
	ed.mustCall("agentd/plan/create", map[string]any{"request": "write two", "chatId": chat}, &p2)
	asked := pm.asked(1)
	for _, want := range []string{"Turn 1. The user asked: write one", `The plan "Write one"`, "w [write_file] writes a.txt",
		"Result: " + string(t1.Status), "step r: failed", "What failed:", "missing.txt", "Now the user asks", "write two"} {
		if !strings.Contains(asked, want) {
			t.Errorf("turn 2's planner request lacks %q:\n%s", want, asked)
		}
	}
	v = runTurn(t, ed, chat, p2.ID)
	// The undo of turn 2's run marks the turn undone.
	ed.mu.Lock()
	from := len(ed.notes)
	ed.mu.Unlock()
	ed.mustCall("agentd/undo/run", map[string]any{"runId": v.Turns[1].RunID}, nil)
	ed.waitNote(from, func(n note) bool {
		return n.Method == "agentd/chat/changed" && strings.Contains(string(n.Params), chat)
	})
	ed.mustCall("agentd/chat/load", map[string]any{"chatId": chat}, &v)
	if len(v.Turns) != 2 || !v.Turns[1].Undone || v.Turns[0].Undone {
		t.Fatalf("after the undo of turn 2's run: %+v %+v", v.Turns[0], v.Turns[1])
	}

	// A second chat, a rename; the list is the latest changed first.
	var other session.ChatSummary
	ed.mustCall("agentd/chat/new", map[string]any{"title": "other things"}, &other)
	var renamed session.ChatSummary
	ed.mustCall("agentd/chat/rename", map[string]any{"chatId": chat, "title": "the a.txt chat"}, &renamed)
	if renamed.Title != "the a.txt chat" || renamed.Turns != 2 {
		t.Fatalf("chat/rename: %+v", renamed)
	}
	var list struct {
		Chats []session.ChatSummary `json:"chats"`
	}
	ed.mustCall("agentd/chat/list", map[string]any{}, &list)
	if len(list.Chats) != 2 || list.Chats[0].ID != chat || list.Chats[1].ID != other.ID || list.Chats[1].Title != "other things" {
		t.Fatalf("chat/list: %+v", list.Chats)
	}

	// Unknown and missing ids: -32003 naming the chat and chat/list;
	// -32602 naming chatId.
	err := ed.call("agentd/chat/load", map[string]any{"chatId": "chat-nope"}, nil)
	if errCode(err) != CodeNotFound || !strings.Contains(err.Error(), "chat-nope") || !strings.Contains(err.Error(), "agentd/chat/list") {
		t.Errorf("chat/load of an unknown id: %v", err)
	}
	err = ed.call("agentd/plan/create", map[string]any{"request": "x", "chatId": "chat-nope"}, nil)
	if errCode(err) != CodeNotFound || !strings.Contains(err.Error(), "agentd/chat/list") {
		t.Errorf("plan/create with an unknown chat: %v", err)
	}
	if err := ed.call("agentd/chat/delete", map[string]any{}, nil); errCode(err) != -32602 || !strings.Contains(err.Error(), "chatId") {
		t.Errorf("chat/delete without chatId: %v", err)
	}
	var del map[string]any
	ed.mustCall("agentd/chat/delete", map[string]any{"chatId": other.ID}, &del)
	if err := ed.call("agentd/chat/load", map[string]any{"chatId": other.ID}, nil); errCode(err) != CodeNotFound {
		t.Errorf("a deleted chat loads: %v", err)
	}

	// A restart: a new server over the same state dir.
	ed.conn.Close()
	ed.done <- <-ed.done // stopped (and left for the cleanup to see)
	pm2 := &scriptedPlanMaker{plans: pm.plans[2:]}
	ed = chatEditor(t, state, ws, pm2)
	ed.mustCall("agentd/chat/list", map[string]any{}, &list)
	if len(list.Chats) != 1 || list.Chats[0].ID != chat || list.Chats[0].Turns != 2 {
		t.Fatalf("chat/list after a restart: %+v", list.Chats)
	}
	var p3 plans.Plan
	ed.mustCall("agentd/plan/create", map[string]any{"request": "write three", "chatId": chat}, &p3)
	asked = pm2.asked(0)
	for _, want := range []string{"Turn 1. The user asked: write one", "missing.txt", "Turn 2. The user asked: write two", `The plan "Write two"`,
		"The user undid this turn's run", "write three"} {
		if !strings.Contains(asked, want) {
			t.Errorf("turn 3's planner request (after a restart) lacks %q:\n%s", want, asked)
		}
	}
	ed.mustCall("agentd/chat/load", map[string]any{"chatId": chat}, &v)
	if len(v.Turns) != 3 || v.Turns[2].PlanID != p3.ID || v.Title != "the a.txt chat" {
		t.Fatalf("after turn 3: %+v", v)
	}
}
