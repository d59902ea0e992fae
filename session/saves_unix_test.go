package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
)

// A line the user types and saves in the editor while a command of the
// run goes (`go test`, here a command waiting for a file) is the user's:
// the editor's save (didSave, workspace.SaveOverlay) tells the daemon,
// and the command's effect is recorded from what was saved. Undo takes
// back the agent's edit and keeps the user's line; the command, which
// wrote nothing, is recorded as having changed nothing. (Walked in
// Neovim: the line was lost before.)
func TestALineSavedInTheEditorWhileACommandRunsIsTheUsers(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644)
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cfg := s.Config()
	cfg.Tools, cfg.Approver = tools.Builtin(), approval.AllowAll{}
	sig := t.TempDir() // outside the workspace: the command's own signals
	started, goOn := filepath.Join(sig, "started"), filepath.Join(sig, "go")
	plan, _ := json.Marshal(map[string]any{"title": "t", "steps": []map[string]any{
		{"id": "edit", "tool": "write_file", "args": map[string]string{"path": "a.txt", "content": "ONE\n"}},
		// The command says it started, then waits for the user's save.
		{"id": "wait", "tool": "run_command", "args": map[string]string{"command": "touch '" + started + "'; while [ ! -f '" + goOn + "' ]; do sleep 0.02; done"}, "dependsOn": []string{"edit"}},
	}})
	p, err := plans.ParsePlan("t.json", plan)
	if err != nil {
		t.Fatal(err)
	}
	run, err := engine.New(cfg).Start(ctx, p, engine.RunOptions{Review: engine.ReviewNone})
	if err != nil {
		t.Fatal(err)
	}
	for {
		// Waits for the command to run (the state, not a time); a run that
		// ends first has failed.
		if _, err := os.Stat(started); err == nil {
			break
		}
		select {
		case <-run.Done():
			st, _ := run.Wait(ctx)
			t.Fatalf("the run ended before its command started: %s", st.Status)
		case <-time.After(10 * time.Millisecond):
		}
	}
	// The user, in the editor: a.txt is open, a line is typed and saved.
	if err := s.WS.OpenOverlay("a.txt", []byte("ONE\n"), 1); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("ONE\nmine\n"), 0o644)
	if err := s.WS.SaveOverlay("a.txt", []byte("ONE\nmine\n")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(goOn, nil, 0o644)
	st, err := run.Wait(ctx)
	if err != nil || st.Status != engine.RunCompleted {
		t.Fatalf("run: %s %v", st.Status, err)
	}
	res, err := s.UndoRun(ctx, st.RunID, UndoOptions{})
	if err != nil || !res.Applied {
		t.Fatalf("undo: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "one\nmine\n" {
		t.Fatalf("after undo a.txt = %q, want the agent's edit gone and the user's line kept", b)
	}
}
