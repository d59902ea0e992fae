package acp

import (
	"os"
	"path/filepath"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/internal/fakemodel"
)

// TestSessionPlannerMap: an ACP session's planner keeps its repository
// map's cache in the agent's state dir and a file watcher for the map
// (each watcher has a private directory in TMPDIR), as agentd serve does;
// when the agent stops, the watcher is stopped and leaves nothing behind.
func TestSessionPlannerMap(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	fake := fakemodel.New()
	url := fake.Start(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "greet.go"), []byte("package greet\n\nfunc Hello() string { return \"hi\" }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	ctx := boundedCtx(t)
	c := &testClient{}
	conn, stop := start(t, c, modelOptions(url, state))
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	caps := sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}}
	ns := openSession(t, conn, caps, ws, modeAuto)
	fake.Push(fakemodel.Reply{Text: `{"title":"Greet","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"hi\n"}}]}`})
	if _, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("make Hello greet")}}); err != nil {
		t.Fatal(err)
	}
	if caches, _ := filepath.Glob(filepath.Join(state, "repomap", "*")); len(caches) == 0 {
		t.Fatalf("no repository map cache in the state dir %s", state)
	}
	watchDirs := func() []string {
		m, _ := filepath.Glob(filepath.Join(tmp, "agentd-watch-*"))
		return m
	}
	if len(watchDirs()) == 0 {
		t.Fatal("no map watcher while the session is open")
	}
	stop()
	stopped = true
	if left := watchDirs(); len(left) != 0 {
		t.Fatalf("the map watcher outlived the agent: %v", left)
	}
}
