package engine

import (
	"strings"
	"testing"
	"testing/synctest"
)

func TestSummary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		snaps := &fakeSnaps{}
		rule := &addRule{}
		e := New(Config{Tools: h.reg, Snapshots: snaps, Rules: []UpdateRule{rule}, Model: &fakeModel{}})
		p := mkPlan(t, `[
			{"id":"a","tool":"op","args":{"sleep":"1500ms","out":"follow"}},
			{"id":"bad","tool":"op","args":{"fail":"it | broke\nbadly"},"critical":false},
			{"id":"dep","tool":"op","args":{},"dependsOn":["bad"]},
			{"id":"m","kind":"llm","prompt":"hello"}
		]`)
		st, _ := runPlan(t, e, p, RunOptions{})
		s := st.Summary
		for _, want := range []string{
			"# test", "**Status:** partial", "**Duration:** 1.5s",
			"| step | status | attempts | duration | note |",
			"| a | completed | 1 | 1.5s |",
			`| bad | failed | 1 | 0ms | step "bad": op: it \| broke badly |`,
			`| dep | blocked | 0 |  | dependency "bad" failed |`,
			"| a_f | completed |",
			"## Snapshots", "`snap1` run start",
			"## Plan updates", "(rule, add_steps): follow-up: output asked for a follow-up",
			"## Usage", "1 model call(s), 15 token(s), $0.0100; 3 tool call(s).",
		} {
			if !strings.Contains(s, want) {
				t.Errorf("summary lacks %q:\n%s", want, s)
			}
		}
		if got := Summary(nil, RunState{RunID: "r1", Status: RunCompleted}); !strings.Contains(got, "# Run r1") {
			t.Errorf("empty summary:\n%s", got)
		}
	})
}
