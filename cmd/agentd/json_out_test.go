//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --json: no \u0026-style escaping on any line (the result's state holds
// the plan's "&&" too); changeProposed carries the patch; result carries
// the summary and the command that undoes the run.
func TestRunJSONPatchSummaryUndo(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\ntwo\n"), 0o644)
	p := writePlan(t, `{"title":"A && B","steps":[
		{"id":"e","tool":"edit_file","args":{"path":"a.txt","edits":[{"oldText":"two\n","newText":"2 && <3>\n"}]}},
		{"id":"c","tool":"run_command","args":{"command":"true && echo 'x<y>'"},"dependsOn":["e"]}]}`)
	r := agentd(t, "", "run", p, "--workspace", ws, "--state-dir", t.TempDir(), "--yes", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, esc := range []string{`\u0026`, `\u003c`, `\u003e`} {
		if strings.Contains(r.stdout, esc) {
			t.Errorf("stdout holds %s:\n%s", esc, r.stdout)
		}
	}
	evs := jsonEvents(t, r.stdout)
	var patch string
	for _, ev := range evs {
		if ev["type"] == "changeProposed" {
			patch, _ = ev["patch"].(string)
		}
	}
	if !strings.Contains(patch, "--- a/a.txt") || !strings.Contains(patch, "-two\n+2 && <3>\n") {
		t.Errorf("changeProposed's patch = %q", patch)
	}
	last := evs[len(evs)-1]
	summary, _ := last["summary"].(string)
	undo, _ := last["undo"].(string)
	if last["type"] != "result" || !strings.Contains(summary, "# A && B") || !strings.Contains(summary, "**Status:** completed") {
		t.Errorf("result's summary = %q", summary)
	}
	if !strings.Contains(undo, " undo ") || !strings.Contains(undo, "--workspace") {
		t.Errorf("result's undo = %q", undo)
	}
}

func TestUnescapeHTML(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":"x \u0026\u0026 y \u003cz\u003e"}`: `{"a":"x && y <z>"}`,
		`{"a":"\\u0026"}`:                        `{"a":"\\u0026"}`, // a backslash, then the text u0026
		`{"a":"\\\u0026"}`:                       `{"a":"\\&"}`,
		`{"a":"\n\u00e9"}`:                       `{"a":"\n\u00e9"}`,
	} {
		if got := string(unescapeHTML([]byte(in))); got != want {
			t.Errorf("unescapeHTML(%s) = %s, want %s", in, got, want)
		}
	}
}
