package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.lsp.dev/jsonrpc2"

	"github.com/agentd/agentd/session"
)

// askingPlanMaker answers questions by streaming its pieces (Answerer)
// and keeps what it was asked; with hold set it streams the first piece,
// says so on started and waits until the question is cancelled.
type askingPlanMaker struct {
	scriptedPlanMaker
	pieces  []string
	hold    bool
	started chan struct{}
	amu     sync.Mutex
	asks    []PlanRequest
}

func (m *askingPlanMaker) Answer(ctx context.Context, req PlanRequest, onText func(string)) (*Answer, error) {
	m.amu.Lock()
	m.asks = append(m.asks, req)
	m.amu.Unlock()
	if m.hold {
		onText(m.pieces[0])
		close(m.started)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	for _, p := range m.pieces {
		onText(p)
	}
	return &Answer{Text: strings.Join(m.pieces, ""), Read: []string{"Read cart/discount.go (the discount rule)"}}, nil
}

// A question in a chat: the answer streams as agentd/chat/stream before
// the result, the chat records the question turn (no plan), and the next
// turn's planner is told the question and its answer; the question's own
// request carries the turns before it and asks for words.
func TestChatAskStreamsAndIsRemembered(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	pm := &askingPlanMaker{pieces: []string{"A tenth ", "of the total."}}
	ed := chatEditor(t, state, ws, pm)
	var made struct {
		ChatID string `json:"chatId"`
	}
	ed.mustCall("agentd/chat/new", map[string]any{}, &made)

	if err := ed.call("agentd/chat/ask", map[string]any{"chatId": made.ChatID, "question": "  "}, nil); errCode(err) != -32602 ||
		!strings.Contains(err.Error(), "question") {
		t.Fatalf("an empty question: %v, want -32602 naming question", err)
	}
	ed.mu.Lock()
	from := len(ed.notes)
	ed.mu.Unlock()
	var res struct {
		ChatID   string   `json:"chatId"`
		Turn     int      `json:"turn"`
		Request  string   `json:"request"`
		Question bool     `json:"question"`
		Answer   string   `json:"answer"`
		Read     []string `json:"read"`
	}
	ed.mustCall("agentd/chat/ask", map[string]any{"chatId": made.ChatID, "question": "how is the discount computed?"}, &res)
	if res.ChatID != made.ChatID || res.Turn != 0 || !res.Question || res.Answer != "A tenth of the total." || len(res.Read) != 1 {
		t.Fatalf("chat/ask result %+v", res)
	}
	// Every piece came before the result, in order.
	ed.mu.Lock()
	var streamed string
	for _, n := range ed.notes[from:] {
		if n.Method == "agentd/chat/stream" {
			var p struct {
				ChatID, Text string
				Turn         int
			}
			json.Unmarshal(n.Params, &p)
			if p.ChatID != made.ChatID || p.Turn != 0 {
				t.Errorf("stream notice %s", n.Params)
			}
			streamed += p.Text
		}
	}
	ed.mu.Unlock()
	if streamed != "A tenth of the total." {
		t.Errorf("streamed %q before the result", streamed)
	}
	if q := pm.asks[0].Request; q != "how is the discount computed?" {
		t.Errorf("the first question was sent as %q, want the question alone", q)
	}
	var v ChatView
	ed.mustCall("agentd/chat/load", map[string]any{"chatId": made.ChatID}, &v)
	if len(v.Turns) != 1 || !v.Turns[0].Question || v.Turns[0].PlanID != "" || v.Title != "how is the discount computed?" {
		t.Fatalf("chat after the question: %+v", v)
	}
	// The next plan's planner is told the question and its answer.
	ed.mustCall("agentd/plan/create", map[string]any{"request": "cap it at 50", "chatId": made.ChatID}, nil)
	asked := pm.asked(0)
	for _, want := range []string{"The user asked a question: how is the discount computed?", "The answer given:\nA tenth of the total.",
		"Read to answer it: Read cart/discount.go (the discount rule)", "cap it at 50"} {
		if !strings.Contains(asked, want) {
			t.Errorf("the next turn's planner request lacks %q:\n%s", want, asked)
		}
	}
	// A second question is told the turns before and asked for words.
	ed.mustCall("agentd/chat/ask", map[string]any{"chatId": made.ChatID, "question": "and now?"}, &res)
	if q := pm.asks[1].Request; !strings.Contains(q, "Turn 2. The user asked: cap it at 50") || !strings.Contains(q, "answer it in words") ||
		!strings.HasSuffix(q, "and now?") || res.Turn != 2 {
		t.Errorf("second question (turn %d) sent as:\n%s", res.Turn, q)
	}
	if err := ed.call("agentd/chat/ask", map[string]any{"chatId": "chat-nope", "question": "x"}, nil); errCode(err) != -32003 {
		t.Errorf("a question in an unknown chat: %v, want -32003", err)
	}
}

// $/cancelRequest stops a question: -32800, and the chat keeps the turn
// with what was streamed so far, marked cancelled.
func TestChatAskCancelKeepsWhatWasSaid(t *testing.T) {
	pm := &askingPlanMaker{pieces: []string{"It starts "}, hold: true, started: make(chan struct{})}
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
	r := rc.response()
	if err := json.Unmarshal(r.Result(), &made); err != nil || made.ChatID == "" {
		t.Fatalf("chat/new: %s %v", r.Result(), r.Err())
	}
	rc.call(3, "agentd/chat/ask", map[string]any{"chatId": made.ChatID, "question": "explain the cart"})
	<-pm.started
	rc.writeRaw(frame(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":3}}`))
	if r := rc.response(); errCode(r.Err()) != jsonrpc2.Code(-32800) {
		t.Fatalf("cancelled question answered %v %s, want -32800", r.Err(), r.Result())
	}
	rc.call(4, "agentd/chat/load", map[string]any{"chatId": made.ChatID})
	var v ChatView
	r = rc.response()
	if err := json.Unmarshal(r.Result(), &v); err != nil {
		t.Fatal(err, r.Err())
	}
	if len(v.Turns) != 1 || !v.Turns[0].Question || v.Turns[0].Answer != "It starts" || v.Turns[0].Status != "cancelled" {
		t.Fatalf("the stopped question as kept: %+v", v.Turns)
	}
}

// agentd/chat/load says which turns the next request condenses, before
// the user sends it.
func TestChatLoadSaysWhatTheNextRequestCondenses(t *testing.T) {
	old := session.ChatContextTokens
	session.ChatContextTokens = 1
	defer func() { session.ChatContextTokens = old }()
	pm := &askingPlanMaker{pieces: []string{strings.Repeat("a long answer line\n", 20)}}
	ed := chatEditor(t, t.TempDir(), t.TempDir(), pm)
	var made struct {
		ChatID string `json:"chatId"`
	}
	ed.mustCall("agentd/chat/new", map[string]any{}, &made)
	var v ChatView
	for i, want := range [][]int{nil, nil, nil, {1}, {1, 2}} {
		ed.mustCall("agentd/chat/load", map[string]any{"chatId": made.ChatID}, &v)
		if fmt.Sprint(v.Condensed) != fmt.Sprint(want) {
			t.Fatalf("after %d turns chat/load says %v condensed, want %v", i, v.Condensed, want)
		}
		ed.mustCall("agentd/chat/ask", map[string]any{"chatId": made.ChatID, "question": fmt.Sprintf("question %d", i+1)}, nil)
	}
	if q := pm.asks[4].Request; !strings.Contains(q, "(Turns 1-2 are condensed to fit") || !strings.Contains(pm.asks[3].Request, "(Turn 1 is condensed") {
		t.Errorf("the fifth question (or the fourth) does not say the condensing:\n%s", q)
	}
}
