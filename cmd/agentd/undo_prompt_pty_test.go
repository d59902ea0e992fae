//go:build unix

package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// Issue 38, "the terminal asks": a conflicting undo on a terminal asks
// [k]eep / [o]verwrite / [d]iff / [c]ancel; each answer, typed on a
// pseudo-terminal, does what it says to the files.

// conflictingUndoWS is a run that changed a.txt's second line and
// created c.txt, after which the user rewrote that same line.
func conflictingUndoWS(t *testing.T) undoWS {
	t.Helper()
	u := newUndoWS(t, map[string]string{"a.txt": "one\ntwo\nthree\n"})
	u.run(t, map[string]string{"a.txt": "one\nRUN\nthree\n", "c.txt": "created\n"})
	u.write(t, "a.txt", "one\nMINE\nthree\n")
	return u
}

const undoQuestion = "see the [d]iff, or [c]ancel?"

func TestUndoPromptOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []string // typed in turn, each after the question
		code    int
		a, c    string // a.txt and c.txt after it
		says    string
	}{
		{"keep", []string{"k"}, exitOK, "one\nMINE\nthree\n", "<absent>", "kept as it is (conflict): a.txt"},
		{"overwrite", []string{"o"}, exitOK, "one\ntwo\nthree\n", "<absent>", "overwritten: a.txt"},
		{"diff then cancel", []string{"d", "c"}, exitFailed, "one\nMINE\nthree\n", "created\n", "+two"},
		{"cancel", []string{"c"}, exitFailed, "one\nMINE\nthree\n", "created\n", "nothing undone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := conflictingUndoWS(t)
			r := startPTY(t, nil, append([]string{"undo"}, u.flags()...)...)
			at := r.waitFor("conflict: a.txt", 0)
			asked := r.waitFor(undoQuestion, at)
			for i, ans := range tc.answers {
				if i > 0 {
					at = r.waitFor(undoQuestion, at)
				} else {
					at = asked
				}
				r.send(ans + "\r")
			}
			if code := r.wait(); code != tc.code {
				t.Fatalf("exit %d, want %d; it showed:\n%s", code, tc.code, r.tail())
			}
			if got := u.read(t, "a.txt"); got != tc.a {
				t.Errorf("a.txt = %q, want %q", got, tc.a)
			}
			if got := u.read(t, "c.txt"); got != tc.c {
				t.Errorf("c.txt = %q, want %q", got, tc.c)
			}
			if !strings.Contains(r.text()[asked:], tc.says) {
				t.Errorf("after the answer it does not say %q; it showed:\n%s", tc.says, r.tail())
			}
		})
	}
}

// With no way to ask (stdin closed, or --json) and no flag, a
// conflicting undo changes nothing, names the conflict and the flags that
// decide it, and exits non-zero.
func TestConflictingUndoWithNoWayToAsk(t *testing.T) {
	t.Run("stdin closed", func(t *testing.T) {
		u := conflictingUndoWS(t)
		cmd := exec.Command(agentdBin, append([]string{"undo"}, u.flags()...)...)
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		in.Close()
		r := runCmd(t, cmd, nil)
		if r.code != exitFailed {
			t.Fatalf("exit %d, want %d\n%s%s", r.code, exitFailed, r.stdout, r.stderr)
		}
		for _, want := range []string{"nothing undone", "conflict: a.txt", " --keep-conflicts ", " --overwrite ", " --diff "} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("it does not say %q:\n%s", want, r.stdout)
			}
		}
		if u.read(t, "a.txt") != "one\nMINE\nthree\n" || u.read(t, "c.txt") != "created\n" {
			t.Errorf("the files changed: a.txt %q, c.txt %q", u.read(t, "a.txt"), u.read(t, "c.txt"))
		}
	})
	t.Run("--json on a terminal", func(t *testing.T) {
		u := conflictingUndoWS(t)
		r := startPTY(t, nil, append([]string{"undo", "--json"}, u.flags()...)...)
		if code := r.wait(); code != exitFailed {
			t.Fatalf("exit %d, want %d; it showed:\n%s", code, exitFailed, r.tail())
		}
		txt := r.text()
		if strings.Contains(txt, undoQuestion) {
			t.Fatalf("--json asked:\n%s", txt)
		}
		var out undoJSON
		if err := json.Unmarshal([]byte(txt[strings.Index(txt, "{"):]), &out); err != nil {
			t.Fatalf("not JSON (%v):\n%s", err, txt)
		}
		if out.Applied || len(out.Conflicts) != 1 || out.Conflicts[0].Path != "a.txt" {
			t.Errorf("applied %v, conflicts %+v", out.Applied, out.Conflicts)
		}
		for key, flag := range map[string]string{"keep": "--keep-conflicts", "overwrite": "--overwrite", "diff": "--diff"} {
			if !strings.Contains(out.Hints[key], " "+flag+" ") {
				t.Errorf("hint %s = %q, does not name %s", key, out.Hints[key], flag)
			}
		}
		if u.read(t, "a.txt") != "one\nMINE\nthree\n" || u.read(t, "c.txt") != "created\n" {
			t.Errorf("the files changed: a.txt %q, c.txt %q", u.read(t, "a.txt"), u.read(t, "c.txt"))
		}
	})
}
