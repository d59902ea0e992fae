package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Undo is a revert (issue 38): these tests hold it at the terminal (the
// built binary, hints pasted) and over the protocol (agentd serve).

// undoWS is a workspace with its state dir and the flags naming both.
type undoWS struct{ ws, state string }

func newUndoWS(t *testing.T, files map[string]string) undoWS {
	u := undoWS{t.TempDir(), t.TempDir()}
	for name, text := range files {
		u.write(t, name, text)
	}
	return u
}

func (u undoWS) flags() []string { return []string{"--workspace", u.ws, "--state-dir", u.state} }
func (u undoWS) path(name string) string {
	return filepath.Join(u.ws, filepath.FromSlash(name))
}
func (u undoWS) write(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(u.path(name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
func (u undoWS) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(u.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return "<absent>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// run runs a plan that writes files (path -> content) and returns its ID.
func (u undoWS) run(t *testing.T, files map[string]string) string {
	t.Helper()
	var steps []string
	for p, c := range files {
		b, _ := json.Marshal(map[string]any{"id": "w" + itoa(len(steps)), "tool": "write_file", "args": map[string]string{"path": p, "content": c}})
		steps = append(steps, string(b))
	}
	r := agentd(t, "", append([]string{"run", writePlan(t, `{"title":"t","steps":[`+strings.Join(steps, ",")+`]}`), "--yes", "--json"}, u.flags()...)...)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	evs := jsonEvents(t, r.stdout)
	st, _ := evs[len(evs)-1]["state"].(map[string]any)
	id, _ := st["runId"].(string)
	if id == "" {
		t.Fatalf("no run ID in %s", r.stdout)
	}
	return id
}

func (u undoWS) agentd(t *testing.T, args ...string) result {
	t.Helper()
	return agentd(t, "", append(args, u.flags()...)...)
}

func itoa(i int) string { return string(rune('0' + i)) }

// Issue point 2: run 1 writes a.txt, the user edits a.txt, run 2 writes
// b.txt; undo, undo: a.txt loses run 1's line and keeps the user's, and
// nothing says "restored".
func TestUndoTwiceKeepsTheUsersEdit(t *testing.T) {
	u := newUndoWS(t, map[string]string{"a.txt": "one\ntwo\nthree\n"})
	u.run(t, map[string]string{"a.txt": "one\nRUN1\nthree\n"})
	u.write(t, "a.txt", "one\nRUN1\nthree\nmine\n")
	u.run(t, map[string]string{"b.txt": "run 2\n"})
	first := u.agentd(t, "undo")
	if first.code != 0 || u.read(t, "b.txt") != "<absent>" || u.read(t, "a.txt") != "one\nRUN1\nthree\nmine\n" {
		t.Fatalf("first undo: exit %d, b.txt %q, a.txt %q\n%s%s", first.code, u.read(t, "b.txt"), u.read(t, "a.txt"), first.stdout, first.stderr)
	}
	second := u.agentd(t, "undo")
	if second.code != 0 || u.read(t, "a.txt") != "one\ntwo\nthree\nmine\n" {
		t.Fatalf("second undo: exit %d, a.txt %q\n%s%s", second.code, u.read(t, "a.txt"), second.stdout, second.stderr)
	}
	if strings.Contains(second.stdout, "restored") || !strings.Contains(second.stdout, "reverted: a.txt") || strings.Contains(second.stdout, "conflict") {
		t.Fatalf("second undo says:\n%s", second.stdout)
	}
	// The undo of that undo keeps an edit made after it.
	u.write(t, "a.txt", "later\none\ntwo\nthree\nmine\n")
	back := u.agentd(t, "undo", "--restore")
	if back.code != 0 || u.read(t, "a.txt") != "later\none\nRUN1\nthree\nmine\n" {
		t.Fatalf("undo of the undo: exit %d, a.txt %q\n%s%s", back.code, u.read(t, "a.txt"), back.stdout, back.stderr)
	}
}

// Issue point 4: undo of an older run reverses that run alone; the newer
// run's file and status stay.
func TestUndoOlderRunAlone(t *testing.T) {
	u := newUndoWS(t, map[string]string{"a.txt": "a\n"})
	run1 := u.run(t, map[string]string{"a.txt": "run 1\n"})
	run2 := u.run(t, map[string]string{"b.txt": "run 2\n"})
	r := u.agentd(t, "undo", run1)
	if r.code != 0 || u.read(t, "a.txt") != "a\n" || u.read(t, "b.txt") != "run 2\n" {
		t.Fatalf("undo %s: exit %d, a.txt %q, b.txt %q\n%s%s", run1, r.code, u.read(t, "a.txt"), u.read(t, "b.txt"), r.stdout, r.stderr)
	}
	runs := u.agentd(t, "runs")
	for _, line := range strings.Split(runs.stdout, "\n") {
		if strings.HasPrefix(line, run2) && strings.Contains(line, "undone") || strings.HasPrefix(line, run1) && !strings.Contains(line, "undone") {
			t.Fatalf("runs after undoing the older run:\n%s", runs.stdout)
		}
	}
	// The next plain undo is run 2's, and then nothing: run 1 stays undone.
	if n := u.agentd(t, "undo"); n.code != 0 || u.read(t, "b.txt") != "<absent>" || u.read(t, "a.txt") != "a\n" {
		t.Fatalf("next undo: exit %d\n%s%s", n.code, n.stdout, n.stderr)
	}
	if n := u.agentd(t, "undo"); n.code != exitFailed || !strings.Contains(n.stderr, "nothing to undo") {
		t.Fatalf("third undo: exit %d\n%s%s", n.code, n.stdout, n.stderr)
	}
}

// Issue points 5 and 6 at the terminal: a conflicting undo changes
// nothing and names only the run's file; each printed command, pasted,
// does what it says.
func TestConflictingUndoHintsWhenPasted(t *testing.T) {
	u := newUndoWS(t, map[string]string{"a.txt": "one\ntwo\nthree\n", "u.txt": "untouched\n"})
	run := u.run(t, map[string]string{"a.txt": "one\nRUN\nthree\n", "c.txt": "created\n"})
	u.write(t, "a.txt", "one\nMINE\nthree\n") // the run's own line
	u.write(t, "u.txt", "edited\n")           // a file the run never touched
	c := u.agentd(t, "undo")
	if c.code != exitFailed || u.read(t, "c.txt") != "created\n" || u.read(t, "a.txt") != "one\nMINE\nthree\n" {
		t.Fatalf("conflicting undo: exit %d, c.txt %q\n%s%s", c.code, u.read(t, "c.txt"), c.stdout, c.stderr)
	}
	if !strings.Contains(c.stdout, "conflict: a.txt") || strings.Contains(c.stdout, "u.txt") {
		t.Fatalf("conflicting undo names:\n%s", c.stdout)
	}
	keep := hintAfter(t, c.stdout, "to undo the rest and keep the conflicting files as they are: ")
	over := hintAfter(t, c.stdout, "to overwrite them too (a safety snapshot keeps your version): ")
	diff := hintAfter(t, c.stdout, "to see the conflicts as a diff: ")
	for _, h := range []string{keep, over, diff} {
		if !strings.Contains(h, " undo "+run+" ") {
			t.Fatalf("hint %q does not name run %s", h, run)
		}
	}
	// Another run meanwhile: the hints still mean the first run.
	u.run(t, map[string]string{"d.txt": "later run\n"})
	if d := paste(t, t.TempDir(), diff); d.code != 0 || !strings.Contains(d.stdout, "+two") || u.read(t, "c.txt") != "created\n" {
		t.Fatalf("pasted %q: exit %d\n%s%s", diff, d.code, d.stdout, d.stderr)
	}
	k := paste(t, t.TempDir(), keep)
	if k.code != 0 || u.read(t, "c.txt") != "<absent>" || u.read(t, "a.txt") != "one\nMINE\nthree\n" || u.read(t, "d.txt") != "later run\n" {
		t.Fatalf("pasted %q: exit %d, c.txt %q\n%s%s", keep, k.code, u.read(t, "c.txt"), k.stdout, k.stderr)
	}
	if runs := u.agentd(t, "runs"); !strings.Contains(runs.stdout, "undone (1 file kept)") {
		t.Fatalf("runs after keeping a.txt:\n%s", runs.stdout)
	}
	back := hintAfter(t, k.stdout, "undo this undo with: ")
	if b := paste(t, t.TempDir(), back); b.code != 0 || u.read(t, "c.txt") != "created\n" {
		t.Fatalf("pasted %q: exit %d\n%s%s", back, b.code, b.stdout, b.stderr)
	}
	o := paste(t, t.TempDir(), over)
	if o.code != 0 || u.read(t, "a.txt") != "one\ntwo\nthree\n" || u.read(t, "c.txt") != "<absent>" || u.read(t, "u.txt") != "edited\n" {
		t.Fatalf("pasted %q: exit %d, a.txt %q\n%s%s", over, o.code, u.read(t, "a.txt"), o.stdout, o.stderr)
	}
}

// The same over the protocol: agentd/undo/run refuses a conflict and
// names it, keep and overwrite do what they say, runId names the run,
// and the undo's wayBack takes it back keeping a later edit.
func TestUndoOverTheProtocol(t *testing.T) {
	u := newUndoWS(t, map[string]string{"a.txt": "one\ntwo\nthree\n", "u.txt": "untouched\n"})
	run1 := u.run(t, map[string]string{"a.txt": "one\nRUN\nthree\n", "c.txt": "created\n"})
	u.write(t, "a.txt", "one\nMINE\nthree\n")
	u.write(t, "u.txt", "edited\n")
	run2 := u.run(t, map[string]string{"b.txt": "run 2\n"})
	srv := startServeProc(t, u.state)
	initialize(srv.lspConn, u.ws)
	result := func(r map[string]any) map[string]any {
		t.Helper()
		res, ok := r["result"].(map[string]any)
		if !ok {
			t.Fatalf("no result: %v", r)
		}
		return res
	}
	r := result(srv.call("agentd/undo/run", map[string]any{"runId": run1}))
	confl, _ := r["conflicts"].([]any)
	if r["applied"] != false || len(confl) != 1 || confl[0].(map[string]any)["path"] != "a.txt" || u.read(t, "c.txt") != "created\n" {
		t.Fatalf("conflicting undo: %v", r)
	}
	if d, _ := confl[0].(map[string]any)["diff"].(string); !strings.Contains(d, "+two") {
		t.Fatalf("conflict's diff %q", d)
	}
	r = result(srv.call("agentd/undo/run", map[string]any{"runId": run1, "onConflict": "keep"}))
	if r["applied"] != true || u.read(t, "c.txt") != "<absent>" || u.read(t, "a.txt") != "one\nMINE\nthree\n" || u.read(t, "b.txt") != "run 2\n" {
		t.Fatalf("keep: %v", r)
	}
	way, _ := r["wayBack"].(map[string]any)
	if way["method"] != "agentd/undo/restore" {
		t.Fatalf("wayBack %v", r["wayBack"])
	}
	u.write(t, "u.txt", "edited again\n")
	b := result(srv.call(way["method"].(string), way["params"]))
	if b["applied"] != true || u.read(t, "c.txt") != "created\n" || u.read(t, "u.txt") != "edited again\n" {
		t.Fatalf("way back: %v", b)
	}
	r = result(srv.call("agentd/undo/run", map[string]any{"runId": run1, "overwrite": true}))
	if r["applied"] != true || u.read(t, "a.txt") != "one\ntwo\nthree\n" || u.read(t, "b.txt") != "run 2\n" {
		t.Fatalf("overwrite: %v, a.txt %q", r, u.read(t, "a.txt"))
	}
	// Then the plain undo means run 2.
	r = result(srv.call("agentd/undo/run", map[string]any{}))
	if r["runId"] != run2 || u.read(t, "b.txt") != "<absent>" {
		t.Fatalf("plain undo: %v", r)
	}
	if e := srv.call("agentd/undo/run", map[string]any{"onConflict": "sometimes"}); e["error"] == nil {
		t.Fatalf("a bad onConflict: %v", e)
	}
}

// A line the user types into a file while an earlier step's review
// prompt is open is the user's, even when a later command step of the
// same run rewrites that file: undo takes back the command's line and
// the agent's edit, and keeps the user's (issue 38, point 1, for
// commands; the random undo test found it).
func TestUndoKeepsALineTypedBeforeACommandRewroteTheFile(t *testing.T) {
	u := newUndoWS(t, map[string]string{"a.txt": "one\n", "notes.txt": "n1\nn2\n"})
	p := writePlan(t, `{"steps":[
	  {"id":"edit","tool":"edit_file","args":{"path":"a.txt","edits":[{"oldText":"one","newText":"ONE"}]}},
	  {"id":"cmd","tool":"run_command","args":{"command":"echo CMD >> notes.txt"},"dependsOn":["edit"]}
	]}`)
	cmd := exec.Command(agentdBin, append([]string{"run", p, "--review", "before"}, u.flags()...)...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var out liveOutput
	cmd.Stdout, cmd.Stderr = &out, &out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "apply this change?", 1)
	u.write(t, "notes.txt", "n1\nUSER\nn2\n") // typed while the prompt waits
	// y: apply the edit; y: run the command.
	if _, err := stdin.Write([]byte("y\ny\n")); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agentd run: %v\n%s", err, out.String())
	}
	if got := u.read(t, "notes.txt"); got != "n1\nUSER\nn2\nCMD\n" {
		t.Fatalf("after the run notes.txt holds %q\n%s", got, out.String())
	}
	// The summary names the file the command changed beside the edit's.
	if _, files, _ := strings.Cut(out.String(), "## Files changed"); !strings.Contains(files, "`notes.txt`") || !strings.Contains(files, "`a.txt`") {
		t.Fatalf("the summary's files changed do not name a.txt and notes.txt:\n%s", out.String())
	}
	r := u.agentd(t, "undo")
	if r.code != 0 {
		t.Fatalf("undo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if a, n := u.read(t, "a.txt"), u.read(t, "notes.txt"); a != "one\n" || n != "n1\nUSER\nn2\n" {
		t.Fatalf("after undo a.txt %q, notes.txt %q (want the agent's edit and the command's line gone, the user's line kept)\n%s", a, n, r.stdout)
	}
}

// agentd undo RUN of a run undone already changes nothing and says so,
// with the way back to its changes (the undo of its undo), which works
// when pasted; it never reverts the run a second time.
func TestUndoOfAnUndoneRunIsRefusedWithTheWayBack(t *testing.T) {
	u := newUndoWS(t, map[string]string{"a.txt": "one\n"})
	id := u.run(t, map[string]string{"a.txt": "ONE\n"})
	if r := u.agentd(t, "undo", id); r.code != 0 || u.read(t, "a.txt") != "one\n" {
		t.Fatalf("undo: exit %d, a.txt %q\n%s%s", r.code, u.read(t, "a.txt"), r.stdout, r.stderr)
	}
	u.write(t, "a.txt", "one\nmine\n")
	again := u.agentd(t, "undo", id)
	if again.code == 0 || !strings.Contains(again.stderr, "run "+id+" is undone already") || u.read(t, "a.txt") != "one\nmine\n" {
		t.Fatalf("undo of an undone run: exit %d, a.txt %q\n%s%s", again.code, u.read(t, "a.txt"), again.stdout, again.stderr)
	}
	back := paste(t, t.TempDir(), hintAfter(t, again.stderr, "undo its undo with: "))
	if back.code != 0 || u.read(t, "a.txt") != "ONE\nmine\n" {
		t.Fatalf("the pasted way back: exit %d, a.txt %q\n%s%s", back.code, u.read(t, "a.txt"), back.stdout, back.stderr)
	}
}
