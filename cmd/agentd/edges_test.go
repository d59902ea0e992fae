package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/fakemodel"
)

// ignoredWorkspace is the issue 24 repro: a git repository whose
// .gitignore lists .env, node_modules/ and build/.
func ignoredWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	for p, c := range map[string]string{
		".gitignore":                    ".env\nnode_modules/\nbuild/\n",
		".env":                          "SECRET=hunter2\n",
		"node_modules/leftpad/index.js": "module.exports = 1\n",
		"main.go":                       "package main\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "-C", ws, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return ws
}

const ignoredEditsPlan = `{"steps":[
  {"id":"env","tool":"edit_file","args":{"path":".env","edits":[{"oldText":"hunter2","newText":"changed"}]}},
  {"id":"dep","tool":"edit_file","args":{"path":"node_modules/leftpad/index.js","edits":[{"oldText":"1","newText":"2"}]}},
  {"id":"out","tool":"write_file","args":{"path":"build/agent.txt","content":"agent\n"}}%s
]}`

func checkIgnoredRestored(t *testing.T, ws, out string) {
	t.Helper()
	for p, want := range map[string]string{".env": "SECRET=hunter2\n", "node_modules/leftpad/index.js": "module.exports = 1\n"} {
		if got := readFile(t, filepath.Join(ws, p)); got != want {
			t.Errorf("%s = %q after the undo, want %q\n%s", p, got, want, out)
		}
	}
	if fileExists(ws, "build/agent.txt") {
		t.Errorf("build/agent.txt, created by the run, survived the undo\n%s", out)
	}
}

// Every file the agent's own tools change is revertible, ignored or not
// (issue 24, point 1): agentd undo brings .env, node_modules/... and
// build/... back, and never says the workspace already matches.
func TestUndoRevertsIgnoredFiles(t *testing.T) {
	ws, stateDir := ignoredWorkspace(t), t.TempDir()
	p := writePlan(t, strings.Replace(ignoredEditsPlan, "%s", "", 1))
	r := agentd(t, "", "run", p, "--workspace", ws, "--state-dir", stateDir, "--yes", "--review", "none")
	if r.code != 0 || readFile(t, filepath.Join(ws, ".env")) != "SECRET=changed\n" || !fileExists(ws, "build/agent.txt") {
		t.Fatalf("agentd run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	u := agentd(t, "", "undo", "--workspace", ws, "--state-dir", stateDir)
	out := u.stdout + u.stderr
	if u.code != 0 || strings.Contains(out, "already matches") {
		t.Fatalf("agentd undo: exit %d\n%s", u.code, out)
	}
	checkIgnoredRestored(t, ws, out)
}

// --rollback-on-failure brings the ignored files back too.
func TestRollbackRevertsIgnoredFiles(t *testing.T) {
	ws := ignoredWorkspace(t)
	p := writePlan(t, strings.Replace(ignoredEditsPlan, "%s", `,
  {"id":"fail","tool":"run_command","args":{"command":"exit 1"},"dependsOn":["env","dep","out"]}`, 1))
	r := agentd(t, "", "run", p, "--workspace", ws, "--state-dir", t.TempDir(), "--yes", "--review", "none", "--rollback-on-failure")
	if r.code == 0 {
		t.Fatalf("agentd run succeeded, want a failure\n%s%s", r.stdout, r.stderr)
	}
	checkIgnoredRestored(t, ws, r.stdout+r.stderr)
}

// The state dir is never inside the workspace nor inside its .git, from a
// flag or the environment: refused before anything is written, saying
// where to put it (issue 24, point 2).
func TestStateDirInsideWorkspaceRefused(t *testing.T) {
	ws := ignoredWorkspace(t)
	p := writePlan(t, `{"steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"x\n"}}]}`)
	for _, tc := range []struct {
		args []string
		env  string
		dir  string
	}{
		{args: []string{"run", p, "--yes", "--state-dir", filepath.Join(ws, "state")}, dir: "state"},
		{args: []string{"run", p, "--yes"}, env: filepath.Join(ws, ".git", "agentd-state"), dir: ".git/agentd-state"},
		{args: []string{"undo", "--state-dir", filepath.Join(ws, "state")}, dir: "state"},
		{args: []string{"snapshot", "list", "--state-dir", filepath.Join(ws, "sub", "state")}, dir: "sub"},
		// agentd plan writes the repository map's cache to the state dir.
		{args: []string{"plan", "rename a", "--state-dir", filepath.Join(ws, "state")}, dir: "state"},
	} {
		cmd := exec.Command(agentdBin, append(tc.args, "--workspace", ws)...)
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		if tc.env != "" {
			cmd.Env = append(cmd.Env, "AGENTD_STATE_DIR="+tc.env)
		}
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "put the state dir outside the workspace") {
			t.Errorf("agentd %v (AGENTD_STATE_DIR=%s): %v, want a refusal saying where to put it\n%s", tc.args, tc.env, err, out)
		}
		if fileExists(ws, tc.dir) || fileExists(ws, "a.txt") {
			t.Errorf("agentd %v wrote %s or a.txt in the workspace\n%s", tc.args, tc.dir, out)
		}
	}
}

// Without --workspace, a state dir inside the current folder and a bad
// flag are refused before agentd asks whether that folder is the
// workspace: answering would be for nothing.
func TestRunRefusesBeforeAskingForTheWorkspace(t *testing.T) {
	ws := ignoredWorkspace(t)
	p := writePlan(t, `{"steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"x\n"}}]}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", p, "--state-dir", filepath.Join(ws, "state")}, "put the state dir outside the workspace"},
		{[]string{"run", p, "--parallel", "0"}, "--parallel must be at least 1"},
	} {
		cmd := exec.Command(agentdBin, tc.args...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) || strings.Contains(string(out), "may not be the workspace") {
			t.Errorf("agentd %v in %s: %v, want %q before any workspace question\n%s", tc.args, ws, err, tc.want, out)
		}
		if fileExists(ws, "state") || fileExists(ws, "a.txt") {
			t.Errorf("agentd %v wrote in the workspace\n%s", tc.args, out)
		}
	}
}

// A workspace of / or the home directory is refused unless
// --allow-broad-workspace confirms it, and every run names its workspace
// in its first line (issue 24, point 6).
func TestBroadWorkspaceRefused(t *testing.T) {
	home := t.TempDir()
	p := writePlan(t, `{"steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"x\n"}}]}`)
	for _, dir := range []string{"/", home} {
		cmd := exec.Command(agentdBin, "run", p, "--yes", "--dry-run", "--workspace", dir, "--state-dir", t.TempDir())
		cmd.Env = append(os.Environ(), "NO_COLOR=1", "HOME="+home)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--allow-broad-workspace") {
			t.Errorf("agentd run --workspace %s: %v, want a refusal naming --allow-broad-workspace\n%s", dir, err, out)
		}
	}
	cmd := exec.Command(agentdBin, "run", p, "--yes", "--workspace", home, "--allow-broad-workspace", "--state-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil || !fileExists(home, "a.txt") {
		t.Fatalf("agentd run --allow-broad-workspace: %v\n%s", err, out)
	}
	real, _ := filepath.EvalSymlinks(home)
	if first := strings.SplitN(string(out), "\n", 2)[0]; !strings.Contains(first, "▶ run ") || !strings.Contains(first, " in "+real) {
		t.Errorf("the run's first line %q does not name the workspace %s", first, real)
	}
}

// snapshot restore --overwrite leaves alone, and names, a file that grew
// past the snapshot size limit, and its "undo with" line restores
// everything the restore changed (issue 24, point 3).
func TestOverwriteKeepsBigFile(t *testing.T) {
	ws, stateDir := t.TempDir(), t.TempDir()
	for p, c := range map[string]string{"big.dat": "small\n", "a.txt": "a0\n"} {
		if err := os.WriteFile(filepath.Join(ws, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := agentd(t, "", "snapshot", "create", "--json", "--workspace", ws, "--state-dir", stateDir)
	_, rest, _ := strings.Cut(c.stdout, `"id": "`)
	id, _, _ := strings.Cut(rest, `"`)
	if c.code != 0 || id == "" {
		t.Fatalf("snapshot create: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	big := strings.Repeat("0123456789abcdef", (21<<20)/16) // 21 MiB, over the 20 MiB limit
	if err := os.WriteFile(filepath.Join(ws, "big.dat"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := agentd(t, "", "snapshot", "restore", id, "--overwrite", "--workspace", ws, "--state-dir", stateDir)
	if got := readFile(t, filepath.Join(ws, "big.dat")); got != big {
		t.Fatalf("big.dat was replaced (%d bytes now)\n%s%s", len(got), r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "left alone: big.dat") || readFile(t, filepath.Join(ws, "a.txt")) != "a0\n" {
		t.Fatalf("restore --overwrite: exit %d, want a.txt restored and big.dat named as left alone\n%s%s", r.code, r.stdout, r.stderr)
	}
	u := paste(t, t.TempDir(), hintAfter(t, r.stdout, "undo with: "))
	if u.code != 0 || readFile(t, filepath.Join(ws, "a.txt")) != "a1\n" || readFile(t, filepath.Join(ws, "big.dat")) != big {
		t.Fatalf("the undo line did not restore what the restore changed: exit %d\n%s%s", u.code, u.stdout, u.stderr)
	}
}

// Deleting a file while its review prompt is open, then answering y: the
// change hits a conflict, so the step fails (never ✓), the dependent step
// does not run and the run does not end completed (issue 24, point 4).
func TestConflictOnAcceptFailsStepFromTerminal(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := writePlan(t, `{"steps":[
	  {"id":"edit","tool":"edit_file","args":{"path":"a.txt","edits":[{"oldText":"one","newText":"two"}]}},
	  {"id":"next","tool":"write_file","args":{"path":"next.txt","content":"x\n"},"dependsOn":["edit"]}
	]}`)
	cmd := exec.Command(agentdBin, "run", p, "--workspace", ws, "--state-dir", t.TempDir(), "--review", "before")
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
	if err := os.Remove(filepath.Join(ws, "a.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write([]byte("y\n")); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	err = cmd.Wait()
	text := out.String()
	if err == nil || strings.Contains(text, "✓ edit") || fileExists(ws, "next.txt") {
		t.Fatalf("agentd run: %v; want the step failed, not ✓, and next not run\n%s", err, text)
	}
	if !strings.Contains(text, "conflict") {
		t.Errorf("the conflict is not reported:\n%s", text)
	}
}

// agentd run --dry-run with a model configured makes no model call, not
// even to recover a failed step (issue 24, point 5): the fake model counts
// the requests, and the same plan run for real does reach it.
func TestDryRunCallsNoModelFromTerminal(t *testing.T) {
	srv := fakemodel.New()
	srv.Handle(func(fakemodel.Request) fakemodel.Reply {
		return fakemodel.Reply{Text: `{"action":"fail_gracefully","reason":"cannot"}`}
	})
	modelEnv(t, srv)
	ws := t.TempDir()
	p := writePlan(t, `{"steps":[
	  {"id":"ask","kind":"llm","prompt":"say hi"},
	  {"id":"missing","tool":"read_file","args":{"path":"no/such/file.txt"}}
	]}`)
	r := agentd(t, "", "run", p, "--workspace", ws, "--yes", "--dry-run", "--state-dir", t.TempDir())
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("agentd run --dry-run made %d model request(s), want none\n%s%s", n, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "0 model call(s)") {
		t.Errorf("the summary does not say 0 model calls:\n%s", r.stdout)
	}
	agentd(t, "", "run", p, "--workspace", ws, "--yes", "--state-dir", t.TempDir())
	if n := len(srv.Requests()); n == 0 {
		t.Errorf("the real run made no model request: the dry run's zero proves nothing")
	}
}

// A plan's read_file of .env asks first at the terminal, naming the file;
// answered n, the step is skipped, the secret is not shown and the run is
// partial (issue 24, point 7).
func TestSensitiveReadAsksFromTerminal(t *testing.T) {
	ws := t.TempDir()
	for p, c := range map[string]string{".env": "SECRET=hunter2\n", "notes.txt": "hello\n"} {
		if err := os.WriteFile(filepath.Join(ws, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := writePlan(t, `{"steps":[
	  {"id":"notes","tool":"read_file","args":{"path":"notes.txt"}},
	  {"id":"env","tool":"read_file","args":{"path":".env"},"dependsOn":["notes"]}
	]}`)
	r := agentd(t, "n\n", "run", p, "--workspace", ws, "--state-dir", t.TempDir(), "--review", "none")
	out := r.stdout + r.stderr
	if r.code != exitPartial || strings.Contains(out, "hunter2") || !strings.Contains(strings.ToLower(out), "read .env, a sensitive file") {
		t.Fatalf("agentd run: exit %d, want 3, a question naming .env and no secret shown\n%s", r.code, out)
	}
	// No rule answers a sensitive read, so none is offered.
	if !strings.Contains(out, "allow this read? [y]es [n]o [q]uit") || strings.Contains(out, "[a]lways") {
		t.Fatalf("the sensitive read's prompt offers [a]lways, which would never apply:\n%s", out)
	}
}
