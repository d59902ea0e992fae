package plans

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestValidateProblemClasses has one case per problem class: the plan, the
// exact (step, field) of every problem, and words each message must hold.
func TestValidateProblemClasses(t *testing.T) {
	tests := []struct {
		name  string
		plan  string
		want  []problemKey
		words []string // each must appear in the messages, in order of problems
	}{
		{
			name:  "no steps",
			plan:  `{"steps":[]}`,
			want:  []problemKey{{"", "steps"}},
			words: []string{"no steps"},
		},
		{
			name:  "missing id",
			plan:  `{"steps":[{"tool":"read_file","args":{"path":"a"}}]}`,
			want:  []problemKey{{"", "steps[0].id"}},
			words: []string{"has no id"},
		},
		{
			name:  "malformed id",
			plan:  `{"steps":[{"id":"read file","tool":"read_file","args":{"path":"a"}}]}`,
			want:  []problemKey{{"read file", "id"}},
			words: []string{`id "read file" is malformed`},
		},
		{
			name:  "duplicate id",
			plan:  `{"steps":[{"id":"a","tool":"read_file","args":{"path":"a"}},{"id":"a","tool":"read_file","args":{"path":"b"}}]}`,
			want:  []problemKey{{"a", "id"}},
			words: []string{"steps 1 and 2"},
		},
		{
			name:  "unknown dependsOn",
			plan:  `{"steps":[{"id":"read","tool":"read_file","args":{"path":"a"}},{"id":"b","tool":"read_file","args":{"path":"a"},"dependsOn":["raed"]}]}`,
			want:  []problemKey{{"b", "dependsOn[0]"}},
			words: []string{`unknown step "raed": did you mean "read"?`},
		},
		{
			name:  "self dependency",
			plan:  `{"steps":[{"id":"a","tool":"read_file","args":{"path":"a"},"dependsOn":["a"]}]}`,
			want:  []problemKey{{"a", "dependsOn[0]"}},
			words: []string{"depends on itself"},
		},
		{
			name: "cycles, each named in order",
			plan: `{"steps":[
				{"id":"a","tool":"read_file","args":{"path":"a"},"dependsOn":["c"]},
				{"id":"b","tool":"read_file","args":{"path":"a"},"dependsOn":["a"]},
				{"id":"c","tool":"read_file","args":{"path":"a"},"dependsOn":["b"]},
				{"id":"x","tool":"read_file","args":{"path":"a"},"dependsOn":["y"]},
				{"id":"y","tool":"read_file","args":{"path":"a"},"dependsOn":["x"]},
				{"id":"ok","tool":"read_file","args":{"path":"a"},"dependsOn":["a"]}]}`,
			want:  []problemKey{{"a", "dependsOn"}, {"x", "dependsOn"}},
			words: []string{"cycle: a -> c -> b -> a", "cycle: x -> y -> x"},
		},
		{
			name:  "unknown tool with suggestion",
			plan:  `{"steps":[{"id":"a","tool":"read_fil","args":{"path":"a"}}]}`,
			want:  []problemKey{{"a", "tool"}},
			words: []string{`unknown tool "read_fil": did you mean "read_file"?`},
		},
		{
			name:  "tool step without tool",
			plan:  `{"steps":[{"id":"a"}]}`,
			want:  []problemKey{{"a", "tool"}},
			words: []string{"has no tool"},
		},
		{
			name:  "args: missing required field",
			plan:  `{"steps":[{"id":"a","tool":"write_file","args":{"path":"x"}}]}`,
			want:  []problemKey{{"a", "args.content"}},
			words: []string{`missing required field "content"`},
		},
		{
			name:  "args: wrong type deep inside",
			plan:  `{"steps":[{"id":"a","tool":"edit_file","args":{"path":"x","edits":[{"oldText":"a","newText":1}]}}]}`,
			want:  []problemKey{{"a", "args.edits[0].newText"}},
			words: []string{"must be string, not number"},
		},
		{
			name:  "args: unknown field",
			plan:  `{"steps":[{"id":"a","tool":"read_file","args":{"path":"x","line":3}}]}`,
			want:  []problemKey{{"a", "args.line"}},
			words: []string{`unknown field "line"`},
		},
		{
			name:  "args: constraint",
			plan:  `{"steps":[{"id":"a","tool":"read_file","args":{"path":"x","startLine":0}}]}`,
			want:  []problemKey{{"a", "args.startLine"}},
			words: []string{"minimum"},
		},
		{
			name:  "llm needs prompt",
			plan:  `{"steps":[{"id":"a","kind":"llm"}]}`,
			want:  []problemKey{{"a", "prompt"}},
			words: []string{"llm step needs a prompt"},
		},
		{
			name:  "agent needs prompt and known tools",
			plan:  `{"steps":[{"id":"a","kind":"agent","tools":["read_file","grep"]}]}`,
			want:  []problemKey{{"a", "prompt"}, {"a", "tools[1]"}},
			words: []string{"agent step needs a prompt", `unknown tool "grep"`},
		},
		{
			name:  "input needs question",
			plan:  `{"steps":[{"id":"a","kind":"input","options":["y"]}]}`,
			want:  []problemKey{{"a", "question"}},
			words: []string{"needs a question"},
		},
		{
			name:  "validation needs checks that parse",
			plan:  `{"steps":[{"id":"a","kind":"validation"},{"id":"b","kind":"validation","checks":[{"expr":"1 = 1"},{"expr":""}]}]}`,
			want:  []problemKey{{"a", "checks"}, {"b", "checks[0].expr"}, {"b", "checks[1].expr"}},
			words: []string{"at least one check", "write == to compare", "no expr"},
		},
		{
			name: "decision branches",
			plan: `{"steps":[
				{"id":"d","kind":"decision","branches":[{"steps":["yes"]},{"when":"true","steps":["no","ghost","d"]}]},
				{"id":"yes","tool":"read_file","args":{"path":"a"},"dependsOn":["d"]},
				{"id":"no","tool":"read_file","args":{"path":"a"}}]}`,
			want:  []problemKey{{"d", "branches[0].when"}, {"d", "branches[1].steps[0]"}, {"d", "branches[1].steps[1]"}, {"d", "branches[1].steps[2]"}},
			words: []string{"not the last", `"no" must depend on decision "d"`, `unknown step "ghost"`, "branch to itself"},
		},
		{
			name:  "decision without branches",
			plan:  `{"steps":[{"id":"d","kind":"decision"}]}`,
			want:  []problemKey{{"d", "branches"}},
			words: []string{"needs branches"},
		},
		{
			name: "reference to a non-dependency and to an unknown step",
			plan: `{"steps":[
				{"id":"read","tool":"read_file","args":{"path":"a"}},
				{"id":"other","tool":"read_file","args":{"path":"b"}},
				{"id":"w","tool":"write_file","dependsOn":["read"],"args":{"path":"x","content":"${read.content} ${other.content} ${nope.x}"}}]}`,
			want:  []problemKey{{"w", "args.content"}, {"w", "args.content"}},
			words: []string{`step "other" is not among this step's dependencies: add "other" to dependsOn`, `unknown step "nope"`},
		},
		{
			name:  "reference to itself and a bare dotted reference",
			plan:  `{"steps":[{"id":"a","kind":"llm","prompt":"${a}"},{"id":"b","kind":"llm","prompt":"x","when":"$a.stdout"}]}`,
			want:  []problemKey{{"a", "prompt"}, {"b", "when"}},
			words: []string{"own output", "to take a field write ${a.stdout}"},
		},
		{
			name:  "malformed reference",
			plan:  `{"steps":[{"id":"a","kind":"llm","prompt":"see ${a.x"}]}`,
			want:  []problemKey{{"a", "prompt"}},
			words: []string{"unterminated reference"},
		},
		{
			name: "bad durations and retry",
			plan: `{"steps":[{"id":"a","tool":"read_file","args":{"path":"a"},"timeout":"5 minutes",
				"retry":{"max":-1,"delay":"soon","maxDelay":"-1s"}},
				{"id":"b","tool":"read_file","args":{"path":"a"},"timeout":"0s"}]}`,
			want:  []problemKey{{"a", "timeout"}, {"a", "retry.max"}, {"a", "retry.delay"}, {"a", "retry.maxDelay"}, {"b", "timeout"}},
			words: []string{`"5 minutes" is not a duration`, "must not be negative", `"soon" is not a duration`, "must not be negative", "must be positive"},
		},
		{
			name:  "bad risk, approval, kind",
			plan:  `{"steps":[{"id":"a","tool":"read_file","args":{"path":"a"},"risk":"extreme","approval":"never"},{"id":"b","kind":"script"}]}`,
			want:  []problemKey{{"a", "risk"}, {"a", "approval"}, {"b", "kind"}},
			words: []string{`unknown risk "extreme"`, `unknown approval "never"`, `unknown kind "script"`},
		},
		{
			name:  "bad condition",
			plan:  `{"steps":[{"id":"a","tool":"read_file","args":{"path":"a"}},{"id":"b","tool":"read_file","args":{"path":"a"},"dependsOn":["a"],"when":"${a.content} == main"}]}`,
			want:  []problemKey{{"b", "when"}},
			words: []string{`unexpected word "main": quote strings`},
		},
		{
			name:  "fields of another kind",
			plan:  `{"steps":[{"id":"a","kind":"llm","prompt":"p","tool":"read_file","question":"q"}]}`,
			want:  []problemKey{{"a", "tool"}, {"a", "question"}},
			words: []string{"tool is not used by llm steps", "question is not used by llm steps"},
		},
	}
	reg := planTestRegistry()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, tt.plan)
			probs := ValidatePlan(p, reg, 0)
			if got := problemKeys(probs); !slices.Equal(got, tt.want) {
				t.Fatalf("problems at %v, want %v\n%s", got, tt.want, dumpProblems(probs))
			}
			for i, w := range tt.words {
				if !strings.Contains(probs[i].Message, w) {
					t.Errorf("problem %d %q does not say %q", i, probs[i].Message, w)
				}
				if probs[i].File != "test.json" {
					t.Errorf("problem %d names file %q, want test.json", i, probs[i].File)
				}
			}
		})
	}
}

func dumpProblems(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("  " + p.String() + "\n")
	}
	return b.String()
}

func TestValidateTooManySteps(t *testing.T) {
	var steps []string
	for i := range 5 {
		steps = append(steps, fmt.Sprintf(`{"id":"s%d","tool":"read_file","args":{"path":"a"}}`, i))
	}
	p := mustParse(t, `{"steps":[`+strings.Join(steps, ",")+`]}`)
	if probs := ValidatePlan(p, planTestRegistry(), 5); len(probs) != 0 {
		t.Fatalf("5 steps with max 5: %s", dumpProblems(probs))
	}
	probs := ValidatePlan(p, planTestRegistry(), 4)
	if len(probs) != 1 || probs[0].Field != "steps" || !strings.Contains(probs[0].Message, "5 steps, more than the 4 allowed") {
		t.Fatalf("got %s", dumpProblems(probs))
	}
	// The default applies for maxSteps <= 0.
	var many []*Step
	for i := range DefaultMaxSteps + 1 {
		many = append(many, &Step{ID: fmt.Sprintf("s%d", i), Tool: "read_file", Args: []byte(`{"path":"a"}`)})
	}
	probs = ValidatePlan(&Plan{Steps: many}, planTestRegistry(), 0)
	if len(probs) != 1 || !strings.Contains(probs[0].Message, "201 steps") {
		t.Fatalf("got %s", dumpProblems(probs))
	}
}

// TestValidateReportsEveryProblem checks that one plan with many problems
// gets all of them, not the first.
func TestValidateReportsEveryProblem(t *testing.T) {
	p := mustParse(t, `{"steps":[
		{"id":"a","tool":"raed_file","args":{"path":"x"},"timeout":"forever"},
		{"id":"a","tool":"write_file","args":{"path":1,"content":"x"}},
		{"id":"b c","kind":"llm"},
		{"id":"d","tool":"read_file","args":{"path":"x"},"dependsOn":["e","zz"],"when":"((", "risk":"huge"},
		{"id":"e","tool":"read_file","args":{"path":"${q.path}"},"dependsOn":["d"],"retry":{"max":-2}},
		{"id":"q","kind":"input"}]}`)
	probs := ValidatePlan(p, planTestRegistry(), 0)
	want := []problemKey{
		{"a", "id"}, {"b c", "id"}, // ids are checked first
		{"a", "timeout"}, {"a", "tool"},
		{"a", "args.path"},
		{"b c", "prompt"},
		{"d", "risk"}, {"d", "dependsOn[1]"}, {"d", "when"},
		{"e", "retry.max"}, {"e", "args.path"},
		{"q", "question"},
		{"d", "dependsOn"},
	}
	if got := problemKeys(probs); !slices.Equal(got, want) {
		t.Fatalf("problems at\n%v\nwant\n%v\n%s", got, want, dumpProblems(probs))
	}
	var ve *ValidationError
	err := error(&ValidationError{Problems: probs})
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "13 problems") || !strings.Contains(err.Error(), `step "d": when: condition`) {
		t.Errorf("Error() = %s", err)
	}
}

// TestValidateArgsWithReferences: a reference standing for a value of
// another type is not a schema error, but real errors next to it still are.
func TestValidateArgsWithReferences(t *testing.T) {
	tests := []struct {
		name string
		args string
		tool string
		want []problemKey
	}{
		{"whole ref for an array", `{"path":"a","edits":"$plan"}`, "edit_file", nil},
		{"whole ref for an integer", `{"path":"a","startLine":"${plan.line}"}`, "read_file", nil},
		{"whole ref for an object with a map schema", `{"command":"go test","env":"$plan"}`, "run_command", nil},
		{"ref items inside an array", `{"command":"x","okExitCodes":["${plan.code}",1]}`, "run_command", nil},
		{"whole ref in an enum", `{"action":"${plan.action}"}`, "git", nil},
		{"interpolated string still a string", `{"path":"src/${plan.name}.go"}`, "read_file", nil},
		{"interpolated string where an integer is wanted", `{"path":"a","startLine":"line ${plan.line}"}`, "read_file", []problemKey{{"s", "args.startLine"}}},
		{"ref does not excuse a missing field", `{"path":"$plan"}`, "write_file", []problemKey{{"s", "args.content"}}},
		{"ref does not excuse a wrong sibling", `{"path":"$plan","startLine":"x"}`, "read_file", []problemKey{{"s", "args.startLine"}}},
		{"escaped dollar is a plain string", `{"path":"a","startLine":"$$plan"}`, "read_file", []problemKey{{"s", "args.startLine"}}},
		{"anyOf branch passes by ref", `{"path":"$plan"}`, "list_dir", nil},
		{"anyOf branch fails without ref", `{"path":3}`, "list_dir", []problemKey{{"s", "args.path"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Plan{Steps: []*Step{
				{ID: "plan", Kind: KindLLM, Prompt: "x"},
				{ID: "s", Tool: tt.tool, Args: []byte(tt.args), DependsOn: []string{"plan"}},
			}}
			probs := ValidatePlan(p, planTestRegistry(), 0)
			if got := problemKeys(probs); !slices.Equal(got, tt.want) {
				t.Fatalf("problems at %v, want %v\n%s", got, tt.want, dumpProblems(probs))
			}
		})
	}
}

func TestValidateDottedIDs(t *testing.T) {
	// Step ids may contain dots: "${lint.go.stdout}" refers to step
	// "lint.go", found as the longest prefix naming a step.
	p := mustParse(t, `{"steps":[
		{"id":"lint.go","tool":"run_command","args":{"command":"go vet"}},
		{"id":"report","kind":"llm","prompt":"${lint.go.stdout}","dependsOn":["lint.go"]}]}`)
	if probs := ValidatePlan(p, planTestRegistry(), 0); len(probs) != 0 {
		t.Fatalf("unexpected problems:\n%s", dumpProblems(probs))
	}
	if got := p.References(p.Step("report")); !slices.Equal(got, []string{"lint.go"}) {
		t.Errorf("Plan.References = %v", got)
	}
}

func TestValidateNilRegistrySkipsToolChecks(t *testing.T) {
	p := mustParse(t, `{"steps":[{"id":"a","tool":"anything","args":{"x":1}}]}`)
	if probs := ValidatePlan(p, nil, 0); len(probs) != 0 {
		t.Fatalf("nil registry: %s", dumpProblems(probs))
	}
	if probs := ValidatePlan(p, planTestRegistry(), 0); len(probs) != 1 {
		t.Fatalf("with registry: %s", dumpProblems(probs))
	}
}

func TestValidateLongChainAndBigCycle(t *testing.T) {
	// A long dependency chain must not overflow the stack, and a cycle
	// through every step is named once, in order.
	n := 5000
	steps := make([]*Step, n)
	for i := range steps {
		steps[i] = &Step{ID: fmt.Sprintf("s%d", i), Kind: KindLLM, Prompt: "x"}
		if i > 0 {
			steps[i].DependsOn = []string{fmt.Sprintf("s%d", i-1)}
		}
	}
	p := &Plan{Steps: steps}
	if probs := ValidatePlan(p, nil, n); len(probs) != 0 {
		t.Fatalf("chain: %s", dumpProblems(probs[:1]))
	}
	steps[0].DependsOn = []string{fmt.Sprintf("s%d", n-1)}
	probs := ValidatePlan(p, nil, n)
	if len(probs) != 1 || !strings.HasPrefix(probs[0].Message, fmt.Sprintf("dependency cycle: s0 -> s%d -> s%d", n-1, n-2)) ||
		!strings.Contains(probs[0].Message, "s1 -> s0 (") {
		t.Fatalf("cycle: %d problems, first %.200s", len(probs), probs[0].Message)
	}
}
