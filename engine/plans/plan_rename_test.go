package plans

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

func TestStepRenamed(t *testing.T) {
	rename := map[string]string{"read": "_rp1_read", "test": "_rp1_test", "lint.go": "_rp1_lint.go"}
	s := &Step{
		ID:        "test",
		Args:      json.RawMessage(`{"command":"echo $HOME $$read ${read.path} $${read} ${ read.x }","n":"$read","keep":"$other"}`),
		Prompt:    "see ${read.content[0]} and ${lint.go.stdout} and ${other.x}",
		Question:  "$read",
		Options:   []string{"${test}", "plain $test"},
		When:      `${read.n} > 1 && $test contains '${read.x}' || "$read" == 'x'`,
		Checks:    []Check{{Expr: "${test.exitCode} == 0", Message: "failed: ${test.stderr}"}},
		Branches:  []Branch{{When: "$read", Steps: []string{"test", "other"}}},
		DependsOn: []string{"read", "other"},
	}
	before := s.Clone()
	r := s.Renamed(rename)
	if !reflect.DeepEqual(s, before) {
		t.Fatal("Renamed changed its receiver")
	}
	var args map[string]string
	if err := json.Unmarshal(r.Args, &args); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"command": "echo $HOME $$read ${_rp1_read.path} $${read} ${ _rp1_read.x }",
		"n":       "$_rp1_read",
		"keep":    "$other",
	}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("args = %v\nwant  %v", args, want)
	}
	checks := []struct{ got, want string }{
		{r.ID, "_rp1_test"},
		{r.Prompt, "see ${_rp1_read.content[0]} and ${_rp1_lint.go.stdout} and ${other.x}"},
		{r.Question, "$_rp1_read"},
		{r.Options[0], "${_rp1_test}"},
		{r.Options[1], "plain $test"},
		{r.When, `${_rp1_read.n} > 1 && $_rp1_test contains '${_rp1_read.x}' || "$_rp1_read" == 'x'`},
		{r.Checks[0].Expr, "${_rp1_test.exitCode} == 0"},
		{r.Checks[0].Message, "failed: ${_rp1_test.stderr}"},
		{r.Branches[0].When, "$_rp1_read"},
	}
	for i, c := range checks {
		if c.got != c.want {
			t.Errorf("%d: got %q, want %q", i, c.got, c.want)
		}
	}
	if !slices.Equal(r.DependsOn, []string{"_rp1_read", "other"}) || !slices.Equal(r.Branches[0].Steps, []string{"_rp1_test", "other"}) {
		t.Errorf("dependsOn %v branches %v", r.DependsOn, r.Branches[0].Steps)
	}
	// The renamed references resolve against renamed outputs.
	out := Outputs{"_rp1_read": json.RawMessage(`{"path":"p","x":"y","n":2,"content":["c"]}`), "_rp1_test": json.RawMessage(`{"exitCode":0,"y":1}`)}
	if ok, err := EvalCondition(r.When, out); err != nil || !ok {
		t.Errorf("renamed when: %v %v", ok, err)
	}
	// Args without references are kept byte for byte.
	plain := (&Step{ID: "a", Args: json.RawMessage(`{"b":1,"a":"x"}`)}).Renamed(rename)
	if string(plain.Args) != `{"b":1,"a":"x"}` {
		t.Errorf("plain args rewritten: %s", plain.Args)
	}
}
