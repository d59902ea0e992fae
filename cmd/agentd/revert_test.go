package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// From the terminal: undoing a run removes what the run's commands wrote
// and keeps the user's later edit of a file the run never touched, which
// is not a conflict (issue 38, point 5).
func TestRestoreUndoesCommandsFromTerminal(t *testing.T) {
	ws, stateDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "keep.txt"), []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := writePlan(t, `{"steps":[{"id":"cmd","tool":"run_command","args":{"command":"echo gen > gen.txt && mkdir -p out && echo made > out/made.txt"}}]}`)
	r := agentd(t, "", "run", p, "--workspace", ws, "--state-dir", stateDir, "--yes")
	if r.code != 0 || !fileExists(ws, "gen.txt") {
		t.Fatalf("agentd run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	hint := hintAfter(t, r.stdout, "Undo the whole run: ")
	if err := os.WriteFile(filepath.Join(ws, "keep.txt"), []byte("user's edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u := paste(t, t.TempDir(), hint)
	if u.code != 0 { // done: keep.txt is not the run's
		t.Fatalf("undo %s: exit %d\n%s%s", hint, u.code, u.stdout, u.stderr)
	}
	for _, f := range []string{"gen.txt", "out/made.txt"} {
		if fileExists(ws, f) {
			t.Errorf("%s, written by the run's command, survived the restore\n%s", f, u.stdout)
		}
	}
	if got := readFile(t, filepath.Join(ws, "keep.txt")); got != "user's edit\n" {
		t.Errorf("the user's edit was overwritten: %q", got)
	}
	if strings.Contains(u.stdout+u.stderr, "keep.txt") {
		t.Errorf("the undo names keep.txt, which the run never touched:\n%s%s", u.stdout, u.stderr)
	}
}

// --rollback-on-failure undoes the files of the failed run's commands,
// the failing command's included.
func TestRollbackUndoesCommandsFromTerminal(t *testing.T) {
	ws := t.TempDir()
	p := writePlan(t, `{"steps":[
	  {"id":"gen","tool":"run_command","args":{"command":"echo gen > gen.txt"}},
	  {"id":"fail","tool":"run_command","args":{"command":"echo partial > partial.txt; exit 4"},"dependsOn":["gen"]}
	]}`)
	r := agentd(t, "", "run", p, "--workspace", ws, "--yes", "--rollback-on-failure", "--state-dir", t.TempDir())
	if r.code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, f := range []string{"gen.txt", "partial.txt"} {
		if fileExists(ws, f) {
			t.Errorf("%s, written by the run's commands, survived --rollback-on-failure\n%s", f, r.stdout)
		}
	}
}

// A plan path on the command line that is no plan file is refused at once.
func TestRunRefusesSpecialPlanFiles(t *testing.T) {
	for _, p := range []string{"/dev/zero", t.TempDir()} {
		r := agentd(t, "", "run", p, "--workspace", t.TempDir(), "--state-dir", t.TempDir())
		if r.code != exitUsage || !strings.Contains(r.stderr, "not a regular file") {
			t.Errorf("agentd run %s: exit %d\n%s", p, r.code, r.stderr)
		}
	}
}

// agentd run's --log-file receives the engine's lines (the logger is
// passed in, not global).
func TestRunLogFile(t *testing.T) {
	ws, log := t.TempDir(), filepath.Join(t.TempDir(), "agentd.log")
	p := writePlan(t, `{"steps":[{"id":"c","tool":"run_command","args":{"command":"echo x > x.txt"}}]}`)
	r := agentd(t, "a\n", "run", p, "--workspace", ws, "--state-dir", t.TempDir(), "--log-file", log, "--log-level", "info")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := readFile(t, log); !strings.Contains(got, `"msg":"remembered approval rule"`) || !strings.Contains(got, `"run":"`) {
		t.Errorf("the log file lacks the engine's line:\n%s", got)
	}
}
