package plans

import (
	"strings"
	"testing"
)

func TestEvalCondition(t *testing.T) {
	tests := []struct {
		expr string
		want bool
	}{
		{"${test.exitCode} != 0", true},
		{"${test.exitCode} == 0", false},
		{"${test.exitCode} == 1 && !${test.truncated}", true},
		{"${test.exitCode} > 0 || ${ghost.x} == 1", true}, // short-circuit: ghost never resolved
		{"${test.exitCode} == 0 && ${ghost.x} == 1", false},
		{"${test.stdout} contains 'FAIL'", true},
		{`${test.stdout} contains "PASS"`, false},
		{"!(${test.stdout} contains 'PASS')", true},
		{"${search.files} contains 'a.go'", true},
		{"${search.files} contains 'z.go'", false},
		{"$search contains 'files'", true}, // object: has key
		{"${count} >= 7 && ${count} < 7.5", true},
		{"${count} <= 6", false},
		{"'${count}' == '7'", true},    // interpolated into a string literal
		{"${read.lines} == '2'", true}, // a string holding a number compares as a number
		{"' 3\n' > 2", true},           // trimmed
		{"${read.path} == 'config.json'", true},
		{"${read.path} < 'd'", true}, // strings order lexically
		{"${read.path} != null", true},
		{"$nothing == null", true},
		{"$nothing", false},
		{"${search.files}", true},
		{"${test.stderr}", false},
		{"true", true},
		{"false || (true && !false)", true},
		{"1 == 1.0", true},
		{"-1 < 0", true},
		{"2e3 == 2000", true},
		{"'a' == 'b' || 'x' != 'y'", true},
		{"${search.matches[0]} == ${search.matches[-1]}", true}, // deep equality
		{"${test.truncated} == false", true},
		{"'false'", false},
		{"'it''s'", false}, // two strings side by side are a syntax error, checked below
	}
	out := planTestOutputs()
	for _, tt := range tests {
		if tt.expr == "'it''s'" {
			continue
		}
		got, err := EvalCondition(tt.expr, out)
		if err != nil {
			t.Errorf("%s: %v", tt.expr, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%s = %v, want %v", tt.expr, got, tt.want)
		}
	}
}

func TestConditionSyntaxErrors(t *testing.T) {
	tests := []struct{ expr, words string }{
		{"", "empty condition"},
		{"${a.b} = 1", "column 8: single '=': write =="},
		{"${a.b} == main", `column 11: unexpected word "main": quote strings ('main')`},
		{"${a.b} == 1 2", "join conditions with && or ||"},
		{"(1 == 1", "missing ')'"},
		{"1 < 2 < 3", "comparisons do not chain"},
		{"1 ==", "expression ends too early"},
		{"'abc", "unterminated string"},
		{"${a.b", "unterminated reference"},
		{"1 & 2", "write &&"},
		{"$ == 1", "lone '$'"},
		{"1 # 2", `unexpected "#"`},
		{"'it''s'", "after a complete expression"},
		{"1.2.3 == 1", "bad number"},
		{"'${a' == 'x'", "unterminated reference"},
	}
	for _, tt := range tests {
		_, err := parseCond(tt.expr)
		if err == nil {
			t.Errorf("%q: no error", tt.expr)
			continue
		}
		if !strings.Contains(err.Error(), tt.words) {
			t.Errorf("%q: error %q does not say %q", tt.expr, err, tt.words)
		}
		// EvalCondition reports the same error.
		if _, err2 := EvalCondition(tt.expr, planTestOutputs()); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("%q: EvalCondition error %v, want %v", tt.expr, err2, err)
		}
	}
}

func TestConditionRuntimeErrors(t *testing.T) {
	tests := []struct{ expr, words string }{
		{"${test.exitCod} != 0", `${test.exitCod}: test has no field "exitCod"`},
		{"${ghost} == 1", `step "ghost" has no output`},
		{"${search.files} < 3", "cannot order an array and 3"},
		{"${count} contains 'x'", "left side must be a string, an array or an object"},
		{"'a' < 1", `cannot order "a" and 1`},
	}
	for _, tt := range tests {
		_, err := EvalCondition(tt.expr, planTestOutputs())
		if err == nil {
			t.Errorf("%q: no error", tt.expr)
			continue
		}
		if !strings.Contains(err.Error(), tt.words) || !strings.Contains(err.Error(), tt.expr) {
			t.Errorf("%q: error %q does not say %q and name the condition", tt.expr, err, tt.words)
		}
	}
}
