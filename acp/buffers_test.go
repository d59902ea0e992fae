package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/internal/fakemodel"
)

// TestRestoreSparesUnsavedBuffer checks the buffer protection ACP shares
// with the editors: a file the agent read through the client
// (fs/read_text_file) whose buffer holds the user's unsaved edits is left
// alone by /restore and reported, on disk too. Before, every read opened
// the buffer anew and lost whose edits it held, so the restore went ahead
// under the user's buffer (issue 25).
func TestRestoreSparesUnsavedBuffer(t *testing.T) {
	fake := fakemodel.New()
	url := fake.Start(t)
	ws := t.TempDir()
	state := t.TempDir()
	file := filepath.Join(ws, "a.txt")
	if err := os.WriteFile(file, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := boundedCtx(t)
	caps := sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}}
	c := &testClient{}
	conn, stop := start(t, c, modelOptions(url, state))
	defer stop()
	ns := openSession(t, conn, caps, ws, modeAuto)
	prompt := func(text string) {
		t.Helper()
		if _, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}}); err != nil {
			t.Fatal(err)
		}
	}

	// The agent writes a.txt through the client.
	fake.Push(fakemodel.Reply{Text: `{"title":"Two","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"two\n"}}]}`})
	prompt("make it two")
	if got, _ := os.ReadFile(file); string(got) != "two\n" {
		t.Fatalf("a.txt = %q", got)
	}
	// The snapshot at the start of that run (the saved session names it).
	var saved savedSession
	matches, _ := filepath.Glob(filepath.Join(state, "workspaces", "*", "journal", "acp", "sessions", string(ns.SessionId)+".json"))
	if len(matches) != 1 {
		t.Fatalf("saved session files: %v", matches)
	}
	if data, err := os.ReadFile(matches[0]); err != nil || json.Unmarshal(data, &saved) != nil {
		t.Fatalf("reading the saved session: %v", err)
	}
	if saved.Run == nil || len(saved.Run.Snapshots) == 0 {
		t.Fatalf("saved: %+v", saved)
	}
	first := saved.Run.Snapshots[0]

	// The user types in the editor's buffer and does not save; the agent
	// then reads the file through the client.
	c.mu.Lock()
	c.buffers = map[string]string{file: "two\nmine\n"}
	c.mu.Unlock()
	fake.Push(fakemodel.Reply{Text: `{"title":"Look","steps":[{"id":"r","tool":"read_file","args":{"path":"a.txt"}}]}`})
	prompt("look at a.txt")

	// Restoring the first run's start would change a.txt on disk under
	// the user's unsaved buffer: it is left alone and reported.
	c.mu.Lock()
	mark := len(c.updates)
	c.mu.Unlock()
	prompt("/restore " + first)
	if got, _ := os.ReadFile(file); string(got) != "two\n" {
		t.Fatalf("a restore went ahead under the user's unsaved buffer: a.txt on disk = %q", got)
	}
	said := c.said(mark)
	if !strings.Contains(said, "a.txt") || !strings.Contains(said, "unsaved edits") {
		t.Fatalf("the chat does not report the unsaved buffer:\n%s", said)
	}
}
