//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/fakemodel"
)

// One conversation under the front ends: a chat started in an editor
// (agentd serve: agentd/chat/new, plan/create with its chatId, a run that
// fails) is continued at the terminal (agentd chat --resume), whose
// planner is told turn 1 word for word as the editor's would be; a new
// daemon over the same state dir then lists the chat with the terminal's
// turn, and its turn 3 is told turns 1-2. The model is the fake model
// server; what each planner was told is read from its recorded requests.
func TestChatStartedInTheEditorContinuesAtTheTerminal(t *testing.T) {
	srv := fakemodel.New()
	modelEnv(t, srv)
	srv.Push(fakemodel.Reply{Text: `{"title":"Read the notes","steps":[{"id":"r","tool":"read_file","args":{"path":"notes.txt"},"critical":false}]}`})
	srv.Push(fakemodel.Reply{Text: `{"title":"Read a","steps":[{"id":"a","tool":"read_file","args":{"path":"a.txt"}}]}`})
	srv.Push(fakemodel.Reply{Text: `{"title":"List","steps":[{"id":"l","tool":"list_dir","args":{"path":"."}}]}`})
	ws, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)

	// Turn 1 in the editor.
	ed := startServeProc(t, state)
	initialize(ed.lspConn, ws)
	r := ed.call("agentd/chat/new", map[string]any{})
	chat, _ := r["result"].(map[string]any)["chatId"].(string)
	if chat == "" {
		t.Fatalf("chat/new: %v", r)
	}
	r = ed.call("agentd/plan/create", map[string]any{"request": "read the notes", "chatId": chat, "exploreRounds": -1, "mapTokens": -1})
	plan, _ := r["result"].(map[string]any)
	if plan == nil {
		t.Fatalf("plan/create: %v", r)
	}
	r = ed.call("agentd/run/start", map[string]any{"planId": plan["id"], "options": map[string]any{"review": "none"}})
	if r["error"] != nil {
		t.Fatalf("run/start: %v", r["error"])
	}
	for { // the run's end
		m := ed.read()
		if b, _ := json.Marshal(m); m["method"] == "agentd/run/didChange" && strings.Contains(string(b), `"type":"runFinished"`) {
			break
		}
	}
	ed.in.Close()
	<-ed.exited

	// Turn 2 at the terminal.
	term := startPTY(t, nil, "chat", "--resume", chat, "--workspace", ws, "--state-dir", state, "--explore", "-1", "--yes")
	at := term.waitFor("continuing chat "+chat+` "read the notes" (1 turn before this one)`, 0)
	at = term.waitFor("›", at)
	term.send("read a.txt\n")
	at = term.waitFor("turn 1: completed", at)
	term.waitFor("›", at)
	term.send("\x04")
	if code := term.wait(); code != exitOK {
		t.Fatalf("agentd chat --resume: exit %d\n%s", code, term.tail())
	}
	list := agentd(t, "", "chat", "--list", "--workspace", ws, "--state-dir", state)
	if !strings.Contains(list.stdout, chat) || !strings.Contains(list.stdout, " 2 turns  read the notes") {
		t.Errorf("agentd chat --list:\n%s%s", list.stdout, list.stderr)
	}
	if bad := agentd(t, "", "chat", "--resume", "chat-nope", "--workspace", ws, "--state-dir", state); bad.code != exitUsage ||
		!strings.Contains(bad.stderr, `no chat "chat-nope" in this workspace: agentd chat --list shows the chats`) {
		t.Errorf("--resume of an unknown chat: exit %d\n%s", bad.code, bad.stderr)
	}

	// Turn 3 in a new daemon.
	ed = startServeProc(t, state)
	initialize(ed.lspConn, ws)
	r = ed.call("agentd/chat/load", map[string]any{"chatId": chat})
	loaded, _ := r["result"].(map[string]any)
	turns, _ := loaded["turns"].([]any)
	if len(turns) != 2 || turns[1].(map[string]any)["request"] != "read a.txt" || turns[1].(map[string]any)["status"] != "completed" {
		t.Fatalf("chat/load in a new daemon: %v", r)
	}
	r = ed.call("agentd/plan/create", map[string]any{"request": "list the files", "chatId": chat, "exploreRounds": -1, "mapTokens": -1})
	if r["error"] != nil {
		t.Fatalf("turn 3: %v", r["error"])
	}

	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	first, atTerm, inEd := unescapeJSONText(string(reqs[0].Body)), unescapeJSONText(string(reqs[1].Body)), unescapeJSONText(string(reqs[2].Body))
	if strings.Contains(first, "Turn 1.") {
		t.Errorf("turn 1 was told of turns before it:\n%s", first)
	}
	// Turn 1 as each planner was told it.
	turn1 := func(body, end string) string {
		_, rest, ok := strings.Cut(body, "\nTurn 1. ")
		before, _, ok2 := strings.Cut(rest, end)
		if !ok || !ok2 {
			t.Fatalf("no turn 1 ending at %q in:\n%s", end, body)
		}
		return before
	}
	termSaw, edSaw := turn1(atTerm, "\nNow the user asks"), turn1(inEd, "\nTurn 2. ")
	if termSaw != edSaw {
		t.Errorf("the terminal's planner was told turn 1 as\n%s\nthe editor's as\n%s", termSaw, edSaw)
	}
	for _, want := range []string{"The user asked: read the notes", `The plan "Read the notes"`, "r [read_file] reads notes.txt", "What failed:", "notes.txt"} {
		if !strings.Contains(termSaw, want) {
			t.Errorf("turn 1 as told lacks %q:\n%s", want, termSaw)
		}
	}
	for _, want := range []string{"a conversation at the terminal", "Now the user asks (plan only this, in the light of the turns above):\nread a.txt"} {
		if !strings.Contains(atTerm, want) {
			t.Errorf("the terminal's request lacks %q", want)
		}
	}
	for _, want := range []string{"a conversation in the editor", "Turn 2. The user asked: read a.txt", `The plan "Read a"`, "Result: completed",
		"in the light of the turns above):\nlist the files"} {
		if !strings.Contains(inEd, want) {
			t.Errorf("turn 3's request (a new daemon) lacks %q:\n%s", want, inEd)
		}
	}
}
