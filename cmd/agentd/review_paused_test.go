//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A run of the editor's daemon (review before) is paused while its first
// step's change set waits for a decision; agentd review at the terminal
// decides it with the answers on its standard input, as an editor would:
// the change is on disk, the step waiting on it finishes, the run stays
// paused (its next step not started) and agentd runs shows the step's set
// accepted. Resumed, the run finishes.
func TestReviewCommandDecidesASetOfAPausedRun(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServeProc(t, state)
	c := srv.lspConn
	initializeWith(c, ws, map[string]any{"review": "before", "clientFeatures": map[string]any{"changeReview": true}})
	plan := `{"title":"paused","steps":[
		{"id":"a","tool":"write_file","args":{"path":"a.txt","content":"one\nTWO\nthree\n"}},
		{"id":"b","tool":"write_file","args":{"path":"b.txt","content":"b\n"},"dependsOn":["a"]}]}`
	r := c.call("agentd/plan/load", map[string]any{"plan": json.RawMessage(plan)})
	if r["error"] != nil {
		t.Fatalf("plan/load: %v", r["error"])
	}
	r = c.call("agentd/run/start", map[string]any{"planId": r["result"].(map[string]any)["id"],
		"options": map[string]any{"review": "before"}})
	if r["error"] != nil {
		t.Fatalf("run/start: %v", r["error"])
	}
	runID, _ := r["result"].(map[string]any)["runId"].(string)

	// events reads the server's messages until one of the run's events
	// satisfies stop, answering the server's requests on the way.
	events := func(stop func(ev map[string]any) bool) {
		t.Helper()
		for {
			m := c.read()
			switch m["method"] {
			case "agentd/approval/request":
				t.Fatalf("the server asked for approval: %v", m["params"])
			case "window/showMessageRequest", "window/workDoneProgress/create", "agentd/documents/reload", "workspace/applyEdit":
				c.send(map[string]any{"id": m["id"], "result": nil})
			case "agentd/run/didChange":
				if ev, _ := m["params"].(map[string]any)["event"].(map[string]any); ev != nil && stop(ev) {
					return
				}
			}
		}
	}
	events(func(ev map[string]any) bool { return ev["type"] == "changeProposed" })
	p := c.call("agentd/run/pause", map[string]any{"runId": runID})
	if st, _ := p["result"].(map[string]any); st == nil || st["status"] != "paused" {
		t.Fatalf("agentd/run/pause: %v", p)
	}
	if got := readFile(t, filepath.Join(ws, "a.txt")); got != "one\ntwo\nthree\n" {
		t.Fatalf("review before wrote a.txt before the decision:\n%s", got)
	}
	if runs := agentd(t, "", "runs", "--workspace", ws, "--state-dir", state); !strings.Contains(runs.stdout, "paused") {
		t.Fatalf("agentd runs does not show the run paused:\n%s%s", runs.stdout, runs.stderr)
	}

	rev := agentd(t, "y\n", "review", runID, "--workspace", ws, "--state-dir", state)
	if rev.code != exitOK || !strings.Contains(rev.stdout, "1 change set pending") || !strings.Contains(rev.stdout, "every pending change set is decided") {
		t.Fatalf("agentd review of the paused run: exit %d\n%s%s", rev.code, rev.stdout, rev.stderr)
	}
	if got := readFile(t, filepath.Join(ws, "a.txt")); got != "one\nTWO\nthree\n" {
		t.Fatalf("y at agentd review did not apply the change:\n%s", got)
	}
	// The decision reaches the run: the step waiting on it finishes.
	events(func(ev map[string]any) bool {
		if ev["type"] == "runFinished" {
			t.Fatalf("the paused run finished: %v", ev)
		}
		return ev["type"] == "stepFinished" && ev["stepId"] == "a"
	})
	g, _ := c.call("agentd/run/get", map[string]any{"runId": runID})["result"].(map[string]any)
	if g["status"] != "paused" {
		t.Fatalf("the run after the terminal's decision: %v", g)
	}
	if fileExists(ws, "b.txt") {
		t.Fatal("the paused run started its next step")
	}
	// agentd runs reads the run from the journal, which the daemon saves
	// at most once a second: wait for the step's end to be recorded (a
	// bound on a record that never comes, not a timing assertion).
	show := agentd(t, "", "runs", runID, "--workspace", ws, "--state-dir", state)
	for deadline := time.Now().Add(serveStopWait); !strings.Contains(show.stdout, "| a | completed |"); {
		if time.Now().After(deadline) {
			t.Fatalf("agentd runs %s never shows step a completed:\n%s%s", runID, show.stdout, show.stderr)
		}
		time.Sleep(50 * time.Millisecond)
		show = agentd(t, "", "runs", runID, "--workspace", ws, "--state-dir", state)
	}
	if !strings.Contains(show.stdout, "**Status:** paused") || strings.Contains(show.stdout, "| b | completed |") ||
		!strings.Contains(show.stdout, "step a  accepted (review before)") {
		t.Errorf("agentd runs %s after the terminal's decision:\n%s%s", runID, show.stdout, show.stderr)
	}
	if again := agentd(t, "", "review", "--workspace", ws, "--state-dir", state); again.code != 0 || !strings.Contains(again.stdout, "no change set is pending") {
		t.Errorf("a second review: exit %d\n%s%s", again.code, again.stdout, again.stderr)
	}

	if res := c.call("agentd/run/resume", map[string]any{"runId": runID}); res["error"] != nil {
		t.Fatalf("agentd/run/resume: %v", res["error"])
	}
	// Step b's set, decided at the terminal too: the run ends.
	events(func(ev map[string]any) bool { return ev["type"] == "changeProposed" })
	if rev := agentd(t, "y\n", "review", runID, "--workspace", ws, "--state-dir", state); rev.code != exitOK {
		t.Fatalf("agentd review of the resumed run: exit %d\n%s%s", rev.code, rev.stdout, rev.stderr)
	}
	events(func(ev map[string]any) bool {
		if ev["type"] != "runFinished" {
			return false
		}
		if ev["status"] != "completed" {
			t.Fatalf("the resumed run: %v", ev)
		}
		return true
	})
	if got := readFile(t, filepath.Join(ws, "b.txt")); got != "b\n" {
		t.Fatalf("b.txt after the resumed run: %q", got)
	}
	if runs := agentd(t, "", "runs", runID, "--workspace", ws, "--state-dir", state); !strings.Contains(runs.stdout, "completed") {
		t.Errorf("agentd runs %s after resume:\n%s", runID, runs.stdout)
	}
}
