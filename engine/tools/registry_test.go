package tools

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The table of plan-format.md: name, category, risk.
var wantTools = []struct {
	name string
	cat  Category
	risk Risk
}{
	{"apply_patch", CategoryWrite, RiskMedium},
	{"ask_user", CategoryInput, RiskLow},
	{"delete_file", CategoryDelete, RiskHigh},
	{"edit_file", CategoryWrite, RiskMedium},
	{"git", CategoryGit, RiskMedium},
	{"json_patch", CategoryWrite, RiskMedium},
	{"list_dir", CategoryRead, RiskLow},
	{"move_file", CategoryWrite, RiskMedium},
	{"read_file", CategoryRead, RiskLow},
	{"run_command", CategoryCommand, RiskHigh},
	{"search_code", CategoryRead, RiskLow},
	{"search_files", CategoryRead, RiskLow},
	{"write_file", CategoryWrite, RiskMedium},
}

func TestBuiltinRegistry(t *testing.T) {
	list := Builtin().List()
	if len(list) != len(wantTools) {
		t.Fatalf("Builtin has %d tools, want %d", len(list), len(wantTools))
	}
	for i, w := range wantTools {
		tool := list[i]
		if tool.Name() != w.name || tool.Category() != w.cat || tool.Risk() != w.risk {
			t.Errorf("tool %d = %s/%s/%s, want %s/%s/%s", i, tool.Name(), tool.Category(), tool.Risk(), w.name, w.cat, w.risk)
		}
		if d := tool.Description(); len(d) < 80 || !strings.Contains(d, "\n") {
			t.Errorf("%s: description too short to guide a model: %q", tool.Name(), d)
		}
		if _, ok := tool.(Describer); !ok {
			t.Errorf("%s does not implement Describer", tool.Name())
		}
	}
}

func compileSchema(t *testing.T, tool Tool) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tool.Schema()))
	if err != nil {
		t.Fatalf("%s: schema is not JSON: %v", tool.Name(), err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "mem://" + tool.Name() + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatalf("%s: %v", tool.Name(), err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s: schema does not compile: %v", tool.Name(), err)
	}
	return s
}

func TestSchemas(t *testing.T) {
	cases := map[string]struct{ good, bad []string }{
		"read_file": {
			good: []string{`{"path":"a.go"}`, `{"path":"a.go","startLine":1,"endLine":10}`},
			bad:  []string{`{}`, `{"path":""}`, `{"path":"a","startLine":0}`, `{"path":"a","startLine":"1"}`, `{"path":"a","extra":1}`},
		},
		"list_dir": {
			good: []string{`{"path":"."}`, `{"path":"src","depth":3}`},
			bad:  []string{`{}`, `{"path":".","depth":0}`, `{"path":".","depth":11}`},
		},
		"search_files": {
			good: []string{`{"glob":"**/*.go"}`},
			bad:  []string{`{}`, `{"glob":""}`, `{"glob":1}`, `{"pattern":"x"}`},
		},
		"search_code": {
			good: []string{`{"pattern":"func \\w+"}`, `{"pattern":"x","glob":"*.go","maxResults":10}`},
			bad:  []string{`{}`, `{"pattern":""}`, `{"pattern":"x","maxResults":0}`, `{"pattern":"x","glob":""}`},
		},
		"write_file": {
			good: []string{`{"path":"a","content":""}`},
			bad:  []string{`{"path":"a"}`, `{"content":"x"}`, `{"path":"a","content":1}`},
		},
		"edit_file": {
			good: []string{`{"path":"a","edits":[{"oldText":"x","newText":""}]}`},
			bad: []string{`{"path":"a","edits":[]}`, `{"path":"a","edits":[{"oldText":"","newText":"y"}]}`,
				`{"path":"a","edits":[{"oldText":"x"}]}`, `{"path":"a","edits":[{"old":"x","newText":"y"}]}`},
		},
		"apply_patch": {
			good: []string{`{"patch":"--- a/x\n+++ b/x\n"}`},
			bad:  []string{`{}`, `{"patch":""}`},
		},
		"json_patch": {
			good: []string{`{"path":"a.json","ops":[{"op":"replace","path":"/v","value":"2"}]}`,
				`{"path":"a.json","ops":[{"op":"remove","path":"/v"},{"op":"move","from":"/a","path":"/b"}]}`,
				`{"path":"a.json","ops":[{"op":"add","path":"/v","value":null}]}`},
			bad: []string{`{"path":"a.json","ops":[]}`, `{"path":"a.json","ops":[{"op":"frob","path":"/v"}]}`,
				`{"path":"a.json","ops":[{"op":"replace","path":"/v"}]}`, `{"path":"a.json","ops":[{"op":"move","path":"/v"}]}`},
		},
		"move_file": {
			good: []string{`{"from":"a","to":"b"}`},
			bad:  []string{`{"from":"a"}`, `{"from":"","to":"b"}`},
		},
		"delete_file": {
			good: []string{`{"path":"a"}`},
			bad:  []string{`{}`, `{"path":["a"]}`},
		},
		"run_command": {
			good: []string{`{"command":"go test ./..."}`, `{"command":"x","cwd":"sub","env":{"A_1":"v"},"timeout":"1m30s","okExitCodes":[0,1]}`},
			bad: []string{`{}`, `{"command":""}`, `{"command":"x","timeout":"soon"}`, `{"command":"x","timeout":30}`,
				`{"command":"x","env":{"A":1}}`, `{"command":"x","env":{"1A":"v"}}`, `{"command":"x","okExitCodes":[]}`, `{"command":"x","okExitCodes":[256]}`},
		},
		"git": {
			good: []string{`{"action":"status"}`, `{"action":"log","maxCount":5,"paths":["a"]}`, `{"action":"commit","message":"m"}`,
				`{"action":"apply","patch":"p"}`, `{"action":"diff","staged":true,"ref":"HEAD~1"}`},
			bad: []string{`{}`, `{"action":"push"}`, `{"action":"commit"}`, `{"action":"apply"}`, `{"action":"diff","ref":"--output=x"}`},
		},
		"ask_user": {
			good: []string{`{"question":"Which?","options":["a","b"]}`, `{"question":"Why?"}`},
			bad:  []string{`{}`, `{"question":""}`, `{"question":"q","options":["a","a"]}`},
		},
	}
	reg := Builtin()
	for _, tool := range reg.List() {
		t.Run(tool.Name(), func(t *testing.T) {
			s := compileSchema(t, tool)
			c, ok := cases[tool.Name()]
			if !ok {
				t.Fatalf("no schema cases for %s", tool.Name())
			}
			for _, g := range c.good {
				v, err := jsonschema.UnmarshalJSON(strings.NewReader(g))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Validate(v); err != nil {
					t.Errorf("valid args %s rejected: %v", g, err)
				}
			}
			for _, b := range c.bad {
				v, err := jsonschema.UnmarshalJSON(strings.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Validate(v); err == nil {
					t.Errorf("invalid args %s accepted", b)
				}
			}
			// Every good example also decodes into the typed args.
			for _, g := range c.good {
				if !json.Valid([]byte(g)) {
					t.Fatalf("bad test JSON %s", g)
				}
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	reg := Builtin()
	rc, _ := reg.Get("run_command")
	d := rc.(Describer).Describe(json.RawMessage(`{"command":"make test","cwd":"sub","env":{"TOKEN":"s3cret"}}`))
	if d.Command != "make test" || d.Cwd != "sub" {
		t.Errorf("run_command Describe = %+v, want the command and cwd", d)
	}
	if strings.Contains(d.Title+d.Detail+d.Command, "s3cret") {
		t.Errorf("run_command Describe shows an env value: %+v", d)
	}
	g, _ := reg.Get("git")
	for _, action := range []string{"commit", "apply"} {
		d := g.(Describer).Describe(json.RawMessage(`{"action":"` + action + `","message":"m","patch":"p"}`))
		if !strings.Contains(d.Title, "approval") {
			t.Errorf("git %s Describe does not say it needs approval: %+v", action, d)
		}
	}
	ra := g.(RiskAssessor)
	if ra.RiskOf(json.RawMessage(`{"action":"status"}`)) != RiskLow || ra.RiskOf(json.RawMessage(`{"action":"commit","message":"m"}`)) != RiskHigh {
		t.Error("git RiskOf: want low for status and high for commit")
	}
}
