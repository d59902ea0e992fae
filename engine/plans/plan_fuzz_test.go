package plans

import (
	"encoding/json"
	"testing"
)

// FuzzParsePlan: parsing never panics; a plan that parses can be
// validated, cloned, walked for references, marshalled and parsed again
// without panicking. Seeds: testdata/fuzz/FuzzParsePlan.
func FuzzParsePlan(f *testing.F) {
	f.Add([]byte(`{"steps":[{"id":"a","tool":"read_file","args":{"path":"${b.x[0]}"},"when":"$b != 1"}]}`), false)
	f.Add([]byte("steps:\n  - id: a\n    kind: llm\n    prompt: ${x}\n"), true)
	reg := planTestRegistry()
	f.Fuzz(func(t *testing.T, data []byte, asYAML bool) {
		name := "fuzz.json"
		if asYAML {
			name = "fuzz.yaml"
		}
		p, err := ParsePlan(name, data)
		if err != nil {
			if p != nil {
				t.Fatalf("plan and error both returned: %v", err)
			}
			return
		}
		probs := ValidatePlan(p, reg, 0)
		_ = (&ValidationError{Problems: probs}).Error()
		c := p.Clone()
		for _, s := range c.Steps {
			if s == nil {
				continue
			}
			_ = s.References()
			_ = c.References(s)
			_, _ = ResolveArgs(s.Args, planTestOutputs())
			_, _ = Interpolate(s.Prompt, planTestOutputs())
			if s.When != "" {
				_, _ = EvalCondition(s.When, planTestOutputs())
			}
		}
		if len(probs) == 0 {
			_, _ = ApplyEdits(p, []Edit{{Op: EditMove, StepID: p.Steps[0].ID}}, EditOptions{Tools: reg})
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if _, err := ParsePlan("again.json", out); err != nil {
			t.Fatalf("a parsed plan does not parse again: %v\n%s", err, out)
		}
	})
}

// FuzzCondition: conditions never panic, parsed or evaluated.
func FuzzCondition(f *testing.F) {
	for _, s := range []string{"${test.exitCode} != 0", "!(${a.b[0]} contains 'x') || 1 < 2", "'${x}' == \"y\"", "$read", "((", "-1e9 >= .5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		c, err := parseCond(expr)
		_, err2 := EvalCondition(expr, planTestOutputs())
		if err != nil && err2 == nil {
			t.Fatalf("%q: parse error %v but evaluation succeeded", expr, err)
		}
		if err == nil {
			_ = c.refs("when", nil)
		}
	})
}
