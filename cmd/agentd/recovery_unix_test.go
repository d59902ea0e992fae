//go:build unix

package main

import (
	"bufio"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd/agentd/gitops"
)

// Issue 38, crash safety at the terminal: a real `agentd undo` is
// SIGKILLed in the middle of its writes (stopped there by the test hook
// gitops.StopAfterWritesEnv, not timed), the user edits a file the undo
// was writing, and the next command that opens the store (`agentd
// snapshot list`) says first what was interrupted, names the user's file
// as kept, leaves no temporary file, and the way back it prints, pasted,
// puts the workspace back as it was before the undo.
func TestKilledUndoIsSaidByTheNextCommand(t *testing.T) {
	u, files, agent := killedUndo(t)

	r := u.agentd(t, "snapshot", "list")
	if r.code != 0 {
		t.Fatalf("snapshot list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("snapshot list said:\n%s", r.stderr)
	first, _, _ := strings.Cut(r.stderr, "\n")
	if !strings.Contains(first, "agentd snapshot list:") || !strings.Contains(first, "was interrupted; it has now been completed") {
		t.Errorf("the first line does not say what was interrupted: %q", first)
	}
	if !strings.Contains(r.stderr, "kept as you left it: f5.txt") {
		t.Errorf("the user's f5.txt is not named as kept:\n%s", r.stderr)
	}
	if got := u.read(t, "f5.txt"); got != "the user's own f5\n" {
		t.Errorf("f5.txt = %q; the user's edit is gone", got)
	}
	for i := range 5 {
		name := "f" + itoa(i) + ".txt"
		if got := u.read(t, name); got != files[name] {
			t.Errorf("%s = %q after the undo was completed, want %q", name, got, files[name])
		}
	}
	assertNoTemps(t, u.ws)
	// Said once: the command after it says nothing of it.
	if r2 := u.agentd(t, "snapshot", "list"); strings.Contains(r2.stderr, "interrupted") {
		t.Errorf("the recovery is said again:\n%s", r2.stderr)
	}

	// The way back, pasted as printed.
	_, way, ok := strings.Cut(r.stderr, "to go back to it: ")
	way, _, _ = strings.Cut(way, "\n")
	if !ok || !strings.HasPrefix(way, agentdBin+" snapshot restore ") || !strings.Contains(way, "--workspace "+u.ws) || !strings.Contains(way, "--state-dir "+u.state) {
		t.Fatalf("no pasteable way back naming the binary, the snapshot, --workspace and --state-dir:\n%s", r.stderr)
	}
	back := runCmd(t, exec.Command("sh", "-c", way), nil)
	t.Logf("%s said:\n%s%s", way, back.stdout, back.stderr)
	// Exit 3: partly done, the user's f5.txt left alone and named.
	if back.code != exitOK && back.code != exitPartial {
		t.Fatalf("the way back failed: exit %d", back.code)
	}
	for i := range 5 {
		name := "f" + itoa(i) + ".txt"
		if got := u.read(t, name); got != agent[name] {
			t.Errorf("%s = %q after the way back, want it as before the undo, %q", name, got, agent[name])
		}
	}
	if got := u.read(t, "f5.txt"); got != "the user's own f5\n" || !strings.Contains(back.stdout, "f5.txt") {
		t.Errorf("the way back replaced the user's f5.txt (now %q) or did not name it", got)
	}
	assertNoTemps(t, u.ws)
}

// killedUndo runs a plan writing six files, SIGKILLs the `agentd undo`
// of it after 2 of its 6 writes, and then the user edits f5.txt. It
// returns the workspace, the files before the run and as the run wrote
// them.
func killedUndo(t *testing.T) (u undoWS, files, agent map[string]string) {
	t.Helper()
	files, agent = map[string]string{}, map[string]string{}
	for i := range 6 {
		name := "f" + itoa(i) + ".txt"
		files[name] = "original " + itoa(i) + "\n"
		agent[name] = "agent " + itoa(i) + "\n"
	}
	u = newUndoWS(t, files)
	u.run(t, agent)

	// The undo, stopped for good after 2 of its 6 writes, then killed.
	cmd := exec.Command(agentdBin, append([]string{"undo"}, u.flags()...)...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", gitops.StopAfterWritesEnv+"=2")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var said []string
	stopped := false
	for !stopped && sc.Scan() {
		said = append(said, sc.Text())
		stopped = strings.HasPrefix(sc.Text(), gitops.StoppedMarker)
	}
	if !stopped {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("agentd undo did not stop mid-write; it said:\n%s", strings.Join(said, "\n"))
	}
	cmd.Process.Signal(syscall.SIGKILL)
	go io.Copy(io.Discard, stderr)
	cmd.Wait()

	// The user edits a file the undo had to write.
	u.write(t, "f5.txt", "the user's own f5\n")
	return u, files, agent
}

// The same over the protocol: `agentd serve` opening the store after the
// kill tells the editor, as a warning (window/showMessage), with the
// user's file named and the way back.
func TestKilledUndoIsShownToTheEditor(t *testing.T) {
	u, files, _ := killedUndo(t)
	c := startServeProc(t, u.state).lspConn
	initialize(c, u.ws)
	var msg string
	for msg == "" {
		m := c.read()
		if m["method"] != "window/showMessage" {
			continue
		}
		p, _ := m["params"].(map[string]any)
		if text, _ := p["message"].(string); strings.Contains(text, "interrupted") {
			if p["type"] != float64(2) {
				t.Errorf("the recovery is shown as type %v, not a warning (2)", p["type"])
			}
			msg = text
		}
	}
	t.Logf("the editor was shown:\n%s", msg)
	for _, want := range []string{"the undo was interrupted; it has now been completed", "kept as you left it: f5.txt",
		"to go back to it: agentd snapshot restore ", "--workspace " + u.ws, "--state-dir " + u.state} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not say %q", want)
		}
	}
	if got := u.read(t, "f5.txt"); got != "the user's own f5\n" {
		t.Errorf("f5.txt = %q; the user's edit is gone", got)
	}
	if got := u.read(t, "f0.txt"); got != files["f0.txt"] {
		t.Errorf("f0.txt = %q; the undo was not completed", got)
	}
	assertNoTemps(t, u.ws)
}

// assertNoTemps fails if a restore's temporary file is left in root.
func assertNoTemps(t *testing.T, root string) {
	t.Helper()
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".agentd-") && strings.HasSuffix(d.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}
