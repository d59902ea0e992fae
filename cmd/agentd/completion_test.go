package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// bashCompletionLib returns the bash-completion package's main script,
// which cobra's bash script uses (_get_comp_words_by_ref). When the
// system lacks it, Debian's package is downloaded and unpacked into the
// checkout's git-ignored .cache (no root needed); failing that, the test
// fails, saying how to install it.
func bashCompletionLib(t *testing.T) string {
	t.Helper()
	const sys = "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(sys); err == nil {
		return sys
	}
	dir := filepath.Join(repoRoot(t), ".cache", "bash-completion")
	lib := filepath.Join(dir, "root", "usr", "share", "bash-completion", "bash_completion")
	if _, err := os.Stat(lib); err == nil {
		return lib
	}
	if err := os.MkdirAll(filepath.Join(dir, "root"), 0o755); err != nil {
		t.Fatal(err)
	}
	dl := exec.Command("apt-get", "download", "bash-completion")
	dl.Dir = dir
	if out, err := dl.CombinedOutput(); err != nil {
		t.Fatalf("bash-completion is not installed and apt-get download failed (%v): %s\ninstall it: apt-get install bash-completion", err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(dir, "bash-completion_*.deb"))
	if len(debs) == 0 {
		t.Fatalf("apt-get download bash-completion left no .deb in %s", dir)
	}
	if out, err := exec.Command("dpkg-deb", "-x", debs[0], filepath.Join(dir, "root")).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x %s: %v: %s", debs[0], err, out)
	}
	if _, err := os.Stat(lib); err != nil {
		t.Fatalf("bash-completion unpacked, but %s is missing: %v", lib, err)
	}
	return lib
}

// complete sources agentd's bash completion in a real bash and completes
// the line (the words after "agentd"; the last one is being typed), as
// bash does on Tab. It returns the candidates.
func complete(t *testing.T, lib, script string, words ...string) []string {
	t.Helper()
	line := agentdBin + " " + strings.Join(words, " ")
	prog := `source "$1"; source "$2"; shift 2
COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$LINE"; COMP_POINT=${#LINE}
__start_agentd
printf '%s\n' "${COMPREPLY[@]}"`
	cmd := exec.Command("bash", append([]string{"--norc", "--noprofile", "-c", prog, "bash", lib, script, agentdBin}, words...)...)
	cmd.Env = append(os.Environ(), "LINE="+line)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("completing %q: %v\n%s", line, err, out)
	}
	return strings.Fields(string(out))
}

// TestShellCompletion: the bash script completes commands, flags and flag
// values in a real bash; zsh and fish scripts are generated for agentd.
func TestShellCompletion(t *testing.T) {
	lib := bashCompletionLib(t)
	r := agentd(t, "", "completion", "bash")
	if r.code != 0 || !strings.Contains(r.stdout, "__start_agentd") {
		t.Fatalf("completion bash: exit %d\n%s", r.code, r.stderr)
	}
	script := filepath.Join(t.TempDir(), "agentd.bash")
	if err := os.WriteFile(script, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		words []string
		want  []string
		not   []string
	}{
		{[]string{"sn"}, []string{"snapshot"}, []string{"run"}},
		{[]string{"snapshot", "re"}, []string{"restore"}, []string{"create"}},
		{[]string{"run", "plan.json", "--rev"}, []string{"--review"}, nil},
		{[]string{"run", "plan.json", "--review", ""}, []string{"before", "after", "none"}, nil},
		{[]string{"run", "--sequential", "--par"}, nil, []string{"--parallel"}},
		{[]string{"help", "un"}, []string{"undo"}, nil},
		{[]string{"ma"}, []string{"map"}, nil},
		{[]string{"map", "--fo"}, []string{"--focus"}, nil},
		{[]string{"map", "--request", "fix", "--map"}, []string{"--map-tokens"}, nil},
	} {
		got := complete(t, lib, script, tc.words...)
		for _, w := range tc.want {
			if !contains(got, w) {
				t.Errorf("completing %q: %v lacks %q", tc.words, got, w)
			}
		}
		for _, w := range tc.not {
			if contains(got, w) {
				t.Errorf("completing %q: %v offers %q", tc.words, got, w)
			}
		}
	}
	for shell, want := range map[string]string{"zsh": "#compdef agentd", "fish": "complete -c agentd"} {
		r := agentd(t, "", "completion", shell)
		if r.code != 0 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "__complete") {
			t.Errorf("completion %s: exit %d, lacks %q\n%s", shell, r.code, want, r.stderr)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
