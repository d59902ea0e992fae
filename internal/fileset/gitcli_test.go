package fileset

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitEnv is an isolated environment for the git CLI used as the oracle:
// its own HOME, XDG_CONFIG_HOME and global config, no system config.
type gitEnv struct {
	home, xdg, global string
	vars              map[string]string
}

func newGitEnv(t testing.TB) *gitEnv {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the git CLI is the oracle of these tests and must be installed (apt-get install git): %v", err)
	}
	dir := t.TempDir()
	e := &gitEnv{
		home:   filepath.Join(dir, "home"),
		xdg:    filepath.Join(dir, "xdg"),
		global: filepath.Join(dir, "home", "global.gitconfig"),
	}
	for _, d := range []string{e.home, filepath.Join(e.xdg, "git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, e.global, "[user]\n\tname = t\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n")
	e.vars = map[string]string{
		"HOME":                e.home,
		"XDG_CONFIG_HOME":     e.xdg,
		"GIT_CONFIG_GLOBAL":   e.global,
		"GIT_CONFIG_NOSYSTEM": "1",
	}
	return e
}

func (e *gitEnv) lookup(k string) (string, bool) {
	v, ok := e.vars[k]
	return v, ok
}

func (e *gitEnv) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || e.vars[k] != "" {
			continue
		}
		env = append(env, kv)
	}
	for k, v := range e.vars {
		env = append(env, k+"="+v)
	}
	return env
}

// git runs git in dir and returns stdout; exit status 1 is accepted when
// allow1 (check-ignore reports "nothing ignored" that way).
func (e *gitEnv) git(t testing.TB, dir string, stdin string, allow1 bool, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = e.environ()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); !(ok && allow1 && ee.ExitCode() == 1) {
			t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, errb.String())
		}
	}
	return out.String()
}

// open opens a Set that sees the same environment as the git CLI.
func (e *gitEnv) open(t testing.TB, root string) *Set {
	t.Helper()
	s, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	s.env = e.lookup
	return s
}

func writeFile(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func splitNUL(s string) []string {
	var out []string
	for _, p := range strings.Split(s, "\x00") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
