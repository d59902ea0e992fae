package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lastRunID is the newest run in the workspace's journal (agentd runs --json).
func lastRunID(t *testing.T, ws, stateDir string) string {
	t.Helper()
	r := agentd(t, "", "runs", "--json", "--workspace", ws, "--state-dir", stateDir)
	var runs []struct {
		RunID string `json:"runId"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil || len(runs) == 0 {
		t.Fatalf("agentd runs --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	return runs[0].RunID
}

// agentd run keeps the journal of its change sets and their review state,
// as the editor server does: `agentd runs RUN` lists them.
func TestRunJournalsChangeSets(t *testing.T) {
	ws, stateDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := writePlan(t, `{"steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"new\n"}}]}`)
	for _, tc := range []struct {
		review, stdin, want string
	}{
		// Applied at once and offered for review: pending in the journal,
		// so an editor can still review (and revert) it.
		{review: "after", stdin: "y\n", want: "pending (review after)"},
		{review: "before", stdin: "y\n", want: "accepted (review before)"},
	} {
		if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := agentd(t, tc.stdin, "run", p, "--workspace", ws, "--state-dir", stateDir, "--review", tc.review, "--no-snapshots")
		if r.code != 0 || readFile(t, filepath.Join(ws, "a.txt")) != "new\n" {
			t.Fatalf("agentd run --review %s: exit %d\n%s%s", tc.review, r.code, r.stdout, r.stderr)
		}
		id := lastRunID(t, ws, stateDir)
		show := agentd(t, "", "runs", id, "--workspace", ws, "--state-dir", stateDir)
		if show.code != 0 || !strings.Contains(show.stdout, "Review of the change sets") {
			t.Fatalf("agentd runs %s: exit %d, no change sets\n%s%s", id, show.code, show.stdout, show.stderr)
		}
		var line string
		for _, l := range strings.Split(show.stdout, "\n") {
			if strings.Contains(l, "step w") {
				line = l
			}
		}
		if !strings.Contains(line, tc.want) || !strings.Contains(line, "a.txt") {
			t.Errorf("review %s: the change set's line is %q, want %q and a.txt\n%s", tc.review, line, tc.want, show.stdout)
		}
	}
}

// liveOutput collects a process's output as it comes.
type liveOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *liveOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *liveOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits until the output holds n occurrences of s.
func (o *liveOutput) waitFor(t *testing.T, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for strings.Count(o.String(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("no %q (#%d) in the output:\n%s", s, n, o.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// From the terminal: the user edits files while the run waits at its
// prompts (b.txt while the agent's edit waits for review, c.txt while the
// command waits for approval). Restoring the run's start removes exactly
// what the run created and keeps both edits. The undo is a revert of the
// run's own writes: files the run never wrote are not its business, so
// they are neither touched nor named as conflicts (issue 38 point 5: an
// undo used to list files its run never touched).
func TestUserEditsDuringRunKeptFromTerminal(t *testing.T) {
	ws, stateDir := t.TempDir(), t.TempDir()
	for p, c := range map[string]string{"a.txt": "a0\n", "b.txt": "b0\n", "c.txt": "c0\n"} {
		if err := os.WriteFile(filepath.Join(ws, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := writePlan(t, `{"steps":[
	  {"id":"edit","tool":"write_file","args":{"path":"a.txt","content":"agent\n"}},
	  {"id":"cmd","tool":"run_command","args":{"command":"echo gen > gen.txt"},"dependsOn":["edit"]}
	]}`)
	cmd := exec.Command(agentdBin, "run", p, "--workspace", ws, "--state-dir", stateDir, "--review", "before")
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
	answer := func(s string) {
		if _, err := io.WriteString(stdin, s); err != nil {
			t.Fatal(err)
		}
	}
	out.waitFor(t, "apply this change?", 1)
	if err := os.WriteFile(filepath.Join(ws, "b.txt"), []byte("b by the user\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	answer("y\n")
	out.waitFor(t, "allow?", 1)
	if err := os.WriteFile(filepath.Join(ws, "c.txt"), []byte("c by the user\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	answer("y\n")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agentd run: %v\n%s", err, out.String())
	}
	if !fileExists(ws, "gen.txt") || readFile(t, filepath.Join(ws, "a.txt")) != "agent\n" {
		t.Fatalf("the run did not do its work:\n%s", out.String())
	}
	hint := hintAfter(t, out.String(), "Undo the whole run: ")
	u := paste(t, t.TempDir(), hint)
	if u.code != 0 {
		t.Fatalf("undo %s: exit %d\n%s%s", hint, u.code, u.stdout, u.stderr)
	}
	for p, want := range map[string]string{"a.txt": "a0\n", "b.txt": "b by the user\n", "c.txt": "c by the user\n"} {
		if got := readFile(t, filepath.Join(ws, p)); got != want {
			t.Errorf("%s after the restore = %q, want %q", p, got, want)
		}
	}
	if fileExists(ws, "gen.txt") {
		t.Errorf("gen.txt, written by the run's command, survived the restore")
	}
	for _, p := range []string{"b.txt", "c.txt"} {
		if strings.Contains(u.stdout+u.stderr, p) {
			t.Errorf("the undo names %s, a file its run never wrote:\n%s%s", p, u.stdout, u.stderr)
		}
	}
	if strings.Contains(u.stdout+u.stderr, "a.txt") && strings.Contains(u.stdout+u.stderr, "conflict: a.txt") {
		t.Errorf("a.txt, the run's, is reported as a conflict:\n%s", u.stdout)
	}
}
