package plans

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseJSONAndYAMLAgree: the same plan written in JSON and in YAML
// parses to the same value, with every field set.
func TestParseJSONAndYAMLAgree(t *testing.T) {
	read := func(name string) *Plan {
		data, err := os.ReadFile(filepath.Join("testdata", "plans", "valid", name))
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParsePlan(name, data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p.Source = ""
		return p
	}
	j, y := read("full.json"), read("full.yaml")
	if !reflect.DeepEqual(j, y) {
		t.Fatalf("JSON and YAML differ:\njson %+v\nyaml %+v", j, y)
	}
	// Spot checks that every kind of field arrived.
	if j.ID != "plan-full" || j.Version != 3 || !j.CreatedAt.Equal(time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)) || len(j.History) != 2 || j.History[0].StepIDs[0] != "check" {
		t.Errorf("plan fields: %+v", j)
	}
	major := j.Step("major")
	if string(major.Args) != `{"command":"echo major ${ask}","okExitCodes":[0,1]}` {
		t.Errorf("args not compacted: %s", major.Args)
	}
	if max, d, md := major.RetryPolicy(); max != 2 || d != time.Second || md != 4*time.Second {
		t.Errorf("RetryPolicy = %d %v %v", max, d, md)
	}
	if j.Step("read").TimeoutOr(time.Minute) != 30*time.Second || major.TimeoutOr(time.Minute) != time.Minute {
		t.Error("TimeoutOr")
	}
	if j.Step("ask").IsCritical() || !major.IsCritical() || !j.Step("minor").Skip {
		t.Error("critical/skip")
	}
	fix := j.Step("fix")
	if fix.EffectiveKind() != KindAgent || fix.MaxIterations != 8 || !slices.Equal(fix.Tools, []string{"read_file", "edit_file", "run_command"}) || *fix.Reversible {
		t.Errorf("agent step: %+v", fix)
	}
	ch := j.Step("choose")
	if len(ch.Branches) != 2 || ch.Branches[1].When != "" || ch.Branches[0].Steps[0] != "major" {
		t.Errorf("branches: %+v", ch.Branches)
	}
	if c := j.Step("check").Checks; len(c) != 2 || c[0].Message != "the command failed" {
		t.Errorf("checks: %+v", c)
	}
	if probs := ValidatePlan(j, planTestRegistry(), 0); len(probs) != 0 {
		t.Errorf("full plan invalid:\n%s", dumpProblems(probs))
	}
}

func TestParseDefaults(t *testing.T) {
	p := mustParse(t, `{"steps":[{"id":"a","tool":"read_file","args":{ "path" : "x" }}]}`)
	if p.Version != 1 || p.Source != "test.json" {
		t.Errorf("version %d source %q", p.Version, p.Source)
	}
	s := p.Steps[0]
	if s.EffectiveKind() != KindTool || !s.IsCritical() || s.TimeoutOr(DefaultStepTimeout) != DefaultStepTimeout {
		t.Error("step defaults")
	}
	if max, d, md := s.RetryPolicy(); max != 0 || d != DefaultRetryDelay || md != DefaultMaxDelay {
		t.Errorf("RetryPolicy = %d %v %v", max, d, md)
	}
	if string(s.Args) != `{"path":"x"}` {
		t.Errorf("args %s", s.Args)
	}
}

func TestParseFormatSniffing(t *testing.T) {
	yamlPlan := "steps:\n  - id: a\n    tool: read_file\n    args: {path: x}\n"
	for _, name := range []string{"plan.yaml", "plan.YML", "plan", "-", "plan.txt"} {
		p, err := ParsePlan(name, []byte(yamlPlan))
		if err != nil || p.Steps[0].ID != "a" {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A .json file is JSON even if it looks like YAML: the error is a JSON one.
	_, err := ParsePlan("plan.json", []byte(yamlPlan))
	var pe *ParseError
	if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "JSON syntax") {
		t.Errorf("yaml in .json: %v", err)
	}
	// A UTF-8 byte order mark is tolerated.
	if _, err := ParsePlan("p.json", []byte("\xef\xbb\xbf{\"steps\":[]}")); err != nil {
		t.Errorf("BOM: %v", err)
	}
}

func TestParseSyntaxErrors(t *testing.T) {
	tests := []struct {
		name, file, src string
		line, col       int
		words           string
	}{
		{"json: missing comma", "p.json", "{\n  \"steps\": [\n    {\"id\": \"a\"}\n    {\"id\": \"b\"}\n  ]\n}", 4, 5, "JSON syntax: invalid character '{' after array element"},
		{"json: truncated", "p.json", "{\"steps\": [\n  {\"id\": \"a\"", 2, 13, "ends too early"},
		{"json: trailing garbage", "p.json", "{\"steps\": []} x", 0, 0, "after the JSON value"},
		{"yaml: bad indentation", "p.yaml", "steps:\n  - id: a\n   tool: x\n", 2, 0, "YAML syntax"},
		{"yaml: tab", "p.yaml", "steps:\n\t- id: a\n", 2, 0, "YAML syntax"},
		{"empty", "p.yaml", "", 0, 0, "plan is empty"},
		{"not an object", "p.json", "[1,2]", 1, 0, "plan is an array, not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePlan(tt.file, []byte(tt.src))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v (%T), want *ParseError", err, err)
			}
			if pe.File != tt.file || pe.Line != tt.line || pe.Col != tt.col || !strings.Contains(pe.Msg, tt.words) {
				t.Errorf("got %s (line %d col %d), want line %d col %d saying %q", pe, pe.Line, pe.Col, tt.line, tt.col, tt.words)
			}
			// The error is also a *ValidationError with one located problem.
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Line != tt.line || ve.Problems[0].Col != tt.col {
				t.Fatalf("err = %#v, want a *ValidationError with the position", err)
			}
			if tt.line > 0 && !strings.Contains(err.Error(), fmt.Sprintf("%s: line %d", tt.file, tt.line)) {
				t.Errorf("error %q does not name the file and line", err)
			}
			if !strings.HasSuffix(err.Error(), pe.Msg) {
				t.Errorf("error %q does not end with %q", err, pe.Msg)
			}
		})
	}
}

// TestParseUnknownFieldsAndTypes: every unknown field and every field of the
// wrong type is reported, naming the step and the field.
func TestParseUnknownFieldsAndTypes(t *testing.T) {
	src := `{
	"titel": "typo",
	"steps": [
		{"id": "a", "tool": "read_file", "args": {"path": "x"}, "dependson": ["b"], "retry": {"max": 1, "maxdelay": "2s"}},
		{"id": "b", "kind": "validation", "checks": [{"exp": "true"}], "critical": "yes", "timeout": 30},
		{"id": "c", "kind": "decision", "branches": [{"when": "true", "step": ["a"]}], "dependsOn": "a"},
		{"id": "d", "kind": "agent", "prompt": "p", "maxIterations": 2.5, "tools": ["x", 3], "args": [1]},
		{"tool": "read_file", "frobnicate": 1},
		"not a step"
	],
	"history": [{"version": "2", "time": "yesterday"}]
}`
	_, err := ParsePlan("plan.json", []byte(src))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want *ValidationError", err)
	}
	want := []struct {
		step, field, words string
	}{
		{"", "history[0].time", `"yesterday" is not an RFC 3339 time`},
		{"", "history[0].version", "version must be an integer, not a string"},
		{"a", "dependson", `unknown field "dependson": did you mean "dependsOn"?`},
		{"a", "retry.maxdelay", `did you mean "maxDelay"?`},
		{"b", "checks[0].exp", `did you mean "expr"?`},
		{"b", "critical", "critical must be true or false, not a string"},
		{"b", "timeout", "timeout must be a string, not a number"},
		{"c", "branches[0].step", `did you mean "steps"?`},
		{"c", "dependsOn", `dependsOn must be an array of strings: write ["a"]`},
		{"d", "args", "args must be an object, not an array"},
		{"d", "maxIterations", "maxIterations must be an integer, not 2.5"},
		{"d", "tools[1]", "tools[1] must be a string, not a number"},
		{"", "steps[4].frobnicate", `unknown field "frobnicate": remove it (known fields: approval, args,`},
		{"", "steps[5]", "steps[5] must be an object, not a string"},
		{"", "titel", `did you mean "title"?`},
	}
	if len(ve.Problems) != len(want) {
		t.Fatalf("%d problems, want %d:\n%s", len(ve.Problems), len(want), dumpProblems(ve.Problems))
	}
	for i, w := range want {
		p := ve.Problems[i]
		if p.StepID != w.step || p.Field != w.field || !strings.Contains(p.Message, w.words) || p.File != "plan.json" {
			t.Errorf("problem %d = %s, want step %q field %q saying %q", i, p, w.step, w.field, w.words)
		}
	}
	// Each problem points at its key (or array element) in the file.
	lines := strings.Split(src, "\n")
	for _, p := range ve.Problems {
		if p.Line < 1 || p.Line > len(lines) || p.Col < 1 || p.Col > len(lines[p.Line-1]) {
			t.Errorf("%s: position %d:%d outside the file", p, p.Line, p.Col)
			continue
		}
		at := lines[p.Line-1][p.Col-1:]
		field := p.Field[strings.LastIndexAny(p.Field, ".")+1:]
		if i := strings.IndexByte(field, '['); i > 0 && strings.HasSuffix(field, "]") {
			field = "" // an array element: the value itself starts there
		}
		if field != "" && !strings.HasPrefix(at, `"`+field+`"`) {
			t.Errorf("%s: at %d:%d is %.20q, want the key %q", p, p.Line, p.Col, at, field)
		}
	}
	if p := ve.Problems[2]; p.Line != 4 || p.Col != 59 {
		t.Errorf("dependson at %d:%d, want 4:59", p.Line, p.Col)
	}
	if p := ve.Problems[13]; p.Line != 9 || !strings.HasPrefix(lines[8][p.Col-1:], `"not a step"`) {
		t.Errorf("steps[5] at %d:%d", p.Line, p.Col)
	}
	// YAML problems have no position (the converted JSON's would be wrong).
	_, err = ParsePlan("p.yaml", []byte("steps:\n  - id: a\n    tool: x\n    dependson: [b]\n"))
	if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Line != 0 {
		t.Errorf("yaml: %#v", err)
	}
}

func TestParseNullsAreAbsent(t *testing.T) {
	p := mustParse(t, `{"title":null,"steps":[{"id":"a","tool":"read_file","args":null,"retry":null,"dependsOn":null}]}`)
	if p.Steps[0].Args != nil || p.Steps[0].Retry != nil {
		t.Errorf("%+v", p.Steps[0])
	}
}

func TestParsePlanTooBig(t *testing.T) {
	old := MaxPlanBytes
	MaxPlanBytes = 10
	defer func() { MaxPlanBytes = old }()
	_, err := ParsePlan("big.json", []byte(`{"steps":[          ]}`))
	if err == nil || !strings.Contains(err.Error(), "more than the 10 accepted") {
		t.Errorf("err = %v", err)
	}
}

func TestLineCol(t *testing.T) {
	data := []byte("ab\ncd\n\nx")
	for _, tt := range []struct {
		off       int64
		line, col int
	}{{0, 1, 1}, {1, 1, 2}, {2, 1, 3}, {3, 2, 1}, {4, 2, 2}, {6, 3, 1}, {7, 4, 1}, {8, 4, 2}, {100, 4, 2}} {
		if l, c := planLineCol(data, tt.off); l != tt.line || c != tt.col {
			t.Errorf("offset %d: %d:%d, want %d:%d", tt.off, l, c, tt.line, tt.col)
		}
	}
}
