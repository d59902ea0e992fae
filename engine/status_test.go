package engine

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/workspace"
)

// A change set that hits a conflict on accept (the file changed while its
// review was open) fails the step, never completes it, and blocks what
// depends on it; one partly applied completes with "N of M hunk(s)
// rejected" (issue 24, point 4).
func TestSchedStatusOfReviewedChanges(t *testing.T) {
	plan := `[
		{"id":"w","tool":"write","args":{"write":"a.txt"}},
		{"id":"c","tool":"cmd","args":{"command":"make"},"dependsOn":["w"]}
	]`
	for _, tc := range []struct {
		name    string
		outcome ReviewOutcome
		run     RunStatus
		w       StepStatus
		c       StepStatus
		want    string
	}{
		{"conflict", ReviewOutcome{Applied: []string{}, Conflicts: []string{"a.txt"}}, RunFailed, StepFailed, StepBlocked, "conflict on accept"},
		{"rejected", ReviewOutcome{Applied: []string{}, Rejected: []HunkRejection{{Path: "a.txt", HunkID: "h1", Reason: "not now"}}}, RunPartial, StepSkipped, StepBlocked, "change rejected: not now"},
		{"partly", ReviewOutcome{Applied: []string{"h1", "h2"}, Rejected: []HunkRejection{{Path: "a.txt", HunkID: "h3"}}}, RunCompleted, StepCompleted, StepCompleted, "1 of 3 hunk(s) rejected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness()
				rv := &fakeReviewer{outcome: func(*workspace.ChangeSet) *ReviewOutcome { oc := tc.outcome; return &oc }}
				e := New(Config{Tools: h.reg, Approver: approval.AllowAll{}, Reviewer: rv})
				st, _ := runPlan(t, e, mkPlan(t, plan), RunOptions{Review: ReviewBefore})
				w, c := stepState(t, st, "w"), stepState(t, st, "c")
				if st.Status != tc.run || w.Status != tc.w || c.Status != tc.c {
					t.Fatalf("run %s, w %s, c %s; want %s, %s, %s (w: %q %q %q)", st.Status, w.Status, c.Status, tc.run, tc.w, tc.c, w.Error, w.Reason, "")
				}
				if got := w.Error + w.Reason; !strings.Contains(got, tc.want) {
					t.Errorf("step w says %q, want %q", got, tc.want)
				}
			})
		})
	}
}
