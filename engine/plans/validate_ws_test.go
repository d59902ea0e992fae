package plans

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/workspace"
)

func problemsText(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.StepID + " | " + p.Field + " | " + p.Message + "\n")
	}
	return b.String()
}

// A misspelt top-level field no longer hides the steps' problems: every
// problem comes at once, the unknown key with a did-you-mean.
func TestCheckPlanFileEveryProblemAtOnce(t *testing.T) {
	data := []byte(`{"titel":"x","steps":[
		{"id":"r","tool":"read_file","args":{"path":"a.txt","lines":3}},
		{"id":"w","tool":"write_file","args":{"path":"../out.txt","content":"x"}},
		{"id":"m","tool":"move_file","args":{"from":"a/../../b","to":"c"}},
		{"id":"g","tool":"nope"}]}`)
	_, probs := CheckPlanFile("p.json", data, tools.Builtin(), 0)
	txt := problemsText(probs)
	for _, want := range []string{
		` | titel | unknown field "titel": did you mean "title"?`,
		`r | args.lines | unknown field "lines" in args: did you mean "endLine" or "startLine"?`,
		`w | args.path | "../out.txt" leaves the workspace`,
		`m | args.from | "a/../../b" leaves the workspace`,
		`g | tool | unknown tool "nope"`,
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("problems lack %q:\n%s", want, txt)
		}
	}
}

// Against the workspace: an edit_file text not in the file is a problem
// (the step would fail) with the closest line, from the run's own matcher (a second edit is
// judged on the text the first one leaves); an absolute path elsewhere is
// a problem; an absolute path inside is fine.
func TestCheckWorkspace(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n\nfunc Hello() string {\n\treturn \"hi\"\n}\n"), 0o644)
	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	inside := filepath.Join(ws.Root(), "a.go")
	data := []byte(`{"steps":[
		{"id":"e","tool":"edit_file","args":{"path":"a.go","edits":[
			{"oldText":"func Hello()","newText":"func Greet()"},
			{"oldText":"func Greet() string {\n  return","newText":"x"},
			{"oldText":"func Hello()","newText":"y"}]}},
		{"id":"abs","tool":"read_file","args":{"path":"/etc/hostname"}},
		{"id":"in","tool":"read_file","args":{"path":` + strconvQuote(inside) + `}}]}`)
	p, probs := CheckPlanFile("p.json", data, tools.Builtin(), 0)
	if p == nil || len(probs) != 0 {
		t.Fatalf("the plan alone should be valid: %s", problemsText(probs))
	}
	got := CheckWorkspace(t.Context(), p, ws)
	txt := problemsText(got)
	for _, want := range []string{
		"e | args.edits[1].oldText | this oldText does not occur in a.go as it is now; the closest line is line 3: \"func Greet() string {\"",
		"e | args.edits[2].oldText | this oldText does not occur in a.go",
		`abs | args.path | "/etc/hostname" is outside the workspace`,
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("lacks %q:\n%s", want, txt)
		}
	}
	if strings.Contains(txt, "edits[0]") || strings.Contains(txt, "in | ") {
		t.Errorf("a text that is there, or a path inside, is reported:\n%s", txt)
	}
	for _, pr := range got {
		if IsWarning(pr) {
			t.Errorf("with the workspace at hand, a text not found is a problem, not a warning: %+v", pr)
		}
	}
}

func strconvQuote(s string) string { return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"` }
