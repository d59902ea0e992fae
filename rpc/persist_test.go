package rpc

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// TestStateBesideShadowRepository checks that a workspace's server state
// lives in its journal beside the shadow repository, and that state an
// earlier build kept elsewhere is moved there once (and never over newer
// state).
func TestStateBesideShadowRepository(t *testing.T) {
	stateDir, root := t.TempDir(), t.TempDir()
	dir := engine.JournalDir(stateDir, root)
	if filepath.Dir(dir) != gitops.StoreDir(stateDir, root) {
		t.Fatalf("journal %s is not in the shadow repository's directory %s", dir, gitops.StoreDir(stateDir, root))
	}
	sum := sha256.Sum256([]byte(root))
	legacy := filepath.Join(stateDir, "workspaces", hex.EncodeToString(sum[:8]), "rpc")
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
	p, err := newPersister(stateDir, root, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if p.j.Dir() != dir {
		t.Fatalf("persister writes to %s, want %s", p.j.Dir(), dir)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "plans", "p1.json")); err != nil || string(got) != `{"old":true}` {
		t.Fatalf("legacy state not moved: %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Dir(legacy)); !os.IsNotExist(err) {
		t.Fatalf("the legacy directory is still there: %v", err)
	}
	// Both present: the new state is kept as it is, the old left alone.
	write(filepath.Join(legacy, "plans", "p1.json"), `{"older":true}`)
	if _, err := newPersister(stateDir, root, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "plans", "p1.json")); string(got) != `{"old":true}` {
		t.Fatalf("newer state overwritten: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(legacy, "plans", "p1.json")); string(got) != `{"older":true}` {
		t.Fatalf("legacy state touched: %q", got)
	}
}

// A save that fails is an error naming the file, and the plan is not
// acknowledged.
func TestFailedSaveNotAcknowledged(t *testing.T) {
	stateDir, root := t.TempDir(), t.TempDir()
	p, err := newPersister(stateDir, root, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	// A file where the plans directory should be: every save fails.
	if err := os.WriteFile(filepath.Join(p.j.Dir(), "plans"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := NewServer(Options{})
	s.persist = p
	s.plans = &planStore{session.NewPlanStore(p.j, nil)} // the session's plan store, saving in the journal
	pl := &plans.Plan{Title: "t", Steps: []*plans.Step{{ID: "a", Tool: "read_file"}}}
	if _, err := s.storePlan(pl, "load", "loaded"); err == nil {
		t.Fatal("storePlan acknowledged a plan it could not save")
	} else if want := filepath.Join(p.j.Dir(), "plans"); !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name %s", err, want)
	}
	if _, err := s.plans.get(pl.ID); err == nil {
		t.Fatal("the unsaved plan is listed")
	}
}

// TestFailedChangeSaveIsShown: a review decision that cannot be journaled
// is not dropped silently; the editor is warned, with the change's id.
func TestFailedChangeSaveIsShown(t *testing.T) {
	ed := startEditor(t, Options{}, nil)
	ed.initialize(t.TempDir(), nil)
	s := ed.srv
	if s.persist == nil {
		t.Fatal("no journal after initialize")
	}
	// A file where the changes directory should be: every save fails.
	if err := os.WriteFile(filepath.Join(s.persist.j.Dir(), "changes"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := review.New(&workspace.ChangeSet{ID: "chg-save-fails"}, engine.ReviewBefore)
	s.changes.put(c) // the book records it in the journal
	n, _ := ed.waitNote(0, func(n note) bool { return n.Method == "window/showMessage" })
	if !strings.Contains(string(n.Params), "chg-save-fails") || !strings.Contains(string(n.Params), "could not be saved") {
		t.Fatalf("warning does not name the change: %s", n.Params)
	}
}

// newPersister opens the journal of the workspace at root (its real path)
// the way the server's session does.
func newPersister(stateDir, root string, log *slog.Logger) (*persister, error) {
	j, err := session.OpenJournal(stateDir, root, log)
	if err != nil {
		return nil, err
	}
	return &persister{j: j, log: log}, nil
}
