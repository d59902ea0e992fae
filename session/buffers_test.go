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
