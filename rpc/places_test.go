package rpc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// initializeErr calls initialize and returns its error.
func initializeErr(ed *editor, root string, initOpts map[string]any) error {
	params := map[string]any{"processId": nil, "rootUri": pathToURI(root), "capabilities": map[string]any{}, "initializationOptions": initOpts}
	var res InitializeResult
	return ed.call("initialize", params, &res)
}

// A state dir inside the workspace, or inside the user's .git, is refused
// at initialize before anything is written (issue 24, point 2).
func TestInitializeRefusesStateDirInWorkspace(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(root, "state"), filepath.Join(root, ".git", "agentd-state")} {
		ed := startEditor(t, Options{}, func(s *Server) { s.opts.StateDir = "" })
		err := initializeErr(ed, root, map[string]any{"stateDir": dir})
		if err == nil || errCode(err) != -32602 || !strings.Contains(err.Error(), "initializationOptions.stateDir") || !strings.Contains(err.Error(), "put the state dir outside") {
			t.Errorf("stateDir %s: initialize error = %v, want -32602 naming initializationOptions.stateDir and where to put it", dir, err)
		}
		if _, err := os.Lstat(dir); err == nil {
			t.Errorf("%s was created", dir)
		}
	}
}

// A workspace that is the home directory is refused unless
// initializationOptions.allowBroadWorkspace confirms it (point 6).
func TestInitializeRefusesHomeWorkspace(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	ed := startEditor(t, Options{}, nil)
	err := initializeErr(ed, home, map[string]any{})
	if err == nil || errCode(err) != -32602 || !strings.Contains(err.Error(), "home directory") || !strings.Contains(err.Error(), "allowBroadWorkspace") {
		t.Fatalf("initialize error = %v, want -32602 naming the home directory and allowBroadWorkspace", err)
	}
	ed = startEditor(t, Options{}, nil)
	if err := initializeErr(ed, home, map[string]any{"allowBroadWorkspace": true}); err != nil {
		t.Fatalf("with allowBroadWorkspace: %v", err)
	}
}
