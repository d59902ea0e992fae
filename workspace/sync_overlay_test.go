package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSyncOverlayKeepsOwnership checks the ownership rule for clients that
// report a buffer's whole text (ACP): the agent's write through the client
// is the agent's, a read that differs from the buffer and the disk is the
// user's unsaved edit, and a read equal to the disk is a save. Opening the
// buffer anew (OpenOverlay) for each of these lost whose edits it held, so
// neither snapshots (AgentContents) nor restore protection (UserUnsaved)
// saw them (issue 25).
func TestSyncOverlayKeepsOwnership(t *testing.T) {
	w, root := newWS(t, map[string]string{"a.go": "disk\n", "b.go": "b\n"})

	// The agent writes a.go through the client.
	if err := w.SyncOverlay("a.go", []byte("agent\n"), 1, true); err != nil {
		t.Fatal(err)
	}
	b, _ := w.Buffer("a.go")
	if !b.AgentUnsaved || b.UserUnsaved || string(b.AgentText) != "agent\n" {
		t.Fatalf("after the agent's write: %+v, want the agent's unsaved text", b)
	}
	if got := w.AgentContents()["a.go"]; string(got) != "agent\n" {
		t.Fatalf("AgentContents[a.go] = %q, want the agent's text", got)
	}
	// Reading it back unchanged changes nothing.
	if err := w.SyncOverlay("a.go", []byte("agent\n"), 2, false); err != nil {
		t.Fatal(err)
	}
	if b, _ := w.Buffer("a.go"); !b.AgentOnly() || b.UserUnsaved {
		t.Fatalf("an unchanged read changed the owner: %+v", b)
	}
	// The user edits the buffer in the editor; the next read sees it.
	if err := w.SyncOverlay("a.go", []byte("agent\nuser\n"), 3, false); err != nil {
		t.Fatal(err)
	}
	b, _ = w.Buffer("a.go")
	if !b.UserUnsaved || b.AgentOnly() {
		t.Fatalf("after the user's edit: %+v, want the user's unsaved edit", b)
	}
	if _, ok := w.AgentContents()["a.go"]; ok {
		t.Fatal("a buffer the user edited is still recorded as the agent's")
	}
	// The user saves: the disk holds the buffer's text.
	if err := os.WriteFile(filepath.Join(root, "a.go"), []byte("agent\nuser2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.SyncOverlay("a.go", []byte("agent\nuser2\n"), 4, false); err != nil {
		t.Fatal(err)
	}
	if b, _ := w.Buffer("a.go"); b.UserUnsaved || b.AgentUnsaved || b.AgentOnly() {
		t.Fatalf("after the user's save: %+v, want nothing unsaved and not the agent's", b)
	}

	// A buffer first read with text the disk does not hold is the user's
	// unsaved edit; one that matches the disk is clean.
	if err := w.SyncOverlay("b.go", []byte("b edited\n"), 1, false); err != nil {
		t.Fatal(err)
	}
	if b, _ := w.Buffer("b.go"); !b.UserUnsaved {
		t.Fatalf("a first read with unsaved text: %+v, want the user's", b)
	}
	w.CloseOverlay("b.go")
	if err := w.SyncOverlay("b.go", []byte("b\n"), 1, false); err != nil {
		t.Fatal(err)
	}
	if b, _ := w.Buffer("b.go"); b.UserUnsaved || b.AgentUnsaved {
		t.Fatalf("a first read equal to the disk: %+v, want clean", b)
	}

	// An agent's write the client saved is the agent's, and saved.
	if err := os.WriteFile(filepath.Join(root, "c.go"), []byte("saved by the client\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.SyncOverlay("c.go", []byte("saved by the client\n"), 1, true); err != nil {
		t.Fatal(err)
	}
	if b, _ := w.Buffer("c.go"); b.AgentUnsaved || b.UserUnsaved || !b.AgentOnly() {
		t.Fatalf("an agent's write the client saved: %+v, want the agent's, nothing unsaved", b)
	}

	// The agent writes over the user's unsaved edit: the buffer holds both
	// and counts as the user's, as with an editor (EndAgentEdit).
	if err := w.SyncOverlay("b.go", []byte("b mine\n"), 2, false); err != nil {
		t.Fatal(err)
	}
	if err := w.SyncOverlay("b.go", []byte("b mine\nagent\n"), 3, true); err != nil {
		t.Fatal(err)
	}
	if b, _ := w.Buffer("b.go"); !b.UserUnsaved || !b.AgentUnsaved || b.AgentOnly() {
		t.Fatalf("the agent's write over the user's edit: %+v, want both unsaved, the user's", b)
	}
}
