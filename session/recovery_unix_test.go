//go:build unix

package session

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/journal"
)

// settleChildEnv makes TestUndoChildProcess, in a child process, undo the
// newest run of the workspace it names (its root, a newline, its state dir).
const settleChildEnv = "AGENTD_TEST_SESSION_UNDO_CHILD"

// TestUndoChildProcess is the child process of the killed-undo tests; it
// does nothing unless settleChildEnv is set.
func TestUndoChildProcess(t *testing.T) {
	v := os.Getenv(settleChildEnv)
	if v == "" {
		return
	}
	root, state, _ := strings.Cut(v, "\n")
	s, err := Open(context.Background(), Options{Root: root, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.UndoRun(context.Background(), "", UndoOptions{})
	t.Fatalf("the undo was to be stopped mid-write and killed; it returned (%v)", err)
}

// runFiles runs a plan writing files (path -> content) through the
// session's engine wiring and returns the run's ID.
func runFiles(t *testing.T, s *Session, files map[string]string) string {
	t.Helper()
	cfg := s.Config()
	cfg.Tools, cfg.Approver = tools.Builtin(), approval.AllowAll{}
	var steps []map[string]any
	for p, c := range files {
		steps = append(steps, map[string]any{"id": "w" + string(rune('0'+len(steps))), "tool": "write_file", "args": map[string]string{"path": p, "content": c}})
	}
	data, _ := json.Marshal(map[string]any{"title": "w", "steps": steps})
	p, err := plans.ParsePlan("w.json", data)
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

// Issue 38, crash safety: an undo (Session.UndoRun, in a child process)
// is SIGKILLed after the first of its two writes; the user then edits the
// file it had yet to write. The next session's Recovered says the store
// completed it and that the run is now recorded as undone (the user's
// file kept); the journal lists the run undone with that file kept; the
// next UndoRun undoes the run before; and UndoRestore of the recovered
// undo takes it back, keeping the user's edit.
func TestKilledUndoIsSettledInTheJournal(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	files := map[string]string{"older.txt": "older\n", "x.txt": "x\n", "y.txt": "y\n"}
	for p, c := range files {
		os.WriteFile(filepath.Join(ws, p), []byte(c), 0o644)
	}
	read := func(p string) string { b, _ := os.ReadFile(filepath.Join(ws, p)); return string(b) }
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	run1 := runFiles(t, s, map[string]string{"older.txt": "older agent\n"})
	run2 := runFiles(t, s, map[string]string{"x.txt": "x agent\n", "y.txt": "y agent\n"})
	s.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestUndoChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), settleChildEnv+"="+ws+"\n"+state, gitops.StopAfterWritesEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
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
		t.Fatalf("the undo did not stop mid-write; the child said:\n%s", strings.Join(said, "\n"))
	}
	cmd.Process.Signal(syscall.SIGKILL)
	go io.Copy(io.Discard, stderr)
	cmd.Wait()
	// The process is gone: the files still as run 2 wrote them are the
	// ones the undo had yet to write (the write in flight at the stop may
	// or may not have landed). The user edits one of them.
	yet := ""
	for _, p := range []string{"x.txt", "y.txt"} {
		if read(p) == strings.TrimSuffix(p, ".txt")+" agent\n" {
			yet = p
		}
	}
	if yet == "" {
		t.Fatalf("the undo was not stopped mid-write: x.txt %q, y.txt %q", read("x.txt"), read("y.txt"))
	}
	written := map[string]string{"x.txt": "y.txt", "y.txt": "x.txt"}[yet]
	os.WriteFile(filepath.Join(ws, yet), []byte("the user's own\n"), 0o644)

	s, err = Open(ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, err := s.Recovered(ctx)
	if err != nil || rec == nil {
		t.Fatalf("Recovered = %v, %v; want what was interrupted", rec, err)
	}
	msg := rec.Message(func(args ...string) string { return strings.Join(args, " ") })
	t.Logf("recovery said:\n%s", msg)
	if read(written) != files[written] || read(yet) != "the user's own\n" {
		t.Errorf("after the recovery: %s = %q (want it undone), %s = %q (want the user's)", written, read(written), yet, read(yet))
	}
	for _, want := range []string{"the undo was interrupted; it has now been completed", "run " + run2 + " is now recorded as undone",
		"except " + yet + ", kept as you left it", "to take it back, keeping what you wrote since: undo --restore "} {
		if !strings.Contains(msg, want) {
			t.Errorf("the recovery does not say %q", want)
		}
	}
	if rec.UndoBack == nil {
		t.Fatal("no way to take the completed undo back")
	}
	// What run 2 replaced in the kept file (its first content) is on
	// disk nowhere: the recovery names the way to it, undoing run 2
	// again, which shows it as the conflict's other side.
	if strings.Join(rec.KeptBack, " ") != "undo "+run2 || !strings.Contains(msg, "files kept as you left them too") {
		t.Fatalf("the way back for the kept %s is %v; want undo %s", yet, rec.KeptBack, run2)
	}
	again, err := s.UndoRun(ctx, rec.KeptBack[1], UndoOptions{DryRun: true})
	if err != nil || len(again.Conflicts) != 1 || again.Conflicts[0].Path != yet || !strings.Contains(again.Conflicts[0].Diff, "\n+"+files[yet]) {
		t.Fatalf("undo %s again: %+v, %v; want %s a conflict bringing back %q", run2, again, err, yet, files[yet])
	}
	runs, err := s.Journal.Runs()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		switch {
		case r.RunID == run2 && (r.Undone == nil || strings.Join(r.Undone.Kept, ",") != yet):
			t.Errorf("run 2 is recorded as undone %+v, want undone with %s kept", r.Undone, yet)
		case r.RunID == run1 && r.Undone != nil:
			t.Errorf("run 1 is recorded as undone")
		}
	}
	if ps, _ := s.Journal.PendingRestores(); len(ps) != 0 {
		t.Errorf("pending records left: %+v", ps)
	}

	res, err := s.UndoRun(ctx, "", UndoOptions{})
	if err != nil || res.RunID != run1 || read("older.txt") != files["older.txt"] {
		t.Fatalf("the next undo: %+v, %v; older.txt %q; want run 1 undone", res, err, read("older.txt"))
	}
	back, err := s.UndoRestore(ctx, rec.UndoBack[2], UndoOptions{})
	if err != nil || !back.Applied {
		t.Fatalf("taking the recovered undo back: %+v, %v", back, err)
	}
	if read(written) != strings.TrimSuffix(written, ".txt")+" agent\n" || read(yet) != "the user's own\n" {
		t.Errorf("after taking the undo back: %s = %q (want run 2's), %s = %q (want the user's)", written, read(written), yet, read(yet))
	}
	if got := read("older.txt"); got != files["older.txt"] {
		t.Errorf("older.txt = %q; taking run 2's undo back changed run 1's file", got)
	}
	runs, _ = s.Journal.Runs()
	for _, r := range runs {
		if r.RunID == run2 && r.Undone != nil {
			t.Errorf("run 2 is still recorded as undone after its undo was taken back")
		}
	}
}

// An undo recorded as under way by a process that died before it wrote
// anything (no recovery to report, nothing in its ledger) is dropped and
// said, its run left not undone; one of a live process is left alone.
func TestPendingUndoOfADeadProcessThatWroteNothingIsDropped(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := runFiles(t, s, map[string]string{"a.txt": "agent\n"})
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []journal.Pending{
		{Restore: journal.Restore{ID: "1-dead", Owner: "undo/1-dead", RunID: run}, PID: dead.Process.Pid},
		{Restore: journal.Restore{ID: "2-live", Owner: "undo/2-live", RunID: run}},
	} {
		if _, err := s.Journal.BeginPending(p); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := s.Recovered(ctx)
	if err != nil || rec == nil {
		t.Fatalf("Recovered = %v, %v; want the dropped undo said", rec, err)
	}
	msg := rec.Message(func(args ...string) string { return strings.Join(args, " ") })
	t.Logf("recovery said:\n%s", msg)
	if !strings.Contains(msg, "run "+run+" is not undone") || rec.UndoBack != nil {
		t.Errorf("the message does not say the run is not undone, or offers a way back: %q", msg)
	}
	ps, _ := s.Journal.PendingRestores()
	if len(ps) != 1 || ps[0].Restore.ID != "2-live" {
		t.Errorf("pending records now %+v, want only the live process's", ps)
	}
	if u := s.Journal.UndoneOf(run); u != nil {
		t.Errorf("the run is recorded as undone: %+v", u)
	}
	if r, err := s.Journal.RestoreToUndo(""); err == nil {
		t.Errorf("undo --restore is offered %+v, which never happened", r)
	}
}

// Issue 38, crash safety: an undo that overwrote a conflict is killed
// after the store's revert made all its writes (its journal gone) but
// before the session recorded it; the user then edits the one file it
// wrote. The next open must take the undo as done and name that file
// with the way back, which brings the user's overwritten line back: the
// files cannot tell (none holds what the undo wrote any more), and an
// undo taken for never done named nothing, the line lost unsaid.
func TestKilledUndoAfterItsWritesIsDoneThoughTheUserEditedEveryFile(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("first\n"), 0o644)
	read := func() string { b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); return string(b) }
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := runFiles(t, s, map[string]string{"a.txt": "agent\n"})
	// The user changes the agent's line: undoing with overwrite takes it.
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("user's own\n"), 0o644)
	store, err := s.Store()
	if err != nil {
		t.Fatal(err)
	}
	// What UndoRun does up to the store's revert, in a process that dies
	// right after it (before recording the undo as done).
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	id := "1-killed"
	if _, err := s.Journal.BeginPending(journal.Pending{Restore: journal.Restore{ID: id, Owner: "undo/" + id, RunID: run}, PID: dead.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	res, err := store.Revert(ctx, []string{"run/" + run}, gitops.RevertOptions{OnConflict: gitops.OverwriteConflicts, RecordAs: "undo/" + id})
	if err != nil || !res.Applied || strings.Join(res.Overwritten, ",") != "a.txt" || read() != "first\n" {
		t.Fatalf("the revert: %+v, %v; a.txt %q", res, err, read())
	}
	// After the kill, the user edits the file the undo wrote.
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("first\nafter the kill\n"), 0o644)

	rec, err := s.Recovered(ctx)
	if err != nil || rec == nil {
		t.Fatalf("Recovered = %v, %v; want the killed undo said", rec, err)
	}
	msg := rec.Message(func(args ...string) string { return strings.Join(args, " ") })
	t.Logf("recovery said:\n%s", msg)
	for _, want := range []string{"run " + run + " is now recorded as undone", "it wrote a.txt", "undo --restore " + id} {
		if !strings.Contains(msg, want) {
			t.Errorf("the recovery does not say %q", want)
		}
	}
	if u := s.Journal.UndoneOf(run); u == nil {
		t.Errorf("the run is not recorded as undone, though its undo wrote a.txt")
	}
	if rec.UndoBack == nil {
		t.Fatal("no way back is offered")
	}
	back, err := s.UndoRestore(ctx, rec.UndoBack[2], UndoOptions{})
	if err != nil || !back.Applied {
		t.Fatalf("the way back %v: %+v, %v", rec.UndoBack, back, err)
	}
	if got := read(); !strings.Contains(got, "user's own\n") || !strings.Contains(got, "after the kill\n") {
		t.Errorf("after the way back a.txt = %q; want the user's line the undo overwrote and the one typed after the kill", got)
	}
}

// Issue 38, crash safety: an undo that kept a conflict (KeepConflicts) is
// killed after the store's revert made its writes but before the session
// recorded it. The next open records the run undone and names the
// conflict it kept, with the way to it (undoing the run again shows the
// conflict, the user's earlier line its other side): dropped, the run
// was recorded undone with the agent's change still in the file, unsaid.
func TestKilledUndoAfterItsWritesNamesTheConflictsItKept(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "b.txt"), []byte("b first\n"), 0o644)
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := runFiles(t, s, map[string]string{"a.txt": "a agent\n", "b.txt": "b agent\n"})
	os.WriteFile(filepath.Join(ws, "b.txt"), []byte("b mine\n"), 0o644)
	store, err := s.Store()
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	id := "1-killed"
	if _, err := s.Journal.BeginPending(journal.Pending{Restore: journal.Restore{ID: id, Owner: "undo/" + id, RunID: run}, PID: dead.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	res, err := store.Revert(ctx, []string{"run/" + run}, gitops.RevertOptions{OnConflict: gitops.KeepConflicts, RecordAs: "undo/" + id})
	if err != nil || !res.Applied || len(res.Conflicts) != 1 || res.Conflicts[0].Path != "b.txt" {
		t.Fatalf("the revert: %+v, %v", res, err)
	}

	rec, err := s.Recovered(ctx)
	if err != nil || rec == nil {
		t.Fatalf("Recovered = %v, %v; want the killed undo said", rec, err)
	}
	msg := rec.Message(func(args ...string) string { return strings.Join(args, " ") })
	t.Logf("recovery said:\n%s", msg)
	for _, want := range []string{"run " + run + " is now recorded as undone", "except b.txt, kept as you left it", "it wrote a.txt"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the recovery does not say %q", want)
		}
	}
	if u := s.Journal.UndoneOf(run); u == nil || strings.Join(u.Kept, ",") != "b.txt" {
		t.Errorf("the run is recorded undone as %+v; want b.txt kept", u)
	}
	if strings.Join(rec.KeptBack, " ") != "undo "+run {
		t.Fatalf("the way to the kept conflict is %v; want undo %s", rec.KeptBack, run)
	}
	again, err := s.UndoRun(ctx, rec.KeptBack[1], UndoOptions{DryRun: true})
	if err != nil || len(again.Conflicts) != 1 || again.Conflicts[0].Path != "b.txt" || !strings.Contains(again.Conflicts[0].Diff, "\n+b first") {
		t.Fatalf("undo %s again: %+v, %v; want the conflict on b.txt bringing back %q", run, again, err, "b first")
	}
}

// Issue 38, crash safety: an undo done and recorded, its process killed
// before the front end printed the result (UndoOptions.ShowLater, as
// agentd undo and ACP's /undo ask), is said by the next open with its
// way back: what an overwrite took is never named nowhere. Once shown
// (Session.Shown) there is nothing to say.
func TestUndoKilledBeforeItsResultWasShownIsSaid(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("first\n"), 0o644)
	read := func() string { b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); return string(b) }
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := runFiles(t, s, map[string]string{"a.txt": "agent\n"})
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("user's own\n"), 0o644)
	res, err := s.UndoRun(ctx, run, UndoOptions{OnConflict: gitops.OverwriteConflicts, ShowLater: true})
	if err != nil || !res.Applied || res.Unshown == "" || read() != "first\n" {
		t.Fatalf("undo: %+v, %v; a.txt %q", res, err, read())
	}
	// The process dies here, before it printed the result: its pending
	// record is left with a dead process's ID.
	ps, err := s.Journal.PendingRestores()
	if err != nil || len(ps) != 1 || ps[0].Restore.ID != res.Unshown {
		t.Fatalf("pending records %+v, %v; want the undo %s under way until shown", ps, err, res.Unshown)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	ps[0].PID = dead.Process.Pid
	if _, err := s.Journal.BeginPending(ps[0]); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Recovered(ctx)
	if err != nil || rec == nil {
		t.Fatalf("Recovered = %v, %v; want the unshown undo said", rec, err)
	}
	msg := rec.Message(func(args ...string) string { return strings.Join(args, " ") })
	for _, want := range []string{"stopped before its result was shown", "run " + run, "it wrote a.txt", "undo --restore " + res.Unshown} {
		if !strings.Contains(msg, want) {
			t.Errorf("the next open does not say %q:\n%s", want, msg)
		}
	}
	back, err := s.UndoRestore(ctx, res.Unshown, UndoOptions{})
	if err != nil || !back.Applied || read() != "user's own\n" {
		t.Fatalf("the way back: %+v, %v; a.txt %q (want the user's line back)", back, err, read())
	}
	// Shown: nothing left to say.
	res2, err := s.UndoRun(ctx, run, UndoOptions{OnConflict: gitops.OverwriteConflicts, ShowLater: true})
	if err != nil || !res2.Applied {
		t.Fatalf("undo again: %+v, %v", res2, err)
	}
	s.Shown(res2.Unshown)
	if ps, _ := s.Journal.PendingRestores(); len(ps) != 0 {
		t.Fatalf("after Shown, still under way: %+v", ps)
	}
}

// The same with "keep" where every file the run wrote conflicts: the undo
// writes nothing (the store keeps no mark of it), is recorded done, and
// is killed before it is shown. The next open says it, naming the file
// kept and the way to the lines the run replaced there (undo RUN).
func TestUndoThatKeptEverythingKilledBeforeShownIsSaid(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("mine\n"), 0o644)
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := runFiles(t, s, map[string]string{"a.txt": "agent\n"})
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("changed again\n"), 0o644)
	res, err := s.UndoRun(ctx, run, UndoOptions{OnConflict: gitops.KeepConflicts, ShowLater: true})
	if err != nil || !res.Applied || res.Unshown == "" || len(res.Kept) != 1 {
		t.Fatalf("undo: %+v, %v", res, err)
	}
	ps, err := s.Journal.PendingRestores()
	if err != nil || len(ps) != 1 {
		t.Fatalf("pending records %+v, %v", ps, err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	ps[0].PID = dead.Process.Pid
	if _, err := s.Journal.BeginPending(ps[0]); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Recovered(ctx)
	if err != nil || rec == nil {
		t.Fatalf("Recovered = %v, %v; want the unshown undo said", rec, err)
	}
	msg := rec.Message(func(args ...string) string { return strings.Join(args, " ") })
	if !strings.Contains(msg, "except a.txt, kept as you left it") || strings.Join(rec.KeptBack, " ") != "undo "+run {
		t.Fatalf("the next open says:\n%s\n(kept back: %v); want a.txt named as kept and undo %s as the way to the run's lines", msg, rec.KeptBack, run)
	}
	if u := s.Journal.UndoneOf(run); u == nil || len(u.Kept) != 1 {
		t.Fatalf("the run's record: %+v", u)
	}
}
