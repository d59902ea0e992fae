package rpc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/session"
)

// The context chips' sizes over the wire: agentd/context/size reads each
// item (a file, lines of it, an editor's text, the git diff against HEAD
// read by the daemon) and counts it; a plan made with the same items tells
// the planner exactly the blocks that were counted, after the user's
// words, and the chat keeps the user's words only. An item that cannot be
// read is named, in the sizes and as the request's error.
func TestContextSizeIsWhatTheRequestCarries(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\nbeta\ngamma\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRepo(t, ws)
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\nbeta\ngamma\ndelta, not committed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pm := &scriptedPlanMaker{}
	ed := chatEditor(t, state, ws, pm)
	uri := pathToURI(filepath.Join(ws, "a.txt"))
	items := []map[string]any{
		{"uri": uri},
		{"uri": uri, "range": map[string]any{"start": map[string]any{"line": 1, "character": 0}, "end": map[string]any{"line": 3, "character": 0}}},
		{"text": "a.txt:2: beta is undefined", "title": "Problems of a.txt"},
		{"kind": "diff"},
	}
	type size struct {
		Title  string `json:"title"`
		Tokens int    `json:"tokens"`
		Error  string `json:"error"`
	}
	var got struct {
		Items []size `json:"items"`
		Total int    `json:"total"`
	}
	ed.mustCall("agentd/context/size", map[string]any{"items": items}, &got)
	wantTitles := []string{"a.txt", "a.txt (lines 2-3)", "Problems of a.txt", "git diff against HEAD"}
	if len(got.Items) != len(wantTitles) {
		t.Fatalf("sizes = %+v, want %d", got.Items, len(wantTitles))
	}
	sum := 0
	for i, s := range got.Items {
		if s.Title != wantTitles[i] || s.Error != "" || s.Tokens <= 0 {
			t.Errorf("item %d = %+v, want title %q, tokens, no error", i, s, wantTitles[i])
		}
		sum += s.Tokens
	}
	if got.Total != sum || got.Items[1].Tokens >= got.Items[0].Tokens {
		t.Errorf("total %d (items sum %d); the lines (%d) should take fewer tokens than the file (%d)", got.Total, sum, got.Items[1].Tokens, got.Items[0].Tokens)
	}

	var made struct {
		ChatID string `json:"chatId"`
	}
	ed.mustCall("agentd/chat/new", map[string]any{}, &made)
	ed.mustCall("agentd/plan/create", map[string]any{"request": "explain beta", "chatId": made.ChatID, "context": map[string]any{"items": items}}, nil)
	req := pm.asked(0)
	const head = "\n\n## Context the user attached\n"
	at := strings.Index(req, head)
	if at < 0 || !strings.Contains(req[:at], "explain beta") {
		t.Fatalf("the planner's request has no attached context after the words:\n%s", req)
	}
	// Each block starts with its title line ("\n### a.txt").
	blocks := strings.Split(req[at+len(head):], "\n### ")[1:]
	for i := range blocks {
		blocks[i] = "\n### " + blocks[i]
	}
	if len(blocks) != len(items) {
		t.Fatalf("%d blocks told, want %d:\n%s", len(blocks), len(items), req[at:])
	}
	for i, b := range blocks {
		if !strings.HasPrefix(b, "\n### "+wantTitles[i]+"\n") || session.EstimateTokens(b) != got.Items[i].Tokens {
			t.Errorf("block %d (%d tokens, size said %d):\n%s", i, session.EstimateTokens(b), got.Items[i].Tokens, b)
		}
	}
	for _, want := range []string{"beta\ngamma\n```", "beta is undefined", "+delta, not committed"} {
		if !strings.Contains(req[at:], want) {
			t.Errorf("the attached context lacks %q:\n%s", want, req[at:])
		}
	}
	var v ChatView
	ed.mustCall("agentd/chat/load", map[string]any{"chatId": made.ChatID}, &v)
	if len(v.Turns) != 1 || v.Turns[0].Request != "explain beta" {
		t.Errorf("the chat's turn = %+v, want the user's words only", v.Turns)
	}

	bad := []map[string]any{{"uri": pathToURI(filepath.Join(ws, "nope.txt"))}, {"kind": "images"}}
	ed.mustCall("agentd/context/size", map[string]any{"items": bad}, &got)
	if len(got.Items) != 2 || !strings.Contains(got.Items[0].Error, "nope.txt: no such file in the workspace") || !strings.Contains(got.Items[1].Error, "images") || got.Total != 0 {
		t.Errorf("sizes of unreadable items = %+v", got)
	}
	err := ed.call("agentd/plan/create", map[string]any{"request": "x", "context": map[string]any{"items": bad}}, nil)
	if errCode(err) != -32602 || !strings.Contains(err.Error(), "nope.txt") {
		t.Errorf("a plan with an unreadable item: %v, want -32602 naming nope.txt", err)
	}
}
