//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validate catches what the run would: several files at once, every
// problem of each (a misspelt top-level key, a did-you-mean for args, a
// path leaving the workspace) and, against the workspace, edit_file texts
// not found, as problems with the closest line (exit 2: the run would fail),
// and agentd run refuses such a plan before starting.
func TestValidateCatchesWhatTheRunWould(t *testing.T) {
	ws := demoCopy(t)
	os.MkdirAll(filepath.Join(ws, "plans"), 0o755)
	os.WriteFile(filepath.Join(ws, "plans", "bad.json"), []byte(`{"titel":"x","steps":[
		{"id":"r","tool":"read_file","args":{"path":"main.go","lines":3}},
		{"id":"w","tool":"write_file","args":{"path":"../out.txt","content":"x"}},
		{"id":"e","tool":"edit_file","args":{"path":"main.go","edits":[{"oldText":"no such text","newText":"x"}]}}]}`), 0o644)
	os.WriteFile(filepath.Join(ws, "plans", "warn.json"), []byte(`{"steps":[{"id":"e","tool":"edit_file","args":{"path":"greet/greet.go","edits":[
		{"oldText":"func Hello(name strin) string {","newText":"x"}]}}]}`), 0o644)
	r := agentdIn(t, ws, agentdBin, nil, "validate", "plans/bad.json", "plans/warn.json")
	if r.code != exitUsage {
		t.Fatalf("exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		`plans/bad.json: titel: unknown field "titel": did you mean "title"?`,
		`plans/bad.json: step r: args.lines: unknown field "lines" in args: did you mean "endLine" or "startLine"?`,
		`plans/bad.json: step w: args.path: "../out.txt" leaves the workspace`,
		"plans/bad.json: not valid: 4 problems",
		"plans/bad.json: step e: args.edits[0].oldText: this oldText does not occur in main.go", // checked despite "titel"
		`plans/warn.json: step e: args.edits[0].oldText: this oldText does not occur in greet/greet.go as it is now; the closest line is line 7: "func Hello(name string) string {"`,
		"plans/warn.json: not valid: 1 problem",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	// A text not found alone: exit 2, and the run refuses before it
	// starts (no step runs, nothing is journaled as a run).
	if r := agentdIn(t, ws, agentdBin, nil, "validate", "plans/warn.json"); r.code != exitUsage {
		t.Errorf("a text not found: exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
	}
	before := readFile(t, filepath.Join(ws, "greet", "greet.go"))
	r = agentdIn(t, ws, agentdBin, nil, "run", "--yes", "plans/warn.json")
	if r.code != exitUsage || !strings.Contains(r.stderr, "plans/warn.json: step e: args.edits[0].oldText: this oldText does not occur in greet/greet.go") ||
		!strings.Contains(r.stderr, "agentd run: not started:") || strings.Contains(r.stdout, "step e") {
		t.Errorf("run of a plan whose oldText is not in the file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := readFile(t, filepath.Join(ws, "greet", "greet.go")); got != before {
		t.Errorf("the refused run changed greet.go")
	}
	// An absolute path elsewhere: a problem.
	abs := writePlan(t, `{"steps":[{"id":"a","tool":"read_file","args":{"path":"/etc/hostname"}}]}`)
	if r := agentd(t, "", "validate", abs, "--workspace", ws); r.code != exitUsage || !strings.Contains(r.stdout, `"/etc/hostname" is outside the workspace`) {
		t.Errorf("an absolute path outside: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
