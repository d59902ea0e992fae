package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
)

func runPlan(t *testing.T, s *Session, p *plans.Plan) engine.RunState {
	t.Helper()
	cfg := s.Config()
	cfg.Tools, cfg.Approver = tools.Builtin(), approval.AllowAll{}
	run, err := engine.New(cfg).Start(context.Background(), p.Clone(), engine.RunOptions{Review: engine.ReviewNone})
	if err != nil {
		t.Fatal(err)
	}
	st, err := run.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func parsePlan(t *testing.T, id, text string) *plans.Plan {
	t.Helper()
	p, err := plans.ParsePlan("p.json", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	p.ID = id
	return p
}

// A chat keeps its turns in the workspace's state: each turn's plan, how
// its run ended (a failure with its output), the undo of its run; the next
// turn's context says them; a new session (a restart) finds the chat as
// it was; rename and delete; unknown ids name what to do.
func TestChatStoreTurnsRunsUndoAndRestart(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("zero\n"), 0o644)
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	changed := map[string]int{}
	s.ChatStore().OnChange(func(id string) { mu.Lock(); changed[id]++; mu.Unlock() })

	c, err := s.NewChat(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.ID, "chat-") || c.Title != "" {
		t.Fatalf("new chat %+v", c)
	}
	if ctxt, err := s.ChatContext(c.ID, "in the editor"); err != nil || ctxt != "" {
		t.Fatalf("an empty chat's context %q %v", ctxt, err)
	}
	p1 := parsePlan(t, "plan-one", `{"title":"One","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"one\n"}},
		{"id":"t","tool":"run_command","args":{"command":"echo 'FAIL: TestOne wants two'; exit 1"},"dependsOn":["w"],"critical":false}]}`)
	if _, err := s.AddChatTurn(ctx, c.ID, "write one", p1); err != nil {
		t.Fatal(err)
	}
	st := runPlan(t, s, p1)
	if st.Status == engine.RunCompleted {
		t.Fatalf("run 1 %s, want a failed step", st.Status)
	}
	got, err := s.Chat(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "write one" || len(got.Turns) != 1 {
		t.Fatalf("chat after turn 1: %+v", got)
	}
	t1 := got.Turns[0]
	if t1.PlanID != "plan-one" || t1.RunID != st.RunID || t1.Status != st.Status || !strings.Contains(t1.Failure, "FAIL: TestOne wants two") {
		t.Fatalf("turn 1 did not learn its run: %+v", t1)
	}
	if _, err := s.UndoRun(ctx, st.RunID, UndoOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Chat(c.ID); !got.Turns[0].Undone {
		t.Fatalf("turn 1 not undone after the undo of its run: %+v", got.Turns[0])
	}
	p2 := parsePlan(t, "plan-two", `{"title":"Two","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"two\n"}}]}`)
	if _, err := s.AddChatTurn(ctx, c.ID, "write two", p2); err != nil {
		t.Fatal(err)
	}
	st2 := runPlan(t, s, p2)
	mu.Lock()
	n := changed[c.ID]
	mu.Unlock()
	if n < 4 { // new, turn 1, undo, turn 2 (and the runs' ends)
		t.Errorf("%d change notices for the chat, want at least 4", n)
	}
	s.Close()

	s, err = Open(ctx, Options{Root: ws, StateDir: state}) // a restart
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list, err := s.Chats()
	if err != nil || len(list) != 1 || list[0].ID != c.ID || list[0].Turns != 2 || list[0].Title != "write one" {
		t.Fatalf("chats after a restart: %+v %v", list, err)
	}
	ctxt, err := s.ChatContext(c.ID, "in the editor")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Turn 1. The user asked: write one", `The plan "One"`, "w [write_file] writes a.txt",
		"FAIL: TestOne wants two", "The user undid this turn's run", "Turn 2. The user asked: write two", "Result: " + string(st2.Status)} {
		if !strings.Contains(ctxt, want) {
			t.Errorf("turn 3's context lacks %q:\n%s", want, ctxt)
		}
	}
	if _, err := s.RenameChat(ctx, c.ID, "  the greeter\nmore"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Chat(c.ID); got.Title != "the greeter" {
		t.Errorf("title after rename %q", got.Title)
	}
	if _, err := s.RenameChat(ctx, c.ID, " "); err == nil || !strings.Contains(err.Error(), c.ID) {
		t.Errorf("rename to nothing: %v", err)
	}
	var nf *ChatNotFoundError
	for _, id := range []string{"chat-nope", "../x", "a/b"} {
		if _, err := s.Chat(id); !errors.As(err, &nf) || !strings.Contains(err.Error(), "agentd/chat/list") {
			t.Errorf("Chat(%q): %v, want a ChatNotFoundError naming agentd/chat/list", id, err)
		}
	}
	if err := s.DeleteChat(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Chat(c.ID); !errors.As(err, &nf) {
		t.Errorf("a deleted chat loads: %v", err)
	}
	if err := s.DeleteChat(ctx, c.ID); !errors.As(err, &nf) {
		t.Errorf("deleting it again: %v", err)
	}
	if list, _ := s.Chats(); len(list) != 0 {
		t.Errorf("chats after delete %+v", list)
	}
}

// The chats are listed latest changed first; a chat's record is written
// whole (temp file and rename): no temp file is left, and a damaged
// record is left out of the list, not the others.
func TestChatStoreListOrderAndDamage(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: ws, StateDir: state, NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, _ := s.NewChat(ctx, "a")
	b, _ := s.NewChat(ctx, "b")
	if _, err := s.AddChatTurn(ctx, a.ID, "more a", nil); err != nil {
		t.Fatal(err)
	}
	list, _ := s.Chats()
	if len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID {
		t.Fatalf("list %+v, want a (changed last) then b", list)
	}
	dir := filepath.Join(s.Journal.Dir(), "chats")
	os.WriteFile(filepath.Join(dir, "chat-bad.json"), []byte("{"), 0o600)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp") {
			t.Errorf("temp file left: %s", e.Name())
		}
	}
	if list, err := s.Chats(); err != nil || len(list) != 2 {
		t.Errorf("with a damaged record: %+v %v", list, err)
	}
	if _, err := s.Chat("chat-bad"); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("loading the damaged chat: %v", err)
	}
}
