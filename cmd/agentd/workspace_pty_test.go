//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunWorkspaceAsksOnTerminal: a plan from outside the current folder,
// or --request, on a terminal: agentd asks before using the folder; "y"
// runs there, "n" (or Enter) runs nothing and says how to choose.
func TestRunWorkspaceAsksOnTerminal(t *testing.T) {
	p := writePlan(t, `{"steps":[{"id":"w","tool":"write_file","args":{"path":"made.txt","content":"x\n"}}]}`)
	for _, tc := range []struct {
		args   []string
		answer string
		code   int
		made   bool
	}{
		{[]string{p}, "y\n", 0, true},
		{[]string{p}, "\n", exitUsage, false},
		{[]string{p}, "n\n", exitUsage, false},
		{[]string{"--request", "write made.txt"}, "n\n", exitUsage, false},
	} {
		dir := t.TempDir()
		r := startPTYIn(t, dir, []string{"NO_COLOR=1", "TERM=dumb"}, append(append([]string{"run"}, tc.args...), "--yes", "--state-dir", t.TempDir())...)
		r.waitFor("[y/N]", 0)
		if !strings.Contains(r.text(), dir) {
			t.Errorf("the question does not name the folder %s:\n%s", dir, r.tail())
		}
		r.send(tc.answer)
		code := r.wait()
		_, statErr := os.Stat(filepath.Join(dir, "made.txt"))
		if code != tc.code || (statErr == nil) != tc.made {
			t.Errorf("answer %q: exit %d (want %d), made.txt written %v (want %v)\n%s", tc.answer, code, tc.code, statErr == nil, tc.made, r.tail())
		}
		if tc.code == exitUsage && !strings.Contains(r.text(), "--workspace DIR") {
			t.Errorf("answer %q: no word on how to choose:\n%s", tc.answer, r.tail())
		}
	}
}
