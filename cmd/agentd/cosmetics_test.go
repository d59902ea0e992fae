//go:build unix

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine/plans"
)

// The cosmetic points of issue 29, each as the user meets it.
func TestCosmetics(t *testing.T) {
	// "The model looked at 1 thing", not "1 things".
	one := plans.ContextText(&plans.Plan{Context: []plans.ContextItem{{Tool: "read_file", Args: []byte(`{"path":"a"}`)}}})
	if !strings.HasPrefix(one, "The model looked at 1 thing before planning") {
		t.Errorf("ContextText with one item: %q", one)
	}

	ws, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	// Nothing to undo: the message names the workspace ("journal of
	// /path"), not a bare "(journal /path)".
	u := agentd(t, "", "undo", "--workspace", ws, "--state-dir", state)
	if u.code == 0 || !strings.Contains(u.stderr, realPath(t, ws)+")") || strings.Contains(u.stderr, "(journal /") {
		t.Errorf("undo with no run: exit %d, %s", u.code, u.stderr)
	}

	// A failed read-only run: stderr's blank lines are not joined as
	// "|  |", and no "Undo the whole run" (it changed nothing).
	p := writePlan(t, `{"steps":[{"id":"r","tool":"read_file","args":{"path":"a.txt"}},
		{"id":"c","tool":"read_file","args":{"path":"missing.txt"},"dependsOn":["r"]}]}`)
	r := agentd(t, "", "run", p, "--workspace", ws, "--state-dir", state, "--yes")
	if r.code != exitFailed || strings.Contains(r.stdout, "Undo the whole run") {
		t.Errorf("a failed read-only run: exit %d, offers an undo:\n%s%s", r.code, r.stdout, r.stderr)
	}
	p = writePlan(t, `{"steps":[{"id":"c","tool":"run_command","args":{"command":"printf 'first\\n\\n\\nFAILED\\n' >&2; exit 1"}}]}`)
	r = agentd(t, "", "run", p, "--workspace", ws, "--state-dir", state, "--yes")
	if !strings.Contains(r.stdout+r.stderr, "first | FAILED") || strings.Contains(r.stdout+r.stderr, "|  |") {
		t.Errorf("stderr's end is not joined without blank lines:\n%s%s", r.stdout, r.stderr)
	}

	// A restore with nothing to do prints no "undo with:"; a restore's
	// conflict names the flag, --overwrite.
	c := agentd(t, "", "snapshot", "create", "--workspace", ws, "--state-dir", state)
	id := regexp.MustCompile(`snapshot ([0-9a-f]{12})`).FindStringSubmatch(c.stdout)
	if id == nil {
		t.Fatalf("snapshot create: %s%s", c.stdout, c.stderr)
	}
	s := agentd(t, "", "snapshot", "restore", id[1], "--workspace", ws, "--state-dir", state)
	if !strings.Contains(s.stdout, "nothing to restore") || strings.Contains(s.stdout, "undo with:") {
		t.Errorf("a restore with nothing to do:\n%s%s", s.stdout, s.stderr)
	}

	// snapshot restore <Tab> completes snapshot IDs.
	comp := agentd(t, "", "__complete", "snapshot", "restore", "--workspace", ws, "--state-dir", state, "")
	if !strings.Contains(comp.stdout, id[1]) {
		t.Errorf("snapshot restore <Tab> does not offer %s:\n%s%s", id[1], comp.stdout, comp.stderr)
	}
}

func realPath(t *testing.T, p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
