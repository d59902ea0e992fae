package plans

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchPlan is a 200-step plan (the default maximum) with references,
// conditions and args for every step.
func benchPlan() []byte {
	var steps []string
	for i := range DefaultMaxSteps {
		deps := ""
		if i > 0 {
			deps = fmt.Sprintf(`,"dependsOn":["s%d"]`, i-1)
		}
		switch i % 4 {
		case 0:
			steps = append(steps, fmt.Sprintf(`{"id":"s%d","tool":"read_file","args":{"path":"f%d.go","startLine":1}%s}`, i, i, deps))
		case 1:
			steps = append(steps, fmt.Sprintf(`{"id":"s%d","tool":"run_command","args":{"command":"go test ./... ${s%d.path}","okExitCodes":[0,1]},"retry":{"max":2,"delay":"1s"},"timeout":"5m"%s}`, i, i-1, deps))
		case 2:
			steps = append(steps, fmt.Sprintf(`{"id":"s%d","kind":"validation","checks":[{"expr":"${s%d.exitCode} == 0 && ${s%d.stdout} contains 'ok'"}]%s}`, i, i-1, i-1, deps))
		default:
			steps = append(steps, fmt.Sprintf(`{"id":"s%d","tool":"edit_file","when":"${s%d.passed} > 0","args":{"path":"a.go","edits":[{"oldText":"a","newText":"${s%d.stdout}"}]}%s}`, i, i-1, i-2, deps))
		}
	}
	return []byte(`{"title":"bench","steps":[` + strings.Join(steps, ",\n") + `]}`)
}

// BenchmarkParsePlan/parse is ParsePlan; /json is a plain json.Unmarshal of
// the same bytes, the floor ParsePlan is compared with.
func BenchmarkParsePlan(b *testing.B) {
	data := benchPlan()
	b.Run("parse", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := ParsePlan("bench.json", data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var p Plan
			if err := json.Unmarshal(data, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkValidatePlan(b *testing.B) {
	p, err := ParsePlan("bench.json", benchPlan())
	if err != nil {
		b.Fatal(err)
	}
	reg := planTestRegistry()
	if probs := ValidatePlan(p, reg, 0); len(probs) > 0 {
		b.Fatalf("bench plan invalid: %s", dumpProblems(probs))
	}
	for b.Loop() {
		ValidatePlan(p, reg, 0)
	}
}

func BenchmarkEvalCondition(b *testing.B) {
	out := planTestOutputs()
	for b.Loop() {
		if ok, err := EvalCondition("${test.exitCode} != 0 && ${test.stdout} contains 'FAIL'", out); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
