//go:build unix

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/internal/fakemodel"
)

// With standard input closed and no --yes, a run that needs an answer stops
// at once with exit 2 and says how to run without a terminal.
func TestRunClosedStdinStopsAtOnce(t *testing.T) {
	ws := demoCopy(t)
	before := readFile(t, filepath.Join(ws, "main.go"))
	r := agentd(t, "", "run", plan(t, "refactor.json"), "--workspace", ws, "--sequential", "--state-dir", t.TempDir())
	if r.code != exitUsage {
		t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "standard input is closed") || !strings.Contains(r.stderr, "--yes") || !strings.Contains(r.stderr, "--review none") {
		t.Errorf("stderr does not say to pass --yes or --review none:\n%s", r.stderr)
	}
	if n := strings.Count(r.stdout, "allow? "); n != 1 {
		t.Errorf("asked %d times, want once and then stop:\n%s", n, r.stdout)
	}
	if got := readFile(t, filepath.Join(ws, "main.go")); got != before {
		t.Errorf("main.go changed although nothing was allowed:\n%s", got)
	}
	if strings.Contains(r.stdout, "**Status:** completed") {
		t.Errorf("a run that did nothing says completed:\n%s", r.stdout)
	}
}

// A denied approval skips the step, and the run is partial (exit 3).
func TestRunDeniedApprovalIsPartial(t *testing.T) {
	ws := t.TempDir()
	p := writePlan(t, `{"steps":[{"id":"c","tool":"run_command","args":{"command":"echo hi > out.txt"}},
		{"id":"r","tool":"list_dir","args":{"path":"."}}]}`)
	r := agentd(t, "n\n", "run", p, "--workspace", ws, "--state-dir", t.TempDir())
	if r.code != exitPartial {
		t.Fatalf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "| c | skipped |") || !strings.Contains(r.stdout, "**Status:** partial") {
		t.Errorf("summary:\n%s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(ws, "out.txt")); err == nil {
		t.Error("the denied command ran")
	}
}

// --dry-run works on every bundled example: each proposed diff in full,
// dependents of steps that did not really run "would run", never a
// prompt (stdin is closed and there is no --yes), exit 0, nothing written.
func TestRunDryRunEveryExample(t *testing.T) {
	for _, p := range examplePlans(t) {
		t.Run(filepath.Base(p), func(t *testing.T) {
			ws := demoCopy(t)
			before := snapshotDir(t, ws)
			r := agentd(t, "", "run", p, "--workspace", ws, "--dry-run", "--state-dir", t.TempDir())
			if r.code != exitOK {
				t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			for _, bad := range []string{"allow?", "apply this change?", "[a]bort", "✗ ", "| failed |"} {
				if strings.Contains(r.stdout, bad) {
					t.Errorf("a dry run shows %q:\n%s", bad, r.stdout)
				}
			}
			// Every proposed change is shown in full: a diff header and its
			// + lines for each change set in the summary.
			ids := regexp.MustCompile("`([0-9A-Z]{26})`").FindAllStringSubmatch(r.stdout, -1)
			if len(ids) == 0 {
				t.Fatalf("no change set in the summary:\n%s", r.stdout)
			}
			for _, id := range ids {
				if !strings.Contains(r.stdout, "~ change "+id[1]+" from step ") {
					t.Errorf("change %s is not shown:\n%s", id[1], r.stdout)
				}
			}
			if !regexp.MustCompile(`(?m)^\+\+\+ b/`).MatchString(r.stdout) || !regexp.MustCompile(`(?m)^\+[^+]`).MatchString(r.stdout) {
				t.Errorf("no diff shown:\n%s", r.stdout)
			}
			if after := snapshotDir(t, ws); after != before {
				t.Errorf("a dry run changed the workspace")
			}
		})
	}
	// refactor.json's check reads ${test.exitCode}, which a dry run has
	// not got: it would run, not fail.
	ws := demoCopy(t)
	r := agentd(t, "", "run", plan(t, "refactor.json"), "--workspace", ws, "--dry-run", "--state-dir", t.TempDir())
	if !strings.Contains(r.stdout, "○ check would run: it needs what test would do") {
		t.Errorf("check is not shown as would run:\n%s", r.stdout)
	}
}

// On a terminal, where a real run would ask (review before, approvals), a
// dry run of every example never prompts and exits 0.
func TestTermDryRunEveryExampleNeverPrompts(t *testing.T) {
	for _, p := range examplePlans(t) {
		t.Run(filepath.Base(p), func(t *testing.T) {
			ws := demoCopy(t)
			before := snapshotDir(t, ws)
			r := startPTY(t, nil, "run", p, "--workspace", ws, "--dry-run", "--state-dir", t.TempDir())
			// Nothing is typed: a prompt would wait until wait() gives up.
			if code := r.wait(); code != exitOK {
				t.Fatalf("exit %d, want 0:\n%s", code, r.tail())
			}
			txt := r.text()
			for _, bad := range []string{"allow?", "apply this change?", "[a]bort", "✗ "} {
				if strings.Contains(txt, bad) {
					t.Errorf("a dry run on a terminal shows %q:\n%s", bad, r.tail())
				}
			}
			if !strings.Contains(txt, "(dry run: not applied)") || !strings.Contains(txt, "**Dry run:**") {
				t.Errorf("the proposed changes are not shown as a dry run's:\n%s", r.tail())
			}
			if snapshotDir(t, ws) != before {
				t.Errorf("a dry run changed the workspace")
			}
		})
	}
}

// snapshotDir is every file's path and content under dir, as one string.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			b.WriteString(p + "\x00" + string(data) + "\x00")
		}
		return nil
	})
	return b.String()
}

// --json never writes a prompt to stdout: stdout is JSON lines only, the
// prompts go to the terminal (stderr), even when both are a terminal.
func TestTermJSONKeepsPromptsOffStdout(t *testing.T) {
	ws, p := twoHunks(t)
	out, err := os.Create(filepath.Join(t.TempDir(), "stdout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	r := startPTYWith(t, nil, out, "run", p, "--workspace", ws, "--state-dir", t.TempDir(), "--json")
	r.waitFor(applyPrompt, 0)
	r.send("y\n")
	if code := r.wait(); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, r.tail())
	}
	data, _ := os.ReadFile(out.Name())
	evs := jsonEvents(t, string(data)) // fails on any line that is not JSON
	if len(evs) < 3 || evs[len(evs)-1]["type"] != "result" {
		t.Errorf("stdout holds %d JSON lines, the last %v", len(evs), evs[len(evs)-1])
	}
	if strings.Contains(string(data), "apply this change?") {
		t.Errorf("a prompt went to stdout:\n%s", data)
	}
}

// agentd run --request shows the plan, saves it outside the workspace
// (path printed) and asks run / edit / quit; the planner's tokens are in
// the summary.
func TestTermRequestShowsSavesAndAsks(t *testing.T) {
	srv := fakemodel.New()
	srv.Push(fakemodel.Reply{Text: `{"title":"Make out.txt","steps":[{"id":"w","description":"write it","tool":"write_file","args":{"path":"out.txt","content":"a && b\n"}}]}`,
		InputTokens: 1234, OutputTokens: 56})
	modelEnv(t, srv)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	state := t.TempDir()
	r := startPTY(t, nil, "run", "--request", "write out.txt", "--workspace", ws, "--state-dir", state, "--review", "none")
	at := r.waitFor("1. w [write_file] write it", 0)
	at = r.waitFor("plan saved to ", at)
	path := strings.TrimSpace(strings.SplitN(r.text()[at:], "\n", 2)[0])
	r.waitFor("[r]un it, [e]dit it in $EDITOR, or [q]uit?", at)
	if !strings.HasPrefix(path, state) || strings.HasPrefix(path, ws) {
		t.Errorf("plan saved to %q: want it in the state dir %s, not in the workspace", path, state)
	}
	saved := readFile(t, path)
	if !strings.Contains(saved, "a && b") {
		t.Errorf("the saved plan escapes &&:\n%s", saved)
	}
	// The plan is the journal's record, under the journal's name for it,
	// as a plan made in an editor or through ACP is.
	root, _ := filepath.EvalSymlinks(ws)
	j, err := engine.OpenJournal(state, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if recorded, _ := j.Plans(); len(recorded) != 1 || j.PlanFile(recorded[0].ID) != path || recorded[0].Title != "Make out.txt" {
		t.Errorf("plan saved to %s; the journal's plans: %+v", path, recorded)
	}
	if _, err := os.Stat(filepath.Join(ws, "out.txt")); err == nil {
		t.Fatal("the plan ran before the user said run")
	}
	r.send("r\n")
	if code := r.wait(); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, r.tail())
	}
	if got := readFile(t, filepath.Join(ws, "out.txt")); got != "a && b\n" {
		t.Errorf("out.txt = %q", got)
	}
	if !strings.Contains(r.text(), "Making the plan (included above): 1 model call(s), 1234 token(s) in, 56 out") {
		t.Errorf("the summary lacks the planner's tokens:\n%s", r.tail())
	}
	// The planner's repository map is cached in --state-dir, not in the
	// default state dir.
	if m, _ := filepath.Glob(filepath.Join(state, "repomap", "*.map")); len(m) == 0 {
		t.Errorf("no repository map cached in --state-dir %s", state)
	}

	// q: nothing runs, and the saved plan's path is printed to run later.
	srv.Push(fakemodel.Reply{Text: `{"steps":[{"id":"w","tool":"write_file","args":{"path":"q.txt","content":"no\n"}}]}`})
	r = startPTY(t, nil, "run", "--request", "write q.txt", "--workspace", ws, "--state-dir", state)
	r.waitFor("[r]un it, [e]dit it in $EDITOR, or [q]uit?", 0)
	r.send("q\n")
	if code := r.wait(); code != exitOK {
		t.Fatalf("q: exit %d:\n%s", code, r.tail())
	}
	if _, err := os.Stat(filepath.Join(ws, "q.txt")); err == nil {
		t.Error("q ran the plan")
	}
	if !strings.Contains(r.text(), "not run; run it later with: "+agentdBin+" run ") {
		t.Errorf("q does not say how to run the plan later:\n%s", r.tail())
	}

	// e: the saved plan opens in $EDITOR; the edited plan is checked,
	// shown again, and is what runs.
	srv.Push(fakemodel.Reply{Text: `{"steps":[{"id":"w","tool":"write_file","args":{"path":"e.txt","content":"from the model\n"}}]}`})
	ed := filepath.Join(t.TempDir(), "ed.sh")
	os.WriteFile(ed, []byte("#!/bin/sh\nsed -i 's/from the model/edited by hand/' \"$1\"\n"), 0o755)
	r = startPTY(t, []string{"EDITOR=" + ed, "VISUAL="}, "run", "--request", "write e.txt", "--workspace", ws, "--state-dir", state, "--review", "none")
	at = r.waitFor("[r]un it, [e]dit it in $EDITOR, or [q]uit?", 0)
	r.send("e\n")
	r.waitFor("[r]un it, [e]dit it in $EDITOR, or [q]uit?", at)
	r.send("r\n")
	if code := r.wait(); code != exitOK {
		t.Fatalf("e: exit %d:\n%s", code, r.tail())
	}
	if got := readFile(t, filepath.Join(ws, "e.txt")); got != "edited by hand\n" {
		t.Errorf("after editing the plan e.txt = %q", got)
	}
}
