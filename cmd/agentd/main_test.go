package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// agentdBin is the binary under test, built once by TestMain.
var agentdBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentd-bin-")
	if err != nil {
		panic(err)
	}
	agentdBin = filepath.Join(dir, "agentd")
	out, err := exec.Command("go", "build", "-race", "-o", agentdBin, ".").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		os.RemoveAll(dir)
		panic("building agentd: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// repoRoot is the checkout's root (two levels up from cmd/agentd).
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// demoCopy copies examples/demo to a temporary workspace.
func demoCopy(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "demo")
	src := filepath.Join(repoRoot(t), "examples", "demo")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		return os.WriteFile(target, data, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

type result struct {
	code   int
	stdout string
	stderr string
}

func agentd(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(agentdBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	return runCmd(t, cmd, nil)
}

// runCmd runs cmd with NO_COLOR=1 and env added to this process's
// environment, and returns its exit code and output; a command that cannot
// be started fails the test.
func runCmd(t *testing.T, cmd *exec.Cmd, env []string) result {
	t.Helper()
	cmd.Env = append(append(os.Environ(), "NO_COLOR=1"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return result{code, out.String(), errb.String()}
}

func plan(t *testing.T, name string) string {
	return filepath.Join(repoRoot(t), "examples", "plans", name)
}

func writePlan(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// examplePlans is every plan in examples/plans (at least 3, or the test
// fails: a test over none would pass on nothing).
func examplePlans(t *testing.T) []string {
	t.Helper()
	plans, _ := filepath.Glob(filepath.Join(repoRoot(t), "examples", "plans", "*"))
	if len(plans) < 3 {
		t.Fatalf("want at least 3 example plans, found %d", len(plans))
	}
	return plans
}

func TestValidateExamples(t *testing.T) {
	for _, p := range examplePlans(t) {
		r := agentd(t, "", "validate", p)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "valid: ") {
			t.Errorf("validate %s: exit %d\n%s%s", filepath.Base(p), r.code, r.stdout, r.stderr)
		}
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	p := writePlan(t, `{"steps": [
	  {"id": "a", "tool": "read_file", "args": {"path": "x"}, "dependsOn": ["b"]},
	  {"id": "b", "tool": "read_file", "args": {"path": "x"}, "dependsOn": ["a"]},
	  {"id": "a", "tool": "read_file", "args": {"path": "y"}},
	  {"id": "c", "tool": "no_such_tool"},
	  {"id": "d", "tool": "read_file", "args": {}, "dependsOn": ["ghost"], "timeout": "soon"}
	]}`)
	r := agentd(t, "", "validate", p)
	if r.code != exitUsage {
		t.Fatalf("exit %d, want 2 (as from agentd run)\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	for _, l := range lines {
		if !strings.HasPrefix(l, p+": ") {
			t.Errorf("line %q does not start with the plan's name", l)
		}
	}
	for _, want := range []string{"step a", "step c", "step d: dependsOn", "step d: timeout", "no_such_tool", "ghost"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	if len(lines) < 6 {
		t.Errorf("want every problem (at least 6: duplicate, cycle, unknown tool, missing path, unknown dep, bad timeout), got %d:\n%s", len(lines), r.stdout)
	}
}

func TestRunRefactorDemo(t *testing.T) {
	ws := demoCopy(t)
	r := agentd(t, "", "run", plan(t, "refactor.json"), "--workspace", ws, "--yes", "--state-dir", t.TempDir())
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got := readFile(t, filepath.Join(ws, "greet", "greet.go")); !strings.Contains(got, "func Greet(name string)") || strings.Contains(got, "Hello(") {
		t.Errorf("greet.go not refactored:\n%s", got)
	}
	if got := readFile(t, filepath.Join(ws, "main.go")); !strings.Contains(got, "greet.Greet(*name)") {
		t.Errorf("main.go not refactored:\n%s", got)
	}
	for _, want := range []string{"completed", "rename_def", "+func Greet(name string) string {"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	// The checkout's demo is untouched.
	if got := readFile(t, filepath.Join(repoRoot(t), "examples", "demo", "greet", "greet.go")); !strings.Contains(got, "func Hello(") {
		t.Errorf("examples/demo was changed")
	}
}

func TestRunPartialExitCode(t *testing.T) {
	ws := demoCopy(t)
	r := agentd(t, "", "run", plan(t, "parallel.json"), "--workspace", ws, "--yes", "--state-dir", t.TempDir())
	if r.code != exitPartial {
		t.Fatalf("exit %d, want %d (partial)\nstdout:\n%s\nstderr:\n%s", r.code, exitPartial, r.stdout, r.stderr)
	}
	if got := readFile(t, filepath.Join(ws, "SURVEY.md")); !strings.Contains(got, "greet/greet.go") {
		t.Errorf("SURVEY.md lacks the Go files:\n%s", got)
	}
	if !strings.Contains(r.stdout, "changelog_head blocked") {
		t.Errorf("output does not show the blocked dependent:\n%s", r.stdout)
	}
}

func TestRunInvalidPlanExits2(t *testing.T) {
	p := writePlan(t, `{"steps": [{"id": "x", "tool": "nope"}]}`)
	r := agentd(t, "", "run", p, "--workspace", t.TempDir(), "--yes")
	if r.code != exitUsage || !strings.Contains(r.stderr, "step x") {
		t.Fatalf("exit %d, want 2 with the problem named\n%s", r.code, r.stderr)
	}
	if r := agentd(t, "", "run"); r.code != exitUsage {
		t.Fatalf("run without a plan: exit %d, want 2", r.code)
	}
	if r := agentd(t, "", "run", p, "--review", "sometimes"); r.code != exitUsage {
		t.Fatalf("bad --review: exit %d, want 2", r.code)
	}
}

// jsonEvents parses --json output into event maps.
func jsonEvents(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("--json wrote a line that is not JSON: %q", sc.Text())
		}
		evs = append(evs, m)
	}
	return evs
}

func TestRunReviewBeforeAnsweredOnStdin(t *testing.T) {
	ws := demoCopy(t)
	// Sequential, so the change sets come in file order: rename_def (yes),
	// rename_tests (no, with a reason), rename_main (yes). rename_tests is
	// then skipped ("change rejected"), so the test step that depends on it
	// is blocked and the run is partial (exit 3), never completed.
	answers := "y\nn\nnot this one\ny\n"
	r := agentd(t, answers, "run", plan(t, "refactor.json"), "--workspace", ws, "--sequential",
		"--review", "before", "--json", "--state-dir", t.TempDir())
	if r.code != exitPartial {
		t.Fatalf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got := readFile(t, filepath.Join(ws, "greet", "greet.go")); !strings.Contains(got, "func Greet(") {
		t.Errorf("accepted change not applied:\n%s", got)
	}
	if got := readFile(t, filepath.Join(ws, "greet", "greet_test.go")); strings.Contains(got, "TestGreet") {
		t.Errorf("rejected change was applied:\n%s", got)
	}
	evs := jsonEvents(t, r.stdout)
	var proposed, rejected, testBlocked bool
	for _, e := range evs {
		switch {
		case e["type"] == "changeProposed":
			proposed = true
		case e["type"] == "stepSkipped" && e["stepId"] == "rename_tests":
			rejected = e["reason"] == "change rejected: not this one"
		case e["type"] == "stepBlocked" && e["stepId"] == "test":
			testBlocked = true
		}
	}
	if !proposed || !rejected || !testBlocked {
		t.Errorf("events lack changeProposed (%v), rename_tests skipped as rejected (%v) or the blocked test step (%v)", proposed, rejected, testBlocked)
	}
	if last := evs[len(evs)-1]; last["type"] != "result" {
		t.Errorf("last JSON line is %v, want the result", last["type"])
	}
	if !strings.Contains(r.stdout, "not this one") {
		t.Errorf("the rejection's reason is not in the step's result")
	}
}

func TestRunRollbackOnFailure(t *testing.T) {
	ws := demoCopy(t)
	p := writePlan(t, `{"steps": [
	  {"id": "write", "tool": "write_file", "args": {"path": "NOTES.md", "content": "temporary\n"}},
	  {"id": "edit", "tool": "edit_file", "args": {"path": "config.json", "edits": [{"oldText": "1.4.2", "newText": "9.9.9"}]}},
	  {"id": "fail", "tool": "run_command", "args": {"command": "exit 4"}, "dependsOn": ["write", "edit"]}
	]}`)
	before := readFile(t, filepath.Join(ws, "config.json"))
	r := agentd(t, "", "run", p, "--workspace", ws, "--yes", "--rollback-on-failure", "--state-dir", t.TempDir())
	if r.code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "NOTES.md")); !os.IsNotExist(err) {
		t.Errorf("NOTES.md survives the rollback (err=%v)", err)
	}
	if got := readFile(t, filepath.Join(ws, "config.json")); got != before {
		t.Errorf("config.json not restored:\n%s", got)
	}
}

func TestRunReleasePlanYAML(t *testing.T) {
	ws := demoCopy(t)
	r := agentd(t, "", "run", plan(t, "release.yaml"), "--workspace", ws, "--yes", "--state-dir", t.TempDir())
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	cfg := readFile(t, filepath.Join(ws, "config.json"))
	// json_patch changed the version and kept the keys' order and indentation.
	if !strings.Contains(cfg, "\"version\": \"2.0.0\"") || strings.Index(cfg, "\"name\"") > strings.Index(cfg, "\"version\"") ||
		!strings.Contains(cfg, "\n  \"greeting\": {\n    \"default\": \"Hello\",") {
		t.Errorf("config.json:\n%s", cfg)
	}
	if !strings.Contains(readFile(t, filepath.Join(ws, "version.go")), `const Version = "2.0.0"`) {
		t.Errorf("version.go not bumped")
	}
	if !strings.Contains(readFile(t, filepath.Join(ws, "CHANGELOG.md")), "## 2.0.0") {
		t.Errorf("the changelog step (when the tests passed) did not run")
	}
}

// A plan with a model step and no model is refused before anything runs
// (exit 2, the step named, how to configure a model), not at the step;
// --dry-run still works without a model.
func TestRunModelStepWithoutModelExits2(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("AGENTD_MODEL", "")
	ws := t.TempDir()
	pf := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(pf, []byte(`{"steps":[{"id":"w","tool":"write_file","args":{"path":"first.txt","content":"x\n"}},`+
		`{"id":"think","kind":"llm","prompt":"summarise","dependsOn":["w"]}]}`), 0o644)
	r := agentd(t, "", "run", pf, "--workspace", ws, "--yes", "--review", "none", "--state-dir", t.TempDir())
	if r.code != exitUsage {
		t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{pf + ": step think: ", "needs a model", "--model PROVIDER:MODEL", "AGENTD_MODEL"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "first.txt")); err == nil {
		t.Error("step w ran before the plan was refused")
	}
	if r := agentd(t, "", "run", pf, "--workspace", ws, "--dry-run", "--state-dir", t.TempDir()); r.code != exitOK || !strings.Contains(r.stdout, "would ask the model") {
		t.Errorf("--dry-run without a model: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestRunRequestWithoutModelExits2(t *testing.T) {
	cfg := t.TempDir()
	cmd := exec.Command(agentdBin, "run", "--request", "add a flag", "--workspace", t.TempDir())
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+cfg, "AGENTD_MODEL=", "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitUsage {
		t.Fatalf("exit %v, want 2\n%s", err, out)
	}
	for _, want := range []string{"no model configured", "AGENTD_MODEL=", "OPENAI_BASE_URL=http://localhost"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("message lacks %q:\n%s", want, out)
		}
	}
}
