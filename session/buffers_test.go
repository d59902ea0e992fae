package session

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

// TestRestoreAroundBuffers: the core's buffer rule, as every front end gets
// it. A file whose open buffer holds the user's unsaved edits is left alone
// (on disk too) and reported; the rest is restored, and only clean buffers
// of restored files are offered the restored text.
func TestRestoreAroundBuffers(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("typed.txt", "v1\n")
	write("clean.txt", "v1\n")
	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := gitops.Open(t.Context(), ws, gitops.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s0, err := store.Snapshot(t.Context(), gitops.SnapshotOptions{RunID: "r1", Label: "run start"})
	if err != nil {
		t.Fatal(err)
	}
	write("typed.txt", "v2\n")
	write("clean.txt", "v2\n")
	if _, err := store.Snapshot(t.Context(), gitops.SnapshotOptions{RunID: "r1", StepID: "edit", Label: "after edit"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"typed.txt", "clean.txt"} {
		if err := ws.OpenOverlay(name, []byte("v2\n"), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := ws.EditOverlay("typed.txt", []workspace.TextEdit{{Text: "v2 and the user's typing\n"}}, 2); err != nil {
		t.Fatal(err)
	}

	res, extra, err := RestoreAroundBuffers(t.Context(), store, ws, s0.ID, gitops.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(extra) != 1 || extra[0].Path != "typed.txt" || extra[0].Message != UnsavedEditsMessage {
		t.Fatalf("extra conflicts %+v, want typed.txt with unsaved edits", extra)
	}
	for name, want := range map[string]string{"typed.txt": "v2\n", "clean.txt": "v1\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("%s on disk is %q, want %q", name, b, want)
		}
	}
	bufs := BuffersToRefresh(ws, res, nil)
	if len(bufs) != 1 || bufs[0].Path != "clean.txt" {
		t.Fatalf("buffers to refresh %+v, want clean.txt only", bufs)
	}
}

// An undo never writes under a buffer holding the user's unsaved edits
// (issue 38, point 3): a plain undo changes nothing and names the file
// "unsaved in the editor"; keeping conflicts undoes the rest and leaves
// that file as it is, named, and the run is recorded undone with it kept.
func TestUndoAroundUnsavedBuffers(t *testing.T) {
	ctx := t.Context()
	ws, state := t.TempDir(), t.TempDir()
	a := filepath.Join(ws, "a.txt")
	os.WriteFile(a, []byte("a\n"), 0o644)
	s, err := Open(ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := runWrite(t, s, "agent\n", true)
	if err := s.WS.OpenOverlay("a.txt", []byte("agent\n"), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.WS.EditOverlay("a.txt", []workspace.TextEdit{{Text: "agent and the user's typing\n"}}, 2); err != nil {
		t.Fatal(err)
	}
	res, err := s.UndoRun(ctx, "", UndoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Applied || len(res.Conflicts) != 1 || res.Conflicts[0].Path != "a.txt" || res.Conflicts[0].Reason != UnsavedUndoReason {
		t.Fatalf("undo under an unsaved buffer: %+v", res.UndoResult)
	}
	if b, _ := os.ReadFile(a); string(b) != "agent\n" || s.Journal.UndoneOf(run) != nil {
		t.Fatalf("a refused undo changed something: a.txt %q, undone %v", b, s.Journal.UndoneOf(run))
	}
	res, err = s.UndoRun(ctx, run, UndoOptions{OnConflict: gitops.KeepConflicts})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Applied || len(res.Kept) != 1 || res.Kept[0] != "a.txt" {
		t.Fatalf("undo keeping conflicts: %+v", res.UndoResult)
	}
	if b, _ := os.ReadFile(a); string(b) != "agent\n" {
		t.Fatalf("a.txt written under the user's buffer: %q", b)
	}
	if u := s.Journal.UndoneOf(run); u == nil || len(u.Kept) != 1 {
		t.Fatalf("run recorded undone: %+v, want a.txt kept", u)
	}
}
