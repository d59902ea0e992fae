package workspace

import (
	"bytes"
	"testing"
)

// Whose edits a buffer holds: the agent's edits through the editor stay
// the agent's after a save; a keystroke makes the buffer the user's.
func TestBufferOwnership(t *testing.T) {
	w, _ := newWS(t, map[string]string{"f.txt": "one\n"})
	if err := w.OpenOverlay("f.txt", []byte("one\n"), 1); err != nil {
		t.Fatal(err)
	}
	want := []byte("ONE\n")
	cur, v, err := w.BeginAgentEdit("f.txt", want)
	if err != nil || string(cur) != "one\n" || v != 1 {
		t.Fatalf("BeginAgentEdit = %q v%d, %v", cur, v, err)
	}
	// The editor reports the agent's edit while it is in flight.
	byUser, err := w.EditOverlayIn("f.txt", []TextEdit{{rng(0, 0, 0, 3), "ONE"}}, 2, UTF16)
	if err != nil || byUser {
		t.Fatalf("the agent's own edit counted as the user's (%v, %v)", byUser, err)
	}
	w.EndAgentEdit("f.txt", want, true)
	b, _ := w.Buffer("f.txt")
	if !b.AgentUnsaved || b.UserUnsaved || !bytes.Equal(b.AgentText, want) || !b.AgentOnly() {
		t.Fatalf("after the agent's edit: %+v", b)
	}
	if got := w.AgentContents()["f.txt"]; !bytes.Equal(got, want) {
		t.Fatalf("AgentContents = %q", got)
	}
	// Saved: still the agent's text, no longer unsaved.
	if err := w.SaveOverlay("f.txt", nil); err != nil {
		t.Fatal(err)
	}
	b, _ = w.Buffer("f.txt")
	if b.AgentUnsaved || !b.AgentOnly() {
		t.Fatalf("after save: %+v", b)
	}
	// The user types: the buffer is the user's.
	byUser, err = w.EditOverlayIn("f.txt", []TextEdit{{rng(1, 0, 1, 0), "mine\n"}}, 3, UTF16)
	if err != nil || !byUser {
		t.Fatalf("a keystroke did not count as the user's (%v, %v)", byUser, err)
	}
	b, _ = w.Buffer("f.txt")
	if !b.UserUnsaved || b.AgentOnly() || w.AgentContents() != nil {
		t.Fatalf("after typing: %+v, agent contents %q", b, w.AgentContents())
	}

	// An agent edit whose didChange arrives after the answer is still the
	// agent's; one the editor refused leaves nothing behind.
	if err := w.SaveOverlay("f.txt", nil); err != nil {
		t.Fatal(err)
	}
	want2 := []byte("ONE\nmine\nagent\n")
	if _, _, err := w.BeginAgentEdit("f.txt", want2); err != nil {
		t.Fatal(err)
	}
	w.EndAgentEdit("f.txt", want2, true)
	if byUser, _ := w.EditOverlayIn("f.txt", []TextEdit{{rng(2, 0, 2, 0), "agent\n"}}, 4, UTF16); byUser {
		t.Fatal("a late didChange of the agent's edit counted as the user's")
	}
	b, _ = w.Buffer("f.txt")
	if !bytes.Equal(b.Text, want2) || !b.AgentOnly() {
		t.Fatalf("after a late didChange: %+v", b)
	}
	if _, _, err := w.BeginAgentEdit("f.txt", []byte("refused")); err != nil {
		t.Fatal(err)
	}
	w.EndAgentEdit("f.txt", []byte("refused"), false)
	if byUser, _ := w.EditOverlayIn("f.txt", []TextEdit{{nil, "refused"}}, 5, UTF16); !byUser {
		t.Fatal("after a refused agent edit, the same text typed by the user counted as the agent's")
	}
}

// An agent edit into a buffer that holds the user's unsaved edits leaves
// a buffer that is the user's: never recorded or restored as the agent's.
func TestAgentEditOverUnsavedUserEdits(t *testing.T) {
	w, _ := newWS(t, map[string]string{"f.txt": "one\n"})
	if err := w.OpenOverlay("f.txt", []byte("one\n"), 1); err != nil {
		t.Fatal(err)
	}
	if byUser, _ := w.EditOverlayIn("f.txt", []TextEdit{{rng(0, 0, 0, 0), "mine "}}, 2, UTF16); !byUser {
		t.Fatal("typing did not count as the user's")
	}
	want := []byte("mine one\nagent\n")
	if _, _, err := w.BeginAgentEdit("f.txt", want); err != nil {
		t.Fatal(err)
	}
	w.EndAgentEdit("f.txt", want, true)
	b, _ := w.Buffer("f.txt")
	if b.AgentOnly() || !b.UserUnsaved || !b.AgentUnsaved || w.AgentContents() != nil {
		t.Fatalf("mixed buffer counted as the agent's: %+v", b)
	}
	if err := w.SaveOverlay("f.txt", nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := w.Buffer("f.txt"); b.AgentOnly() {
		t.Fatal("after a save the mixed buffer counted as the agent's")
	}
}
