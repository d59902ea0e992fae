package rpc

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/gitops"
)

// TestStateBesideShadowRepository checks that a workspace's server state
// lives in its shadow repository's directory, and that state an earlier
// build kept under a hash of its own is moved there once (and never over
// newer state).
func TestStateBesideShadowRepository(t *testing.T) {
	stateDir, root := t.TempDir(), t.TempDir()
	dir := WorkspaceStateDir(stateDir, root)
	if filepath.Dir(dir) != gitops.StoreDir(stateDir, root) {
		t.Fatalf("state dir %s is not in the shadow repository's directory %s", dir, gitops.StoreDir(stateDir, root))
	}
	legacy := legacyStateDir(stateDir, root)
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(legacy, "plans", "p1.json"), `{"old":true}`)
	p := newPersister(stateDir, root, slog.Default())
	if p.dir != dir {
		t.Fatalf("persister writes to %s, want %s", p.dir, dir)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "plans", "p1.json")); err != nil || string(got) != `{"old":true}` {
		t.Fatalf("legacy state not moved: %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Dir(legacy)); !os.IsNotExist(err) {
		t.Fatalf("the legacy directory is still there: %v", err)
	}
	// Both present: the new state is kept as it is, the old left alone.
	write(filepath.Join(legacy, "plans", "p1.json"), `{"older":true}`)
	newPersister(stateDir, root, slog.Default())
	if got, _ := os.ReadFile(filepath.Join(dir, "plans", "p1.json")); string(got) != `{"old":true}` {
		t.Fatalf("newer state overwritten: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(legacy, "plans", "p1.json")); string(got) != `{"older":true}` {
		t.Fatalf("legacy state touched: %q", got)
	}
}
