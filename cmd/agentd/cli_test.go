package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/internal/fakemodel"
)

// agentdIn runs the binary as bin (a path or a bare name found on PATH)
// in dir, with extra environment.
func agentdIn(t *testing.T, dir, bin string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if !strings.Contains(bin, "/") {
		// exec.Command looked bin up in this process's PATH; the child
		// must see the same name in argv[0], as a shell would run it.
		cmd.Args[0] = bin
		for _, e := range env {
			if p, ok := strings.CutPrefix(e, "PATH="); ok {
				if lp, err := lookIn(p, bin); err == nil {
					cmd.Path, cmd.Err = lp, nil
				}
			}
		}
	}
	cmd.Dir = dir
	return runCmd(t, cmd, env)
}

func lookIn(path, name string) (string, error) {
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}

// TestHelpGoesToStdout: help in every form prints to stdout and exits 0.
func TestHelpGoesToStdout(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"help"}, []string{"run", "undo", "snapshot", "completion"}},
		{[]string{"--help"}, []string{"Available Commands"}},
		{[]string{"-h"}, []string{"Available Commands"}},
		{[]string{"help", "run"}, []string{"agentd run PLAN", "--workspace DIR", "--parallel N", "--review MODE"}},
		{[]string{"run", "--help"}, []string{"agentd run PLAN", "--state-dir DIR"}},
		{[]string{"run", "-h"}, []string{"agentd run PLAN"}},
		{[]string{"help", "snapshot", "restore"}, []string{"agentd snapshot restore ID", "--overwrite", "--path PATH"}},
		{[]string{"snapshot", "restore", "--help"}, []string{"agentd snapshot restore ID"}},
		{[]string{"undo", "--help"}, []string{"agentd undo [RUN]", "--overwrite"}},
		{[]string{"validate", "-h"}, []string{"agentd validate PLAN"}},
		{[]string{"--version"}, []string{"agentd "}},
		{[]string{"-v"}, []string{"agentd "}},
		{[]string{"version"}, []string{"agentd "}},
	} {
		r := agentd(t, "", tc.args...)
		if r.code != 0 || r.stderr != "" {
			t.Errorf("agentd %v: exit %d, stderr %q; want 0 and nothing on stderr", tc.args, r.code, r.stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("agentd %v: stdout lacks %q:\n%s", tc.args, w, r.stdout)
			}
		}
		if strings.Contains(r.stdout, " -review") || strings.Contains(r.stdout, " -workspace") {
			t.Errorf("agentd %v: usage shows single-dash flags:\n%s", tc.args, r.stdout)
		}
	}
	if h := agentd(t, "", "help", "run"); h.stdout == agentd(t, "", "help").stdout {
		t.Errorf("agentd help run prints the top-level usage")
	}
}

// TestUsageErrors: unknown flags and commands, extra and missing arguments
// and conflicting flags exit 2, saying why, with nothing on stdout.
func TestUsageErrors(t *testing.T) {
	p := writePlan(t, `{"steps":[{"id":"r","tool":"read_file","args":{"path":"x"}}]}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "agentd [command]"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"run", p, "--bogus"}, "unknown flag: --bogus"},
		{[]string{"run", "a.json", "b.json"}, `too many arguments ("a.json" "b.json")`},
		{[]string{"run", p, "--sequential", "--parallel", "2"}, "--sequential and --parallel 2 conflict"},
		{[]string{"run"}, "missing the plan file"},
		{[]string{"run", p, "--request", "x"}, "not both"},
		{[]string{"run", p, "--parallel", "many"}, `invalid argument "many"`},
		{[]string{"validate"}, "missing the plan file to check: agentd validate PLAN"},
		{[]string{"snapshot"}, "missing subcommand; use one of: create"},
		{[]string{"snapshot", "frob"}, `unknown subcommand "frob"`},
		{[]string{"snapshot", "show"}, "missing the snapshot ID"},
		{[]string{"rules", "revoke"}, "missing the rule IDs"},
		{[]string{"runs", "a", "b"}, "too many arguments"},
		{[]string{"undo", "a", "b"}, "too many arguments"},
		{[]string{"serve", "extra"}, `unexpected argument "extra"`},
		{[]string{"plan", "  "}, "the request is empty"},
		{[]string{"completion"}, "missing the shell: agentd completion bash|zsh|fish"},
		{[]string{"completion", "tcsh"}, `unknown shell "tcsh"; use one of: bash, zsh, fish`},
		{[]string{"tools", "x"}, `unexpected argument "x"`},
	} {
		r := agentd(t, "", tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("agentd %q: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and %q on stderr only", tc.args, r.code, r.stdout, r.stderr, tc.want)
		}
		if strings.Contains(r.stderr, "Flags:\n\n") || strings.Contains(r.stderr, "flags:\n\n") {
			t.Errorf("agentd %q: an empty flags section:\n%s", tc.args, r.stderr)
		}
	}
}

// TestInvalidPlanSameExitCode: validate and run agree (2) on an invalid
// plan and on a missing one.
func TestInvalidPlanSameExitCode(t *testing.T) {
	bad := writePlan(t, `{"steps":[{"id":"x","tool":"nope"}]}`)
	missing := filepath.Join(t.TempDir(), "none.json")
	for _, p := range []string{bad, missing} {
		v := agentd(t, "", "validate", p)
		r := agentd(t, "", "run", p, "--workspace", t.TempDir(), "--yes", "--state-dir", t.TempDir())
		if v.code != exitUsage || r.code != exitUsage {
			t.Errorf("%s: validate exits %d, run %d; want both 2\n%s%s", filepath.Base(p), v.code, r.code, v.stderr, r.stderr)
		}
	}
}

// TestOldInvocationsStillWork: the single-dash long flags Go's flag
// package accepted, and serve --stdio as vscode-languageclient passes it.
func TestOldInvocationsStillWork(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	if r := agentd(t, "", "snapshot", "create", "-workspace", ws, "-state-dir="+state, "-json"); r.code != 0 || !strings.Contains(r.stdout, `"id"`) {
		t.Fatalf("single-dash flags: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := agentd(t, "", "snapshot", "list", "--workspace", ws, "--state-dir", state); r.code != 0 || !strings.Contains(r.stdout, "manual") {
		t.Fatalf("the snapshot taken with single-dash flags is not listed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A closed stdin ends serve; --stdio must not be a usage error.
	r := agentd(t, "", "serve", "--stdio", "--state-dir", state, "--log-level", "error")
	if r.code == exitUsage || strings.Contains(r.stderr, "unknown flag") {
		t.Fatalf("serve --stdio: exit %d\n%s", r.code, r.stderr)
	}
}

// TestPlanKeepsAmpersands: agentd plan writes "&&" and "<" as they are.
func TestPlanKeepsAmpersands(t *testing.T) {
	srv := fakemodel.New()
	srv.Push(fakemodel.Reply{Text: `{"title":"Build","steps":[{"id":"b","tool":"run_command","args":{"command":"go build ./... && go test ./... > out.txt 2<&1"}}]}`})
	modelEnv(t, srv)
	r := agentd(t, "", "plan", "build and test", "--workspace", t.TempDir())
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "go build ./... && go test ./... > out.txt 2<&1") || strings.Contains(r.stdout, `\u0026`) || strings.Contains(r.stdout, `\u003e`) {
		t.Errorf("the plan's JSON escapes HTML characters:\n%s", r.stdout)
	}
}

// TestMakeInstallAndDemo: make install puts a working agentd in the chosen
// folder and says how to put it on PATH when it is not; make demo says
// where the binary is and how to put it on PATH.
func TestMakeInstallAndDemo(t *testing.T) {
	root := repoRoot(t)
	dest := t.TempDir()
	make := func(env []string, args ...string) result {
		t.Helper()
		cmd := exec.Command("make", append([]string{"-s", "-C", root}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("make %v: %v", args, err)
		}
		return result{code: code, stdout: string(out)}
	}
	r := make(nil, "install", "INSTALL_DIR="+dest)
	if r.code != 0 || !strings.Contains(r.stdout, "is not on PATH") || !strings.Contains(r.stdout, `export PATH="`+dest+`:$PATH"`) {
		t.Fatalf("make install: exit %d\n%s", r.code, r.stdout)
	}
	if v, err := exec.Command(filepath.Join(dest, "agentd"), "--version").Output(); err != nil || !strings.HasPrefix(string(v), "agentd ") {
		t.Fatalf("the installed agentd --version: %q %v", v, err)
	}
	r = make([]string{"PATH=" + dest + ":" + os.Getenv("PATH")}, "install", "INSTALL_DIR="+dest)
	if r.code != 0 || strings.Contains(r.stdout, "not on PATH") {
		t.Fatalf("make install into a folder on PATH: exit %d\n%s", r.code, r.stdout)
	}
	if r := make([]string{"GOBIN=" + dest}, "-n", "install"); !strings.Contains(r.stdout, dest+"/agentd") {
		t.Errorf("make install ignores GOBIN:\n%s", r.stdout)
	}
	d := make(nil, "demo")
	if d.code != 0 || !strings.Contains(d.stdout, "The binary is "+filepath.Join(root, "bin", "agentd")) ||
		!strings.Contains(d.stdout, "make install") || !strings.Contains(d.stdout, "export PATH=") {
		t.Fatalf("make demo: exit %d\n%s", d.code, d.stdout)
	}
}

// TestRunShowsPersonsErrors: the terminal shows a tool's error as written
// for a person, without the advice meant for a model.
func TestRunShowsPersonsErrors(t *testing.T) {
	p := writePlan(t, `{"steps":[{"id":"r","tool":"read_file","args":{"path":"missing.txt"}}]}`)
	r := agentd(t, "", "run", p, "--workspace", t.TempDir(), "--yes", "--state-dir", t.TempDir())
	out := r.stdout + r.stderr
	if r.code != exitFailed || !strings.Contains(out, "missing.txt does not exist") {
		t.Fatalf("exit %d\n%s", r.code, out)
	}
	for _, model := range []string{"list_dir", "search_files"} {
		if strings.Contains(out, model) {
			t.Errorf("the terminal shows advice for a model (%s):\n%s", model, out)
		}
	}
}

// TestToolsLists: agentd tools lists every built-in tool with its kind,
// risk and arguments (the engine's unknown-tool error sends people there).
func TestToolsLists(t *testing.T) {
	r := agentd(t, "", "tools")
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("agentd tools: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^TOOL +KIND +RISK +ARGS$`),
		regexp.MustCompile(`(?m)^read_file +read +low +path endLine\? startLine\?$`),
		regexp.MustCompile(`(?m)^run_command +command +high +command cwd\? `),
		regexp.MustCompile(`(?m)^git +git +medium \(varies\) +action `),
		regexp.MustCompile(`(?m)^json_patch +write +medium +path ops$`),
	} {
		if !want.MatchString(r.stdout) {
			t.Errorf("agentd tools: no line matching %s in:\n%s", want, r.stdout)
		}
	}
	if n := strings.Count(r.stdout, "\n"); n != len(tools.Builtin().List())+1 {
		t.Errorf("agentd tools printed %d lines for %d tools:\n%s", n, len(tools.Builtin().List()), r.stdout)
	}
}

// TestValidateChecksJSONPointers: a json_patch path without its leading /
// is a validation error that names the step and field and says what to
// write, from validate and run alike (exit 2), before anything runs.
func TestValidateChecksJSONPointers(t *testing.T) {
	p := writePlan(t, `{"steps":[{"id":"bump","tool":"json_patch","args":{"path":"config.json","ops":[{"op":"replace","path":"version","value":"2"}]}}]}`)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "config.json"), []byte(`{"version":"1"}`), 0o644)
	want := `step bump: args.ops[0].path: "version" is not a JSON Pointer: it must start with "/" (write "/version")`
	v := agentd(t, "", "validate", p)
	r := agentd(t, "", "run", p, "--workspace", ws, "--yes", "--state-dir", t.TempDir())
	if v.code != exitUsage || !strings.Contains(v.stdout+v.stderr, want) {
		t.Errorf("validate: exit %d\n%s%s\nwant exit 2 and %q", v.code, v.stdout, v.stderr, want)
	}
	if r.code != exitUsage || !strings.Contains(r.stdout+r.stderr, want) {
		t.Errorf("run: exit %d\n%s%s\nwant exit 2 and %q", r.code, r.stdout, r.stderr, want)
	}
	if got := readFile(t, filepath.Join(ws, "config.json")); got != `{"version":"1"}` {
		t.Errorf("config.json changed: %s", got)
	}
}
