package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/internal/fakemodel"
	agentsession "github.com/agentd/agentd/session"
)

// TestPromptsAreTurnsOfAConversation: each prompt's planner is told the
// turns before it, as agentd chat's is (session.Conversation): what was
// asked and planned, how the run ended, and that the user undid it.
func TestPromptsAreTurnsOfAConversation(t *testing.T) {
	fake := fakemodel.New()
	url := fake.Start(t)
	ws, state := t.TempDir(), t.TempDir()
	c := &testClient{}
	conn, stopServe := start(t, c, modelOptions(url, state))
	var once sync.Once
	stop := func() { once.Do(stopServe) }
	defer stop()
	ns := openSession(t, conn, sdk.ClientCapabilities{}, ws, modeAuto)
	ctx := boundedCtx(t)
	prompt := func(text string) {
		t.Helper()
		if _, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}}); err != nil {
			t.Fatalf("prompt %q: %v", text, err)
		}
	}
	// The plan request of the prompt whose request text is ask.
	planRequest := func(ask string) string {
		t.Helper()
		for _, r := range fake.Requests() {
			if b := string(r.Body); strings.Contains(b, `Now the user asks (plan only this, in the light of the turns above):\n`+ask) {
				return b
			}
		}
		t.Fatalf("no plan request told the turns before %q", ask)
		return ""
	}
	fake.Push(fakemodel.Reply{Text: `{"title":"Note","steps":[{"id":"w","tool":"write_file","args":{"path":"note.txt","content":"one\n"}}]}`})
	prompt("write the note")
	fake.Push(fakemodel.Reply{Text: `{"title":"Read","steps":[{"id":"r","tool":"read_file","args":{"path":"note.txt"}}]}`})
	prompt("read it back")
	second := planRequest("read it back")
	for _, want := range []string{"one turn of a conversation in the editor", "Turn 1. The user asked: write the note",
		`The plan \"Note\":`, "w [write_file] writes note.txt", "step w: completed"} {
		if !strings.Contains(second, want) {
			t.Errorf("the second prompt's planner was not told %q:\n%s", want, second)
		}
	}
	prompt("/undo")
	fake.Push(fakemodel.Reply{Text: `{"title":"Again","steps":[{"id":"l","tool":"list_dir","args":{"path":"."}}]}`})
	prompt("look again")
	third := planRequest("look again")
	if !strings.Contains(third, "Turn 2. The user asked: read it back") || !strings.Contains(third, "The user undid this turn's run") {
		t.Errorf("the third prompt's planner was not told of turn 2 and the undo:\n%s", third)
	}
	stop()

	// The conversation is the workspace's chat (the editors' agentd/chat/*,
	// agentd chat --resume): the session names it, and it holds the turns.
	matches, _ := filepath.Glob(filepath.Join(state, "workspaces", "*", "journal", "acp", "sessions", string(ns.SessionId)+".json"))
	var saved savedSession
	if len(matches) != 1 {
		t.Fatalf("saved session files: %v", matches)
	}
	if data, err := os.ReadFile(matches[0]); err != nil || json.Unmarshal(data, &saved) != nil || saved.ChatID == "" || len(saved.Conversation.Turns) != 0 {
		t.Fatalf("the saved session names no chat (or keeps its own turns): %v %+v", err, saved)
	}
	var chat agentsession.Chat
	data, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(matches[0]))), "chats", saved.ChatID+".json"))
	if err != nil || json.Unmarshal(data, &chat) != nil {
		t.Fatalf("the session's chat %s is not in the chat store: %v", saved.ChatID, err)
	}
	if len(chat.Turns) != 3 || chat.Turns[1].Request != "read it back" || !chat.Turns[1].Undone || chat.Turns[0].Status != "completed" {
		t.Fatalf("the session's chat: %+v", chat)
	}
}
