package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hintAfter returns the command printed after prefix ("Undo the whole
// run: "), failing when there is none.
func hintAfter(t *testing.T, out, prefix string) string {
	t.Helper()
	_, rest, ok := strings.Cut(out, prefix)
	if !ok {
		t.Fatalf("no %q hint in:\n%s", prefix, out)
	}
	line, _, _ := strings.Cut(rest, "\n")
	return strings.TrimSpace(line)
}

// paste runs a printed hint as a user pasting it would: sh -c, from dir.
func paste(t *testing.T, dir, hint string, env ...string) result {
	t.Helper()
	cmd := exec.Command("sh", "-c", hint)
	cmd.Dir = dir
	return runCmd(t, cmd, env)
}

// TestHintsWorkWhenPasted runs a plan in a workspace from another folder,
// with a relative --state-dir, then pastes every hint printed (the run's
// undo, the undo's own undo, restore's "undo with", "to restore anyway")
// into sh -c from yet other folders, and checks each does what it says.
func TestHintsWorkWhenPasted(t *testing.T) {
	top := t.TempDir()
	ws := filepath.Join(top, "my ws") // a space: the hints must quote
	if err := os.Rename(demoCopy(t), ws); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a", "b", "c"} {
		os.Mkdir(filepath.Join(top, d), 0o755)
	}
	greet := filepath.Join(ws, "greet", "greet.go")
	before := readFile(t, greet)

	r := agentdIn(t, filepath.Join(top, "a"), agentdBin, nil, "run", plan(t, "refactor.json"), "--workspace", "../my ws", "--yes", "--state-dir", "../state")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	after := readFile(t, greet)
	undo := hintAfter(t, r.stdout, "Undo the whole run: ")
	if !strings.HasPrefix(undo, agentdBin+" undo ") || !strings.Contains(undo, "--state-dir "+filepath.Join(top, "state")) {
		t.Errorf("undo hint %q: want the binary's absolute path and the absolute state dir", undo)
	}

	u := paste(t, filepath.Join(top, "b"), undo)
	if u.code != 0 || readFile(t, greet) != before {
		t.Fatalf("pasted %q: exit %d, greet.go restored: %v\n%s%s", undo, u.code, readFile(t, greet) == before, u.stdout, u.stderr)
	}
	// Each undo prints its own way back, naming what it undoes: the undo
	// of the run by its ID, then the run again by its ID.
	redo := hintAfter(t, u.stdout, "undo this undo with: ")
	rr := paste(t, filepath.Join(top, "c"), redo)
	if rr.code != 0 || readFile(t, greet) != after {
		t.Fatalf("pasted %q: exit %d\n%s%s", redo, rr.code, rr.stdout, rr.stderr)
	}
	again := hintAfter(t, rr.stdout, "undo this undo with: ")
	ar := paste(t, top, again)
	if ar.code != 0 || readFile(t, greet) != before {
		t.Fatalf("pasted %q: greet.go not back to before the run\n%s%s", again, ar.stdout, ar.stderr)
	}
	// The undo just done names its own undo; pasting it re-applies the run.
	if redo2 := hintAfter(t, ar.stdout, "undo this undo with: "); paste(t, top, redo2).code != 0 || readFile(t, greet) != after {
		t.Fatalf("re-applying the run with %q: greet.go %q", redo2, readFile(t, greet))
	}

	// A user's edit of a line the run wrote is a conflict: the undo
	// changes nothing (exit 1), names it and the commands that decide
	// it, each naming the run; pasted, each does what it says. (An edit
	// elsewhere in the file is no conflict: the undo keeps it, see
	// TestUndoKeepsUserLinesAtTheTerminal.)
	mainGo := filepath.Join(ws, "main.go")
	os.WriteFile(mainGo, []byte(strings.Replace(readFile(t, mainGo), "greet.Greet(*name)", "greet.Greet(*name) // mine", 1)), 0o644)
	c := paste(t, filepath.Join(top, "b"), undo)
	if c.code != exitFailed || !strings.Contains(c.stdout, "conflict: main.go") || !strings.Contains(readFile(t, mainGo), "// mine") || readFile(t, greet) != after {
		t.Fatalf("undo over a user's edit: exit %d, greet.go undone %v\n%s%s", c.code, readFile(t, greet) != after, c.stdout, c.stderr)
	}
	if d := paste(t, top, hintAfter(t, c.stdout, "to see the conflicts as a diff: ")); d.code != 0 || readFile(t, greet) != after || !strings.Contains(d.stdout, "main.go") {
		t.Fatalf("the diff hint: exit %d, greet.go undone %v\n%s%s", d.code, readFile(t, greet) != after, d.stdout, d.stderr)
	}
	keep := hintAfter(t, c.stdout, "to undo the rest and keep the conflicting files as they are: ")
	if k := paste(t, filepath.Join(top, "c"), keep); k.code != 0 || readFile(t, greet) != before || !strings.Contains(readFile(t, mainGo), "// mine") {
		t.Fatalf("pasted %q: exit %d, greet.go undone %v\n%s%s", keep, k.code, readFile(t, greet) == before, k.stdout, k.stderr)
	}
	if runs := agentdIn(t, top, agentdBin, nil, "runs", "--workspace", ws, "--state-dir", filepath.Join(top, "state")); !strings.Contains(runs.stdout, "undone (1 file kept)") {
		t.Fatalf("runs after an undo that kept main.go:\n%s%s", runs.stdout, runs.stderr)
	}
	too := hintAfter(t, c.stdout, "to overwrite them too (a safety snapshot keeps your version): ")
	if o := paste(t, filepath.Join(top, "c"), too); o.code != 0 || strings.Contains(readFile(t, mainGo), "// mine") {
		t.Fatalf("pasted %q: exit %d\n%s%s", too, o.code, o.stdout, o.stderr)
	}

	// Only manual snapshots: restore cannot tell the user's edits from
	// anyone's and asks for --overwrite, with a command that works.
	ws2 := filepath.Join(top, "ws2")
	os.Mkdir(ws2, 0o755)
	os.WriteFile(filepath.Join(ws2, "f.txt"), []byte("one\n"), 0o644)
	cr := agentdIn(t, filepath.Join(top, "a"), agentdBin, nil, "snapshot", "create", "--workspace", ws2, "--state-dir", "../state", "--json")
	id := hintAfter(t, cr.stdout, `"id": "`)[:12]
	os.WriteFile(filepath.Join(ws2, "f.txt"), []byte("two\n"), 0o644)
	rs := agentdIn(t, filepath.Join(top, "a"), agentdBin, nil, "snapshot", "restore", id, "--workspace", ws2, "--state-dir", "../state")
	// A library's message names a command too ('agentd snapshot list').
	sh := agentdIn(t, filepath.Join(top, "a"), agentdBin, nil, "snapshot", "show", "0123abcd", "--workspace", ws2, "--state-dir", "../state")
	list, _, _ := strings.Cut(hintAfter(t, sh.stderr, "run '"), "'")
	if l := paste(t, filepath.Join(top, "b"), list); sh.code != exitFailed || l.code != 0 || !strings.Contains(l.stdout, id) {
		t.Fatalf("show of an unknown id: exit %d\n%s\npasted %q: exit %d\n%s%s", sh.code, sh.stderr, list, l.code, l.stdout, l.stderr)
	}
	anyway := hintAfter(t, rs.stderr, "to restore anyway: ")
	if o := paste(t, filepath.Join(top, "b"), anyway); o.code != 0 || readFile(t, filepath.Join(ws2, "f.txt")) != "one\n" {
		t.Fatalf("pasted %q: exit %d\n%s%s", anyway, o.code, o.stdout, o.stderr)
	}
}

// TestHintsFromInsideTheWorkspace: a run started inside its workspace,
// without --workspace, prints hints that work pasted from another folder
// (a second terminal): they name the workspace anyway.
func TestHintsFromInsideTheWorkspace(t *testing.T) {
	ws := demoCopy(t)
	p := filepath.Join(ws, "plan.json")
	os.WriteFile(p, []byte(`{"steps":[{"id":"w","tool":"write_file","args":{"path":"new.txt","content":"x\n"}}]}`), 0o644)
	state := filepath.Join(t.TempDir(), "state")
	r := agentdIn(t, ws, agentdBin, nil, "run", "plan.json", "--yes", "--state-dir", state)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	undo := hintAfter(t, r.stdout, "Undo the whole run: ")
	if !strings.Contains(undo, "--workspace "+ws) {
		t.Errorf("undo hint %q does not name the workspace", undo)
	}
	u := paste(t, t.TempDir(), undo)
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); u.code != 0 || err == nil {
		t.Fatalf("pasted %q elsewhere: exit %d, new.txt still there: %v\n%s%s", undo, u.code, err == nil, u.stdout, u.stderr)
	}
	redo := hintAfter(t, u.stdout, "undo with: ")
	if rr := paste(t, t.TempDir(), redo); rr.code != 0 || readFile(t, filepath.Join(ws, "new.txt")) != "x\n" {
		t.Fatalf("pasted %q elsewhere: exit %d\n%s%s", redo, rr.code, rr.stdout, rr.stderr)
	}
}

// TestHintNamesBinaryAsInvoked: run through $PATH, the hint says the bare
// name; run as ./agentd, the absolute path. Both work when pasted.
func TestHintNamesBinaryAsInvoked(t *testing.T) {
	binDir := filepath.Dir(agentdBin)
	path := "PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, tc := range []struct {
		name, dir, bin, want string
	}{
		{"on PATH", t.TempDir(), "agentd", "agentd undo "},
		{"relative", binDir, "./agentd", agentdBin + " undo "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			p := writePlan(t, `{"steps":[{"id":"w","tool":"write_file","args":{"path":"new.txt","content":"x\n"}}]}`)
			r := agentdIn(t, tc.dir, tc.bin, []string{path}, "run", p, "--workspace", ws, "--yes", "--state-dir", filepath.Join(ws, "..", "state"))
			if r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			undo := hintAfter(t, r.stdout, "Undo the whole run: ")
			if !strings.HasPrefix(undo, tc.want) {
				t.Errorf("hint %q, want it to start with %q", undo, tc.want)
			}
			if u := paste(t, t.TempDir(), undo, path); u.code != 0 {
				t.Fatalf("pasted %q: exit %d\n%s%s", undo, u.code, u.stdout, u.stderr)
			}
			if _, err := os.Stat(filepath.Join(ws, "new.txt")); !os.IsNotExist(err) {
				t.Errorf("new.txt survives the pasted undo (err %v)", err)
			}
		})
	}
}

// TestUndoLastRunAndRuns: agentd undo without RUN undoes the newest run
// not yet undone, and again the run before (a dry run changed nothing and
// is passed over); agentd runs shows them undone; agentd undo --restore
// undoes the last undo; a run without snapshots is named; an unknown run
// and a workspace without runs say what to do.
func TestUndoLastRunAndRuns(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	a := filepath.Join(ws, "a.txt")
	os.WriteFile(a, []byte("a\n"), 0o644)
	flags := []string{"--workspace", ws, "--state-dir", state}
	if r := agentd(t, "", append([]string{"undo"}, flags...)...); r.code != exitFailed || !strings.Contains(r.stderr, "nothing to undo") {
		t.Fatalf("undo without runs: exit %d\n%s", r.code, r.stderr)
	}
	first := writePlan(t, `{"title":"first","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"first\n"}}]}`)
	second := writePlan(t, `{"title":"second","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"second\n"}}]}`)
	for _, p := range []string{first, second} {
		if r := agentd(t, "", append([]string{"run", p, "--yes"}, flags...)...); r.code != 0 {
			t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	}
	if r := agentd(t, "", append([]string{"run", first, "--yes", "--dry-run"}, flags...)...); r.code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	runs := agentd(t, "", append([]string{"runs"}, flags...)...)
	if runs.code != 0 || strings.Count(runs.stdout, "completed") != 3 || !strings.Contains(runs.stdout, "second") {
		t.Fatalf("runs: exit %d\n%s%s", runs.code, runs.stdout, runs.stderr)
	}
	undo := func(want string, extra ...string) result {
		t.Helper()
		u := agentd(t, "", append(append([]string{"undo"}, extra...), flags...)...)
		if u.code != 0 || readFile(t, a) != want {
			t.Fatalf("undo %v: exit %d, a.txt %q, want %q\n%s%s", extra, u.code, readFile(t, a), want, u.stdout, u.stderr)
		}
		return u
	}
	if u := undo("first\n"); !strings.Contains(u.stdout, "undid run") {
		t.Fatalf("undo says: %s", u.stdout)
	}
	undo("a\n") // the run before
	if r := agentd(t, "", append([]string{"undo"}, flags...)...); r.code != exitFailed || !strings.Contains(r.stderr, "nothing to undo") {
		t.Fatalf("a third undo: exit %d\n%s", r.code, r.stderr)
	}
	if runs := agentd(t, "", append([]string{"runs"}, flags...)...); strings.Count(runs.stdout, "completed, undone") != 2 {
		t.Fatalf("runs after two undos:\n%s", runs.stdout)
	}
	undo("first\n", "--restore") // the undo of the first run, undone
	if runs := agentd(t, "", append([]string{"runs"}, flags...)...); strings.Count(runs.stdout, "completed, undone") != 1 {
		t.Fatalf("runs after undo --restore:\n%s", runs.stdout)
	}
	undo("a\n") // the first run is the one undo means again
	if r := agentd(t, "", append([]string{"undo", "no-such-run"}, flags...)...); r.code != exitFailed || !strings.Contains(r.stderr, "runs --workspace") {
		t.Fatalf("undo of an unknown run: exit %d\n%s", r.code, r.stderr)
	}
	// A run that changed the workspace without snapshots is named, not
	// skipped over.
	if r := agentd(t, "", append([]string{"run", second, "--yes", "--no-snapshots"}, flags...)...); r.code != 0 {
		t.Fatalf("run --no-snapshots: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := agentd(t, "", append([]string{"undo"}, flags...)...); r.code != exitFailed || !strings.Contains(r.stderr, "took no snapshots") || readFile(t, a) != "second\n" {
		t.Fatalf("undo after a run without snapshots: exit %d\n%s", r.code, r.stderr)
	}
}

// TestRunWorkspaceDefault: without --workspace, the current folder is used
// only when it holds the plan (at its top or one folder down); otherwise agentd says which folder it would
// use and how to choose, and exits 2 without touching anything.
func TestRunWorkspaceDefault(t *testing.T) {
	state := t.TempDir()
	body := `{"steps":[{"id":"w","tool":"write_file","args":{"path":"made.txt","content":"x\n"}}]}`
	proj := t.TempDir()
	os.MkdirAll(filepath.Join(proj, "plans"), 0o755)
	inside := filepath.Join(proj, "plans", "p.json")
	os.WriteFile(inside, []byte(body), 0o644)
	if r := agentdIn(t, proj, agentdBin, nil, "run", "plans/p.json", "--yes", "--state-dir", state); r.code != 0 {
		t.Fatalf("plan inside the current folder: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(proj, "made.txt")); err != nil {
		t.Fatalf("the run did not use the current folder: %v", err)
	}

	// Deeper down (as the agentd checkout's examples/plans/refactor.json,
	// written for examples/demo) the plan is not taken as the current
	// folder's: refused off a terminal, nothing written.
	os.MkdirAll(filepath.Join(proj, "examples", "plans"), 0o755)
	os.WriteFile(filepath.Join(proj, "examples", "plans", "deep.json"), []byte(strings.ReplaceAll(body, "made.txt", "deep.txt")), 0o644)
	if r := agentdIn(t, proj, agentdBin, nil, "run", "examples/plans/deep.json", "--yes", "--state-dir", state); r.code != exitUsage ||
		!strings.Contains(r.stderr, "or a folder just below it") || !strings.Contains(r.stderr, "--workspace") {
		t.Fatalf("plan two folders down: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(proj, "deep.txt")); !os.IsNotExist(err) {
		t.Fatalf("the refused run wrote into the current folder")
	}

	elsewhere := t.TempDir()
	outside := writePlan(t, body)
	r := agentdIn(t, elsewhere, agentdBin, nil, "run", outside, "--yes", "--state-dir", state)
	if r.code != exitUsage || !strings.Contains(r.stderr, elsewhere) || !strings.Contains(r.stderr, "--workspace") {
		t.Fatalf("plan outside the current folder: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "made.txt")); !os.IsNotExist(err) {
		t.Fatalf("the refused run wrote into the current folder")
	}
	// The command it suggests works.
	suggested := hintAfter(t, r.stderr, "To run it there, pass ")
	suggested, _, _ = strings.Cut(suggested, ";")
	args := append([]string{"run", outside, "--yes", "--state-dir", state}, strings.Fields(suggested)...)
	if r := agentdIn(t, elsewhere, agentdBin, nil, args...); r.code != 0 {
		t.Fatalf("with the suggested %s: exit %d\n%s%s", suggested, r.code, r.stdout, r.stderr)
	}

	req := agentdIn(t, elsewhere, agentdBin, nil, "run", "--request", "add a flag", "--state-dir", state)
	if req.code != exitUsage || !strings.Contains(req.stderr, "--workspace") {
		t.Fatalf("--request without --workspace off a terminal: exit %d\n%s", req.code, req.stderr)
	}
}
