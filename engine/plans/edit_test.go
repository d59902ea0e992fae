package plans

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const editBase = `{"id":"p1","steps":[
	{"id":"read","tool":"read_file","args":{"path":"a"}},
	{"id":"test","tool":"run_command","args":{"command":"go test"},"dependsOn":["read"]},
	{"id":"notes","kind":"llm","prompt":"${test.stdout}","dependsOn":["test"]}]}`

func planStepIDs(p *Plan) []string {
	var ids []string
	for _, s := range p.Steps {
		ids = append(ids, s.ID)
	}
	return ids
}

func TestEditPlan(t *testing.T) {
	e := editor{planTestRegistry()}
	tests := []struct {
		name  string
		edits []Edit
		ids   []string
		check func(t *testing.T, p *Plan)
	}{
		{"update replaces the step", []Edit{{Op: "update", StepID: "test", Step: &Step{Tool: "run_command", Args: json.RawMessage(`{"command":"go test -race ./..."}`), DependsOn: []string{"read"}}}},
			[]string{"read", "test", "notes"}, func(t *testing.T, p *Plan) {
				if string(p.Step("test").Args) != `{"command":"go test -race ./..."}` {
					t.Errorf("args %s", p.Step("test").Args)
				}
			}},
		{"insert at the end", []Edit{{Op: "insert", Step: &Step{ID: "vet", Tool: "run_command", Args: json.RawMessage(`{"command":"go vet"}`)}}},
			[]string{"read", "test", "notes", "vet"}, nil},
		{"insert after", []Edit{{Op: "insert", After: "read", Step: &Step{ID: "vet", Tool: "run_command", Args: json.RawMessage(`{"command":"go vet"}`)}}},
			[]string{"read", "vet", "test", "notes"}, nil},
		{"remove a leaf", []Edit{{Op: "remove", StepID: "notes"}}, []string{"read", "test"}, nil},
		{"move to the front", []Edit{{Op: "move", StepID: "notes"}}, []string{"notes", "read", "test"}, nil},
		{"move after", []Edit{{Op: "move", StepID: "read", After: "test"}}, []string{"test", "read", "notes"}, nil},
		{"move after the last", []Edit{{Op: "move", StepID: "read", After: "notes"}}, []string{"test", "notes", "read"}, nil},
		{"skip and unskip", []Edit{{Op: "skip", StepID: "notes"}, {Op: "skip", StepID: "test"}, {Op: "unskip", StepID: "test"}},
			[]string{"read", "test", "notes"}, func(t *testing.T, p *Plan) {
				if !p.Step("notes").Skip || p.Step("test").Skip {
					t.Error("skip flags")
				}
			}},
		{"several edits in order", []Edit{
			{Op: "remove", StepID: "notes"},
			{Op: "insert", After: "read", Step: &Step{ID: "notes", Kind: KindLLM, Prompt: "${read.content}", DependsOn: []string{"read"}}},
		}, []string{"read", "notes", "test"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, editBase)
			before := p.Clone()
			np, err := e.EditPlan(p, tt.edits, "because")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p, before) {
				t.Error("EditPlan changed its input")
			}
			if got := planStepIDs(np); !slices.Equal(got, tt.ids) {
				t.Errorf("steps %v, want %v", got, tt.ids)
			}
			if np.Version != p.Version+1 || len(np.History) != 1 {
				t.Fatalf("version %d history %+v", np.Version, np.History)
			}
			h := np.History[0]
			if h.Version != np.Version || h.Source != "user" || h.Reason != "because" || h.Action != "edit" || h.Time.IsZero() {
				t.Errorf("history entry %+v", h)
			}
			if tt.check != nil {
				tt.check(t, np)
			}
			// The edited plan shares nothing with the input.
			np.Steps[0].DependsOn = append(np.Steps[0].DependsOn, "x")
			if !reflect.DeepEqual(p, before) {
				t.Error("edited plan aliases the input")
			}
		})
	}
}

func TestEditPlanRefused(t *testing.T) {
	e := editor{planTestRegistry()}
	tests := []struct {
		name  string
		edits []Edit
		want  []problemKey
		words []string
	}{
		{"remove a step others depend on", []Edit{{Op: "remove", StepID: "read"}},
			[]problemKey{{"test", "dependsOn[0]"}}, []string{`unknown step "read"`}},
		{"unknown step", []Edit{{Op: "skip", StepID: "ghost"}},
			[]problemKey{{"ghost", "edits[0].stepId"}}, []string{`edit 1 (skip): no step "ghost" in plan version 1`}},
		{"unknown op and missing step", []Edit{{Op: "rename", StepID: "read"}, {Op: "insert"}, {Op: "update", StepID: "read"}},
			[]problemKey{{"read", "edits[0].op"}, {"", "edits[1].step"}, {"read", "edits[2].step"}}, []string{`unknown op "rename"`, "missing", "missing"}},
		{"insert a duplicate id", []Edit{{Op: "insert", Step: &Step{ID: "read", Kind: KindLLM, Prompt: "x"}}},
			[]problemKey{{"read", "id"}}, []string{"duplicate id"}},
		{"insert after unknown", []Edit{{Op: "insert", After: "zzz", Step: &Step{ID: "n", Kind: KindLLM, Prompt: "x"}}},
			[]problemKey{{"", "edits[0].after"}}, []string{`no step "zzz"`}},
		{"update to an invalid step reports all", []Edit{{Op: "update", StepID: "test", Step: &Step{Tool: "run_comand", Timeout: "soon", DependsOn: []string{"notes"}}}},
			[]problemKey{{"test", "timeout"}, {"test", "tool"}, {"test", "dependsOn"}}, []string{"not a duration", `did you mean "run_command"`, "cycle: test -> notes -> test"}},
		{"update cannot rename", []Edit{{Op: "update", StepID: "test", Step: &Step{ID: "test2", Tool: "run_command", Args: json.RawMessage(`{"command":"x"}`)}}},
			[]problemKey{{"test", "edits[0].step.id"}}, []string{"cannot rename"}},
		{"move after itself", []Edit{{Op: "move", StepID: "test", After: "test"}},
			[]problemKey{{"test", "edits[0].after"}}, []string{"after itself"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, editBase)
			np, err := e.EditPlan(p, tt.edits, "r")
			var ve *ValidationError
			if !errors.As(err, &ve) || np != nil {
				t.Fatalf("err = %v, plan %v; want *ValidationError", err, np)
			}
			if got := problemKeys(ve.Problems); !slices.Equal(got, tt.want) {
				t.Fatalf("problems at %v, want %v\n%s", got, tt.want, dumpProblems(ve.Problems))
			}
			for i, w := range tt.words {
				if !strings.Contains(ve.Problems[i].Message, w) {
					t.Errorf("problem %d %q does not say %q", i, ve.Problems[i].Message, w)
				}
			}
			if p.Version != 1 || len(p.History) != 0 {
				t.Error("refused edit changed the plan")
			}
		})
	}
}

func TestApplyEditsRecordsSource(t *testing.T) {
	p := mustParse(t, editBase)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	np, err := ApplyEdits(p, []Edit{
		{Op: "insert", After: "test", Step: &Step{ID: "_rp1_fix", Kind: KindAgent, Prompt: "fix ${test.stdout}", DependsOn: []string{"test"}}},
		{Op: "update", StepID: "notes", Step: &Step{Kind: KindLLM, Prompt: "${test.stdout}", DependsOn: []string{"test", "_rp1_fix"}}},
	}, EditOptions{Tools: planTestRegistry(), Source: "recovery", Reason: "tests failed", Action: "insert_recovery_steps", Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	want := PlanUpdate{Version: 2, Time: at, Source: "recovery", Reason: "tests failed", Action: "insert_recovery_steps", StepIDs: []string{"_rp1_fix", "notes"}}
	if !reflect.DeepEqual(np.History, []PlanUpdate{want}) {
		t.Errorf("history %+v, want %+v", np.History, want)
	}
	// A second edit appends to the history.
	np2, err := ApplyEdits(np, []Edit{{Op: "skip", StepID: "_rp1_fix"}}, EditOptions{Tools: planTestRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if np2.Version != 3 || len(np2.History) != 2 || np2.History[1].Source != "user" || len(np.History) != 1 {
		t.Errorf("second edit: version %d history %+v", np2.Version, np2.History)
	}
}

func TestCheckVersion(t *testing.T) {
	p := mustParse(t, editBase)
	if err := CheckVersion(p, 1); err != nil {
		t.Errorf("current version: %v", err)
	}
	for _, v := range []int{0, 2} {
		err := CheckVersion(p, v)
		if !errors.Is(err, ErrStaleVersion) || !strings.Contains(err.Error(), `plan "p1" is at version 1`) {
			t.Errorf("version %d: %v", v, err)
		}
	}
}

func TestClone(t *testing.T) {
	data, err := readFixture("valid/full.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePlan("full.json", data)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Clone()
	if !reflect.DeepEqual(p, c) {
		t.Fatal("clone differs")
	}
	// Change every pointer, slice and map-like field of the clone.
	for _, s := range c.Steps {
		s.ID += "x"
		if len(s.Args) > 0 {
			s.Args[0] = '['
		}
		if len(s.DependsOn) > 0 {
			s.DependsOn[0] = "zz"
		}
		if len(s.Tools) > 0 {
			s.Tools[0] = "zz"
		}
		if len(s.Options) > 0 {
			s.Options[0] = "zz"
		}
		if len(s.Checks) > 0 {
			s.Checks[0].Expr = "zz"
		}
		if len(s.Branches) > 0 {
			s.Branches[0].Steps[0] = "zz"
		}
		if s.Critical != nil {
			*s.Critical = !*s.Critical
		}
		if s.Reversible != nil {
			*s.Reversible = !*s.Reversible
		}
		if s.Retry != nil {
			s.Retry.Max = 99
		}
	}
	c.History[0].StepIDs[0] = "zz"
	p2, _ := ParsePlan("full.json", data)
	if !reflect.DeepEqual(p, p2) {
		t.Error("changing the clone changed the original")
	}
	var nilPlan *Plan
	if nilPlan.Clone() != nil || nilPlan.Step("x") != nil {
		t.Error("nil plan")
	}
}
