package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/journal"
)

func runWrite(t *testing.T, s *Session, content string, snapshots bool) string {
	t.Helper()
	cfg := s.Config()
	cfg.Tools, cfg.Approver = tools.Builtin(), approval.AllowAll{}
	if !snapshots {
		cfg.Snapshots = nil
	}
	p, err := plans.ParsePlan("w.json", []byte(`{"title":"w","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":`+quote(content)+`}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	run, err := engine.New(cfg).Start(context.Background(), p, engine.RunOptions{Review: engine.ReviewNone})
	if err != nil {
		t.Fatal(err)
	}
	st, err := run.Wait(context.Background())
	if err != nil || st.Status != engine.RunCompleted {
		t.Fatalf("run: %s %v", st.Status, err)
	}
	return st.RunID
}

func quote(s string) string {
	b := []byte{'"'}
	for _, c := range []byte(s) {
		if c == '\n' {
			b = append(b, '\\', 'n')
			continue
		}
		b = append(b, c)
	}
	return string(append(b, '"'))
}

// Undo steps back one run per call, survives a new session (a restart),
// names a run without snapshots, and undo restore undoes the newest
// restore, making its run the one undo means again.
func TestUndoStepsBackAndSurvivesRestart(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	a := filepath.Join(ws, "a.txt")
	os.WriteFile(a, []byte("a\n"), 0o644)
	read := func() string { b, _ := os.ReadFile(a); return string(b) }
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	first := runWrite(t, s, "first\n", true)
	second := runWrite(t, s, "second\n", true)
	s.Close()

	s, err = Open(ctx, Options{Root: ws, StateDir: state}) // a restart
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r, err := s.UndoRun(ctx, "", UndoOptions{}); err != nil || r.RunID != second || read() != "first\n" {
		t.Fatalf("first undo: %+v %v, a.txt %q", r, err, read())
	}
	if r, err := s.UndoRun(ctx, "", UndoOptions{}); err != nil || r.RunID != first || read() != "a\n" {
		t.Fatalf("second undo: %+v %v, a.txt %q", r, err, read())
	}
	if _, err := s.UndoRun(ctx, "", UndoOptions{}); !errors.Is(err, journal.ErrNothingToUndo) {
		t.Fatalf("third undo: %v, want nothing to undo", err)
	}
	if u, err := s.UndoRestore(ctx, "", UndoOptions{}); err != nil || u.Undid.RunID != first || read() != "first\n" {
		t.Fatalf("undo restore: %+v %v, a.txt %q", u, err, read())
	}
	runs, _ := s.Journal.Runs()
	for _, r := range runs {
		if (r.RunID == first) != (r.Undone == nil) {
			t.Errorf("run %s undone %v (first %s is back, second stays undone)", r.RunID, r.Undone, first)
		}
	}
	noSnap := runWrite(t, s, "third\n", false)
	var ns *journal.NoSnapshotsError
	if _, err := s.UndoRun(ctx, "", UndoOptions{}); !errors.As(err, &ns) || ns.RunID != noSnap || read() != "third\n" {
		t.Fatalf("undo after a run without snapshots: %v, a.txt %q; want it named", err, read())
	}
}

// The policy is validated once and kept in the journal; an unknown rule
// is refused the same way for every front end.
func TestPolicyAndRevoke(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	s, err := Open(ctx, Options{Root: ws, StateDir: state, NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if p, _ := s.Policy(); p.Write != approval.PolicyAsk || p.Command != approval.PolicyAsk || p.Delete != approval.PolicyAsk {
		t.Fatalf("default policy %+v: writes, commands and deletes must ask", p)
	}
	var fe *FieldError
	if _, err := s.SetPolicy([]byte(`{"command":"sometimes"}`)); !errors.As(err, &fe) || fe.Field != "command" {
		t.Fatalf("bad value: %v", err)
	}
	if _, err := s.SetPolicy([]byte(`{"command":"allow"}`)); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, Options{Root: ws, StateDir: state, NoSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if p, _ := s2.Policy(); p.Command != approval.PolicyAllow || p.Write != approval.PolicyAsk {
		t.Fatalf("policy another session reads: %+v", p)
	}
	var re *RuleError
	err = s2.Revoke("rule-9")
	if !errors.As(err, &re) || re.Field != "revoke[0]" || err.Error() != `no remembered rule "rule-9"` || !errors.Is(err, approval.ErrNoSuchRule) {
		t.Fatalf("revoke of an unknown rule: %v", err)
	}
}

// A run that wrote nothing (its step failed before any write) has no
// ledger, and undoing it takes nothing, even with overwrite: it used to be
// taken for a run recorded before undo became a revert and undone by
// restoring its start snapshot over the whole workspace, which took every
// edit the user had made since (found by the random undo test).
func TestUndoOfARunThatWroteNothingKeepsUserEdits(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	a := filepath.Join(ws, "a.txt")
	os.WriteFile(a, []byte("a\n"), 0o644)
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cfg := s.Config()
	cfg.Tools, cfg.Approver = tools.Builtin(), approval.AllowAll{}
	p, err := plans.ParsePlan("w.json", []byte(`{"title":"w","steps":[{"id":"e","tool":"edit_file","args":{"path":"a.txt","edits":[{"oldText":"not there\n","newText":"x\n"}]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	run, err := engine.New(cfg).Start(ctx, p, engine.RunOptions{Review: engine.ReviewNone})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := run.Wait(ctx); st.Status != engine.RunFailed {
		t.Fatalf("run: %s, want failed", st.Status)
	}
	os.WriteFile(a, []byte("a\nuser\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "new.txt"), []byte("user's file\n"), 0o644)
	r, err := s.UndoRun(ctx, "", UndoOptions{OnConflict: gitops.OverwriteConflicts})
	if err != nil || !r.Applied || r.BySnapshot != "" {
		t.Fatalf("undo: %+v %v; want applied, by the (empty) ledger", r, err)
	}
	if b, _ := os.ReadFile(a); string(b) != "a\nuser\n" {
		t.Errorf("a.txt %q: the user's edit was taken", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); err != nil {
		t.Errorf("the user's new.txt was taken: %v", err)
	}
}
