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
	killUndo(t, u)

	// The user edits a file the undo had to write.
	u.write(t, "f5.txt", "the user's own f5\n")
	return u, files, agent
}

// killUndo starts `agentd undo` (of the newest run), stops it for good
// after 2 of its writes and SIGKILLs it.
func killUndo(t *testing.T, u undoWS) {
	t.Helper()
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

// Issue 38, stepping back after a killed undo: the undo of run 2 is
// killed mid-write and the user then edits f5.txt and writes notes.txt.
// The next command, `agentd runs` (which alone opens no store), says what
// was interrupted and lists run 2 as undone, run 1 not; a second `agentd
// undo` undoes run 1, not run 2 again; the printed way to take the undo
// back, pasted, takes it back and keeps the user's edits made after the
// kill.
func TestKilledUndoIsRecordedForTheNextUndo(t *testing.T) {
	files, agent := map[string]string{"older.txt": "older original\n"}, map[string]string{}
	for i := range 6 {
		name := "f" + itoa(i) + ".txt"
		files[name] = "original " + itoa(i) + "\n"
		agent[name] = "agent " + itoa(i) + "\n"
	}
	u := newUndoWS(t, files)
	run1 := u.run(t, map[string]string{"older.txt": "older agent\n"})
	run2 := u.run(t, agent)
	killUndo(t, u)
	u.write(t, "f5.txt", "the user's own f5\n")
	u.write(t, "notes.txt", "the user's notes\n")

	r := u.agentd(t, "runs")
	t.Logf("agentd runs said:\n%s%s", r.stderr, r.stdout)
	if r.code != 0 {
		t.Fatalf("runs: exit %d", r.code)
	}
	first, _, _ := strings.Cut(r.stderr, "\n")
	if !strings.Contains(first, "agentd runs:") || !strings.Contains(first, "was interrupted; it has now been completed") {
		t.Errorf("agentd runs does not say first what was interrupted: %q", first)
	}
	if !strings.Contains(r.stderr, "run "+run2+" is now recorded as undone (by undo ") || !strings.Contains(r.stderr, "except f5.txt, kept as you left it") {
		t.Errorf("the recovery does not say that run %s is now undone (except the user's f5.txt)", run2)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		switch {
		case strings.HasPrefix(line, run2) && !strings.Contains(line, "undone (1 file kept)"):
			t.Errorf("run 2 is not listed as undone with f5.txt kept: %q", line)
		case strings.HasPrefix(line, run1) && strings.Contains(line, "undone"):
			t.Errorf("run 1 is listed as undone: %q", line)
		}
	}
	_, back, ok := strings.Cut(r.stderr, "to take it back, keeping what you wrote since: ")
	back, _, _ = strings.Cut(back, "\n")
	if !ok || !strings.HasPrefix(back, agentdBin+" undo --restore ") {
		t.Errorf("no pasteable way to take the completed undo back:\n%s", r.stderr)
	}

	// The next undo steps back to run 1.
	r = u.agentd(t, "undo")
	t.Logf("agentd undo said:\n%s%s", r.stdout, r.stderr)
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, run1) {
		t.Errorf("the second undo did not undo run 1 (%s): exit %d", run1, r.code)
	}
	if got := u.read(t, "older.txt"); got != files["older.txt"] {
		t.Errorf("older.txt = %q after the second undo, want run 1 undone, %q", got, files["older.txt"])
	}
	for i := range 5 {
		name := "f" + itoa(i) + ".txt"
		if got := u.read(t, name); got != files[name] {
			t.Errorf("%s = %q after the second undo, want %q", name, got, files[name])
		}
	}

	if t.Failed() {
		return
	}
	// The printed way back, pasted, takes the interrupted undo back.
	res := runCmd(t, exec.Command("sh", "-c", back), nil)
	t.Logf("%s said:\n%s%s", back, res.stdout, res.stderr)
	if res.code != exitOK {
		t.Errorf("the way back failed: exit %d", res.code)
	}
	for i := range 5 {
		name := "f" + itoa(i) + ".txt"
		if got := u.read(t, name); got != agent[name] {
			t.Errorf("%s = %q after taking the undo back, want run 2's %q", name, got, agent[name])
		}
	}
	if got := u.read(t, "f5.txt"); got != "the user's own f5\n" {
		t.Errorf("f5.txt = %q; the user's edit after the kill is gone", got)
	}
	if got := u.read(t, "notes.txt"); got != "the user's notes\n" {
		t.Errorf("notes.txt = %q; the user's file is gone", got)
	}
	if got := u.read(t, "older.txt"); got != files["older.txt"] {
		t.Errorf("older.txt = %q; taking run 2's undo back changed run 1's file", got)
	}
	r = u.agentd(t, "runs")
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, run2) && strings.Contains(line, "undone") {
			t.Errorf("run 2 is still listed as undone after its undo was taken back: %q", line)
		}
	}
	assertNoTemps(t, u.ws)
}
