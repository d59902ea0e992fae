//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/fakemodel"
)

const (
	applyPrompt = "apply this change? [y]es [n]o [a]ll remaining [q]uit [e]dit [s]plit [?]help, then Enter:"
	allowPrompt = "allow? [y]es [n]o [a]lways for this command [q]uit [?]help, then Enter:"
)

// In a parallel run, "a" at the first review accepts every later change
// set, whichever step proposes it: one prompt for three parallel steps.
// "?" explains the keys. What a step printed comes before the prompt about
// its change.
func TestTermParallelReviewAllAcceptsEveryLaterChange(t *testing.T) {
	ws := demoCopy(t)
	r := startPTY(t, nil, "run", plan(t, "refactor.json"), "--workspace", ws, "--state-dir", t.TempDir())
	at := r.waitFor(applyPrompt, 0)
	txt := r.text()
	// The prompt's change was announced, and find's result shown, before it.
	m := regexp.MustCompile(`~ change (\w+) from step (\w+):`).FindAllStringSubmatch(txt, -1)
	if len(m) != 1 {
		t.Fatalf("want one change shown before the first prompt, got %v in:\n%s", m, r.tail())
	}
	if p := strings.Index(txt, "proposed change "+m[0][1]); p < 0 || p > strings.Index(txt, "~ change "+m[0][1]) {
		t.Errorf("the prompt for %s came before its proposal event:\n%s", m[0][1], r.tail())
	}
	if f := strings.Index(txt, "✓ find"); f < 0 || f > strings.Index(txt, "~ change ") {
		t.Errorf("find's result is not shown before the first change:\n%s", r.tail())
	}
	r.send("?\n")
	at = r.waitFor("a  apply this and every later change set of the run, from any step", at)
	at = r.waitFor(applyPrompt, at)
	r.send("a\n")
	at = r.waitFor(allowPrompt, at)
	// "?" explains the approval keys too, and asks again.
	r.send("?\n")
	at = r.waitFor("a  allow it and remember", at)
	r.waitFor(allowPrompt, at)
	r.send("y\n")
	if code := r.wait(); code != exitOK {
		t.Fatalf("exit %d, want 0:\n%s", code, r.tail())
	}
	if n := strings.Count(r.text(), applyPrompt); n != 2 { // the first, and again after "?"
		t.Errorf("%d review prompts, want 2 (first change, after ?): a did not accept the later changes:\n%s", n, r.tail())
	}
	for _, f := range []string{"main.go", "greet/greet.go", "greet/greet_test.go"} {
		if got := readFile(t, filepath.Join(ws, f)); !strings.Contains(got, "Greet(") {
			t.Errorf("%s not changed after a:\n%s", f, got)
		}
	}
	if !strings.Contains(r.text(), "**Status:** completed") {
		t.Errorf("summary:\n%s", r.tail())
	}
}

// "q" rejects this and every later change set and cancels the run; the
// rejected steps are not shown as completed.
func TestTermReviewQuitRejectsTheRest(t *testing.T) {
	ws := demoCopy(t)
	before := map[string]string{}
	for _, f := range []string{"main.go", "greet/greet.go", "greet/greet_test.go"} {
		before[f] = readFile(t, filepath.Join(ws, f))
	}
	r := startPTY(t, nil, "run", plan(t, "refactor.json"), "--workspace", ws, "--state-dir", t.TempDir())
	r.waitFor(applyPrompt, 0)
	r.send("q\n")
	if code := r.wait(); code != exitCancelled {
		t.Fatalf("exit %d, want 130:\n%s", code, r.tail())
	}
	txt := r.text()
	if n := strings.Count(txt, applyPrompt); n != 1 {
		t.Errorf("%d review prompts after q, want 1:\n%s", n, r.tail())
	}
	for f, b := range before {
		if got := readFile(t, filepath.Join(ws, f)); got != b {
			t.Errorf("%s changed although q rejected every change:\n%s", f, got)
		}
	}
	for _, s := range []string{"rename_def", "rename_tests", "rename_main"} {
		if regexp.MustCompile(`\| ` + s + ` \| completed`).MatchString(txt) {
			t.Errorf("%s shows completed after q:\n%s", s, r.tail())
		}
	}
	if !strings.Contains(txt, "**Status:** cancelled") || !strings.Contains(txt, "**Error:** stopped at the terminal (q)") {
		t.Errorf("status, or the error does not say q stopped the run:\n%s", r.tail())
	}
}

// twoHunks is a workspace file and a plan whose one step changes it in two
// places far apart: two hunks.
func twoHunks(t *testing.T) (ws, planPath string) {
	ws = t.TempDir()
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		b.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	os.WriteFile(filepath.Join(ws, "f.txt"), []byte(b.String()), 0o644)
	planPath = writePlan(t, `{"steps":[{"id":"two","tool":"edit_file","args":{"path":"f.txt","edits":[
		{"oldText":"line 2\n","newText":"line TWO\n"},{"oldText":"line 28\n","newText":"line TWENTY-EIGHT\n"}]}}]}`)
	return ws, planPath
}

// "s" splits the change set into hunks, as git add -p: the first is kept,
// the second left out, through the one review core.
func TestTermReviewSplitPerHunk(t *testing.T) {
	ws, p := twoHunks(t)
	r := startPTY(t, nil, "run", p, "--workspace", ws, "--state-dir", t.TempDir())
	at := r.waitFor(applyPrompt, 0)
	r.send("s\n")
	at = r.waitFor("apply this hunk (1/2)?", at)
	r.send("y\n")
	r.waitFor("apply this hunk (2/2)?", at)
	r.send("n\n")
	if code := r.wait(); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, r.tail())
	}
	got := readFile(t, filepath.Join(ws, "f.txt"))
	if !strings.Contains(got, "line TWO\n") || strings.Contains(got, "TWENTY-EIGHT") || !strings.Contains(got, "line 28\n") {
		t.Errorf("after y, n on the hunks f.txt is:\n%s", got)
	}
	// The step did part of its work: completed, with a note, and the
	// change is listed as partly applied, not as simply applied.
	txt := r.text()
	if !strings.Contains(txt, "change partly applied: 1 of 2 hunk(s) rejected") ||
		!strings.Contains(txt, "Partly applied change sets (some hunks rejected; see the step's note): `") ||
		strings.Contains(txt, "\nChange sets: ") {
		t.Errorf("the summary does not say the change was partly applied:\n%s", r.tail())
	}
}

// A change rejected with "n" ends its step skipped ("change rejected"),
// lists the change as rejected, and the run is partial (exit 3).
func TestTermRejectedChangeSkipsStepAndRunIsPartial(t *testing.T) {
	ws, p := twoHunks(t)
	r := startPTY(t, nil, "run", p, "--workspace", ws, "--state-dir", t.TempDir())
	at := r.waitFor(applyPrompt, 0)
	r.send("n\n")
	r.waitFor("reason (optional, Enter to skip):", at)
	r.send("not now\n")
	if code := r.wait(); code != exitPartial {
		t.Fatalf("exit %d, want 3:\n%s", code, r.tail())
	}
	txt := r.text()
	for _, want := range []string{"– two skipped: change rejected: not now", "| two | skipped |", "Rejected change sets (not applied):", "**Status:** partial"} {
		if !strings.Contains(txt, want) {
			t.Errorf("output lacks %q:\n%s", want, r.tail())
		}
	}
	if strings.Contains(txt, "✓ two") || strings.Contains(txt, "\nChange sets:") {
		t.Errorf("the rejected step or change is shown as done:\n%s", r.tail())
	}
}

// "e" opens the change as a patch in $EDITOR: what the user changed in the
// + lines is what is written; a patch emptied applies nothing.
func TestTermReviewEditInEditor(t *testing.T) {
	ws, p := twoHunks(t)
	ed := filepath.Join(t.TempDir(), "ed.sh")
	os.WriteFile(ed, []byte("#!/bin/sh\nsed -i 's/^+line TWO$/+line 2, edited by hand/' \"$1\"\n"), 0o755)
	r := startPTY(t, []string{"EDITOR=" + ed, "VISUAL="}, "run", p, "--workspace", ws, "--state-dir", t.TempDir())
	r.waitFor(applyPrompt, 0)
	r.send("e\n")
	if code := r.wait(); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, r.tail())
	}
	got := readFile(t, filepath.Join(ws, "f.txt"))
	if !strings.Contains(got, "line 2, edited by hand\n") || !strings.Contains(got, "line TWENTY-EIGHT\n") || strings.Contains(got, "line TWO") {
		t.Errorf("after editing the patch f.txt is:\n%s", got)
	}

	ws, p = twoHunks(t)
	before := readFile(t, filepath.Join(ws, "f.txt"))
	empty := filepath.Join(t.TempDir(), "empty.sh")
	os.WriteFile(empty, []byte("#!/bin/sh\n: > \"$1\"\n"), 0o755)
	r = startPTY(t, []string{"EDITOR=" + empty, "VISUAL="}, "run", p, "--workspace", ws, "--state-dir", t.TempDir())
	r.waitFor(applyPrompt, 0)
	r.send("e\n")
	if code := r.wait(); code != exitPartial {
		t.Fatalf("emptied patch: exit %d, want 3:\n%s", code, r.tail())
	}
	if got := readFile(t, filepath.Join(ws, "f.txt")); got != before {
		t.Errorf("an emptied patch changed f.txt:\n%s", got)
	}
	if !strings.Contains(r.text(), "change rejected") {
		t.Errorf("the step is not skipped as rejected:\n%s", r.tail())
	}
}

// The status line redraws with no event: during a quiet command the
// spinner turns and the elapsed time counts.
func TestTermStatusLineTicksWithoutEvents(t *testing.T) {
	if tickEvery > 250e6 {
		t.Fatalf("tickEvery is %s: the status line must redraw at least 4 times a second", tickEvery)
	}
	ws := t.TempDir()
	p := writePlan(t, `{"steps":[{"id":"quiet","tool":"run_command","args":{"command":"while [ ! -f go ]; do sleep 0.05; done"}}]}`)
	r := startPTY(t, nil, "run", p, "--workspace", ws, "--state-dir", t.TempDir(), "--yes")
	at := r.waitFor("running quiet", 0)
	// Eight redraws with different spinner frames and elapsed times,
	// while the command prints nothing and no event arrives.
	frames := map[string]bool{}
	re := regexp.MustCompile(`([⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]) [█░]+ +\d+% 0/1 · running quiet · ([0-9.]+m?s)`)
	for len(frames) < 8 {
		at = r.waitFor("running quiet", at)
		for _, m := range re.FindAllStringSubmatch(r.text(), -1) {
			frames[m[1]+m[2]] = true
		}
	}
	os.WriteFile(filepath.Join(ws, "go"), nil, 0o644)
	if code := r.wait(); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, r.tail())
	}
}

// The first Ctrl-C says what it waits for; the second kills every process
// group the run started, even a command (and its child) that ignores
// SIGTERM: none survives.
func TestTermSecondCtrlCKillsEveryCommand(t *testing.T) {
	ws := t.TempDir()
	p := writePlan(t, `{"steps":[{"id":"stubborn","tool":"run_command","args":{"command":"trap '' TERM; sleep 300 & echo $! > child.pid; sh -c 'echo $PPID' > shell.pid; wait"}}]}`)
	r := startPTY(t, nil, "run", p, "--workspace", ws, "--state-dir", t.TempDir(), "--yes")
	pids, at := r.waitPIDs(ws, "running stubborn", "shell.pid", "child.pid")
	r.send("\x03")
	at = r.waitFor("cancelling: waiting up to 5s for 1 command to stop", at)
	r.send("\x03")
	r.waitFor("killed 1 command", at)
	if code := r.wait(); code != exitCancelled {
		t.Fatalf("exit %d, want 130:\n%s", code, r.tail())
	}
	if !strings.Contains(r.text(), "**Error:** interrupted (Ctrl-C)") {
		t.Errorf("the summary's error does not say Ctrl-C stopped the run:\n%s", r.tail())
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d survived the second Ctrl-C", pid)
		}
	}
}

// Closing the terminal (SIGHUP) stops the run and kills its commands at
// once, even one that ignores SIGTERM: none survives the closed window.
func TestTermHangupKillsEveryCommand(t *testing.T) {
	ws := t.TempDir()
	p := writePlan(t, `{"steps":[{"id":"stubborn","tool":"run_command","args":{"command":"trap '' TERM HUP; sleep 300 & echo $! > child.pid; sh -c 'echo $PPID' > shell.pid; wait"}}]}`)
	state := t.TempDir()
	r := startPTY(t, nil, "run", p, "--workspace", ws, "--state-dir", state, "--yes")
	pids, _ := r.waitPIDs(ws, "running stubborn", "shell.pid", "child.pid")
	r.tty.Close() // the terminal window is closed: the kernel sends SIGHUP
	r.wait()
	for _, pid := range survivors(pids) {
		t.Errorf("process %d survived the closed terminal", pid)
	}
	// The run is recorded as cancelled, saying why.
	out := agentd(t, "", "runs", "--workspace", ws, "--state-dir", state)
	if !strings.Contains(out.stdout, "cancelled") {
		t.Errorf("agentd runs after the hangup:\n%s%s", out.stdout, out.stderr)
	}
}

// Ctrl-C kills git's whole process group: a pre-commit hook that ignores
// SIGTERM (and its child) does not survive agentd. git is counted among the
// commands the first Ctrl-C waits for, and killed at once (a git command is
// never left half-way on purpose, so there is no grace period).
func TestTermCtrlCKillsGitHooks(t *testing.T) {
	ws := t.TempDir()
	pidDir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.name", "Test"},
		{"config", "user.email", "test@example.com"},
		{"config", "commit.gpgsign", "false"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	hook := "#!/bin/sh\ntrap '' TERM\nsleep 300 & echo $! > " + pidDir + "/child.pid\necho $$ > " + pidDir + "/hook.pid\nwait\n"
	if err := os.WriteFile(filepath.Join(ws, ".git", "hooks", "pre-commit"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	if out, err := exec.Command("git", "-C", ws, "add", "a.txt").CombinedOutput(); err != nil {
		t.Fatalf("git add: %v\n%s", err, out)
	}
	p := writePlan(t, `{"steps":[{"id":"commit","tool":"git","args":{"action":"commit","message":"m"}}]}`)
	r := startPTY(t, nil, "run", p, "--workspace", ws, "--state-dir", t.TempDir(), "--yes")
	pids, at := r.waitPIDs(pidDir, "running commit", "hook.pid", "child.pid")
	r.send("\x03")
	r.waitFor("cancelling: waiting up to 5s for 1 command to stop", at)
	if code := r.wait(); code != exitCancelled {
		t.Fatalf("exit %d, want 130:\n%s", code, r.tail())
	}
	// The hook's shell is reparented when git dies; survivors gives init
	// a moment to reap it.
	for _, pid := range survivors(pids) {
		t.Errorf("git hook process %d survived the second Ctrl-C", pid)
	}
}

// waitPIDs waits (while the status line shows running) until the run's
// command has written each of files in dir with a process id, and returns
// them and where the output is at. Whatever the test does next, the
// processes are killed at its end.
func (r *ptyRun) waitPIDs(dir, running string, files ...string) ([]int, int) {
	r.t.Helper()
	at := r.waitFor(running, 0)
	var pids []int
	r.t.Cleanup(func() { // whatever happens, leave nothing running
		for _, pid := range pids {
			if alive(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	for _, f := range files {
		for i := 0; ; i++ {
			b, _ := os.ReadFile(filepath.Join(dir, f))
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				pids = append(pids, n)
				break
			}
			if i > 400 { // 400 redraws of the status line: about a minute
				r.t.Fatalf("the command did not write %s (%q):\n%s", f, b, r.tail())
			}
			at = r.waitFor(running, at)
		}
	}
	return pids, at
}

// survivors returns the processes of pids still alive once those that
// are going have had up to 5 s to go (a liveness poll, not a timing
// assertion: a process killed is reaped by init in its own time).
func survivors(pids []int) []int {
	var out []int
	for _, pid := range pids {
		for i := 0; i < 100 && alive(pid); i++ {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// alive reports whether pid is a live process (not gone, not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// With a model, the status line shows the tokens and cost used so far.
func TestTermStatusLineShowsTokens(t *testing.T) {
	srv := fakemodel.New()
	srv.Push(fakemodel.Reply{Text: "a thought", InputTokens: 300, OutputTokens: 21})
	modelEnv(t, srv)
	ws := t.TempDir()
	p := writePlan(t, `{"steps":[{"id":"think","kind":"llm","prompt":"think"},
		{"id":"wait","tool":"run_command","dependsOn":["think"],"args":{"command":"while [ ! -f go ]; do sleep 0.05; done"}}]}`)
	r := startPTY(t, nil, "run", p, "--workspace", ws, "--state-dir", t.TempDir(), "--yes")
	r.waitFor("running wait · ", 0)
	r.waitFor(" · 321 tokens $", 0)
	os.WriteFile(filepath.Join(ws, "go"), nil, 0o644)
	if code := r.wait(); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, r.tail())
	}
}

// Ctrl-C at a review prompt cancels the run at once: nothing is applied.
func TestTermCtrlCAtPromptCancels(t *testing.T) {
	ws := demoCopy(t)
	before := readFile(t, filepath.Join(ws, "main.go"))
	r := startPTY(t, nil, "run", plan(t, "refactor.json"), "--workspace", ws, "--state-dir", t.TempDir())
	at := r.waitFor(applyPrompt, 0)
	r.send("\x03")
	r.waitFor("cancelling", at)
	if code := r.wait(); code != exitCancelled {
		t.Fatalf("exit %d, want 130:\n%s", code, r.tail())
	}
	if got := readFile(t, filepath.Join(ws, "main.go")); got != before {
		t.Errorf("main.go changed after Ctrl-C at the prompt:\n%s", got)
	}
	// The change sets proposed before the Ctrl-C were never applied: the
	// summary says so and lists none as done.
	txt := r.text()
	if !strings.Contains(txt, "Change sets not applied (the run stopped before they were decided") ||
		strings.Contains(txt, "\nChange sets: ") || !strings.Contains(txt, "**Error:** interrupted (Ctrl-C)") {
		t.Errorf("the summary of a run stopped at a prompt:\n%s", r.tail())
	}
}
