package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/workspace"
)

// newWS makes a workspace in a temporary directory holding files.
func newWS(t *testing.T, files map[string]string) (*workspace.Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatalf("workspace.Open(%s): %v", dir, err)
	}
	// The workspace holds a handle to its root, which Windows does not let
	// t.TempDir's cleanup remove while it is open (a sharing violation).
	t.Cleanup(func() { ws.Close() })
	return ws, ws.Root()
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// call runs the named built-in tool with args (marshalled to JSON).
func call(t *testing.T, env *Env, name string, args any) (*Result, error) {
	t.Helper()
	tool, ok := Builtin().Get(name)
	if !ok {
		t.Fatalf("tool %s is not registered", name)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Run(context.Background(), env, raw)
}

// mustCall is call that fails the test on an error.
func mustCall(t *testing.T, env *Env, name string, args any) *Result {
	t.Helper()
	res, err := call(t, env, name, args)
	if err != nil {
		t.Fatalf("%s(%v): %v", name, args, err)
	}
	if res == nil {
		t.Fatalf("%s(%v): nil result", name, args)
	}
	return res
}

// output type-asserts a result's output.
func output[T any](t *testing.T, res *Result) T {
	t.Helper()
	v, ok := res.Output.(T)
	if !ok {
		t.Fatalf("output is %T, want %T", res.Output, *new(T))
	}
	return v
}

// wantCode checks that err is a *Error with code.
func wantCode(t *testing.T, err error, code string) *Error {
	t.Helper()
	var te *Error
	if !errors.As(err, &te) {
		t.Fatalf("error %v (%T), want a *tools.Error with code %s", err, err, code)
	}
	if te.Code != code {
		t.Fatalf("error code %s (%v), want %s", te.Code, te, code)
	}
	return te
}

// fileChange returns the change of path in cs.
func fileChange(t *testing.T, cs *workspace.ChangeSet, path string) *workspace.FileChange {
	t.Helper()
	if cs == nil {
		t.Fatalf("no change set, want a change to %s", path)
	}
	for _, fc := range cs.Files {
		if fc.Path == path {
			return fc
		}
	}
	t.Fatalf("change set has no change to %s: %+v", path, cs.Files)
	return nil
}

// readDisk reads a workspace file from disk.
func readDisk(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
