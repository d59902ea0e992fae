package plans

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func planTestOutputs() Outputs {
	return Outputs{
		"read":    json.RawMessage(`{"path":"config.json","content":"{\"version\":\"1.0\"}\n","lines":2}`),
		"test":    json.RawMessage(`{"exitCode":1,"stdout":"FAIL x_test.go:3\n","stderr":"","truncated":false}`),
		"search":  json.RawMessage(`{"files":["a.go","b/c.go"],"matches":[{"path":"a.go","line":3}],"odd key":{"x":true}}`),
		"count":   json.RawMessage(`7`),
		"notes":   json.RawMessage(`"Release <notes> & more"`),
		"lint.go": json.RawMessage(`{"stdout":"ok"}`),
		"lint":    json.RawMessage(`{"stdout":"lint step"}`),
		"nothing": json.RawMessage(`null`),
	}
}

func TestResolveArgs(t *testing.T) {
	tests := []struct {
		name, args, want string
	}{
		{"no references: unchanged", `{"path": "a.txt", "n": 1}`, `{"path": "a.txt", "n": 1}`},
		{"whole output keeps its type", `{"x":"$read"}`, `{"x":{"content":"{\"version\":\"1.0\"}\n","lines":2,"path":"config.json"}}`},
		{"braced whole output", `{"x":"${count}"}`, `{"x":7}`},
		{"field keeps its type", `{"n":"${test.exitCode}","t":"${test.truncated}"}`, `{"n":1,"t":false}`},
		{"array element and nested", `{"p":"${search.files[1]}","l":"${search.matches[0].line}","last":"${search.files[-1]}"}`, `{"l":3,"last":"b/c.go","p":"b/c.go"}`},
		{"quoted key", `{"x":"${search[\"odd key\"].x}","y":"${search['odd key']}"}`, `{"x":true,"y":{"x":true}}`},
		{"interpolated inside text", `{"c":"echo ${test.exitCode} ${search.files} ${read.path}!"}`, `{"c":"echo 1 [\"a.go\",\"b/c.go\"] config.json!"}`},
		{"strings are not escaped as HTML", `{"c":"notes: ${notes}"}`, `{"c":"notes: Release <notes> & more"}`},
		{"$$ escapes", `{"c":"cost $$5 and $${HOME} and $$read"}`, `{"c":"cost $5 and ${HOME} and $read"}`},
		{"lone $ in text is literal", `{"c":"echo $HOME $1 5$"}`, `{"c":"echo $HOME $1 5$"}`},
		{"inside arrays", `{"a":["$count","n=${count}"]}`, `{"a":[7,"n=7"]}`},
		{"dotted id: longest known prefix", `{"a":"${lint.go.stdout}","b":"${lint.stdout}"}`, `{"a":"ok","b":"lint step"}`},
		{"null output", `{"a":"$nothing","b":"x${nothing}"}`, `{"a":null,"b":"xnull"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveArgs(json.RawMessage(tt.args), planTestOutputs())
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestResolveArgsErrors(t *testing.T) {
	tests := []struct {
		name, args string
		words      []string
	}{
		{"missing step", `{"a":"${ghost.x}"}`, []string{"args.a", "${ghost.x}", `step "ghost" has no output`}},
		{"missing field lists fields", `{"a":{"b":"x ${test.stdot}"}}`, []string{"args.a.b", "${test.stdot}", `no field "stdot"`, "exitCode, stderr, stdout, truncated"}},
		{"index out of range", `{"a":["${search.files[5]}"]}`, []string{"args.a[0]", "index 5 out of range", "has 2 elements"}},
		{"field of a string", `{"a":"${notes.x}"}`, []string{"${notes.x}", "is a string"}},
		{"index of an object", `{"a":"${test[0]}"}`, []string{"is an object, not an array"}},
		{"unterminated", `{"a":"${test.stdout"}`, []string{"args.a", "unterminated reference"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ResolveArgs(json.RawMessage(tt.args), planTestOutputs())
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestInterpolate(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"Write notes. Test output: ${test.stdout}", "Write notes. Test output: FAIL x_test.go:3\n"},
		{"$read", `{"content":"{\"version\":\"1.0\"}\n","lines":2,"path":"config.json"}`},
		{"${count} files, $$${count}", "7 files, $7"},
		{"$", "$"},
		{"${search.matches}", `[{"line":3,"path":"a.go"}]`},
	}
	for _, tt := range tests {
		got, err := Interpolate(tt.in, planTestOutputs())
		if err != nil {
			t.Errorf("Interpolate(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Interpolate(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if _, err := Interpolate("see ${missing}", planTestOutputs()); err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("missing step: err = %v", err)
	}
}

func TestStepReferences(t *testing.T) {
	s := &Step{
		ID:       "s",
		Args:     json.RawMessage(`{"b":"$read","a":["x ${search.files[0]} $$skip ${read.path}"]}`),
		Prompt:   "use ${notes}",
		When:     "${test.exitCode} != 0 && '${count}' == '7'",
		Checks:   []Check{{Expr: "$lint contains 'ok'", Message: "${msg.x}"}},
		Question: "q ${q1}", Options: []string{"${q2}"},
		Branches: []Branch{{When: "${br} > 1", Steps: []string{"x"}}},
	}
	want := []string{"search", "read", "notes", "test", "count", "lint", "msg", "q1", "q2", "br"}
	if got := s.References(); !slices.Equal(got, want) {
		t.Errorf("References() = %v, want %v", got, want)
	}
	if got := (&Step{ID: "x", Prompt: "no refs, $HOME"}).References(); len(got) != 0 {
		t.Errorf("no refs: %v", got)
	}
}

func TestParseTemplate(t *testing.T) {
	bad := []string{"${", "${a", "x ${a.b", "${}", "${a..b}", "${a[}", "${a[x]}", "${a.b]}"}
	for _, s := range bad {
		tpl, err := parseTemplate(s)
		if err == nil {
			// Syntax errors in the path surface when the ref is split.
			for _, sg := range tpl.segs {
				if sg.isRef {
					_, _, err = sg.ref.split(nil)
				}
			}
		}
		if err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}
