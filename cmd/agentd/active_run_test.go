package main

import (
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/engine"
)

// One run at a time per workspace, from the terminal: a run paused in
// another agentd process (an editor's daemon; here this test process,
// alive) keeps `agentd run` from starting, with the run named and the way
// out said; --concurrent starts it anyway.
func TestRunRefusedWhileAnotherRunIsPaused(t *testing.T) {
	ws := demoCopy(t)
	state := t.TempDir()
	j, err := engine.OpenJournal(state, ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.SaveRun(engine.RunState{RunID: "run-paused-elsewhere", Status: engine.RunPaused, StartTime: time.Now()}); err != nil {
		t.Fatal(err)
	}
	r := agentd(t, "", "run", plan(t, "refactor.json"), "--workspace", ws, "--yes", "--state-dir", state)
	if r.code != 1 || !strings.Contains(r.stderr, "run-paused-elsewhere") || !strings.Contains(r.stderr, "paused") || !strings.Contains(r.stderr, "--concurrent") {
		t.Fatalf("exit %d; want 1 with the paused run named and --concurrent offered\nstderr:\n%s", r.code, r.stderr)
	}
	if got := readFile(t, ws+"/greet/greet.go"); !strings.Contains(got, "func Hello(") {
		t.Fatal("the refused run changed the workspace")
	}
	r = agentd(t, "", "run", plan(t, "refactor.json"), "--workspace", ws, "--yes", "--state-dir", state, "--concurrent")
	if r.code != 0 {
		t.Fatalf("--concurrent: exit %d\nstderr:\n%s", r.code, r.stderr)
	}
}
