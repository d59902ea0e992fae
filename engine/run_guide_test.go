package engine

import (
	"context"
	"slices"
	"testing"
)

// Guide gives the user's words to the run's agent steps: the one running
// and the one not started yet each read them (once) before their next
// model call; an llm step does not; a run that ended takes nothing.
func TestRunGuideReachesRunningAndLaterAgentSteps(t *testing.T) {
	h := newHarness()
	started, release := make(chan struct{}), make(chan struct{})
	got := map[string][][]string{}
	m := &fakeModel{run: func(ctx context.Context, call ModelCall) (*ModelResult, error) {
		if call.Guidance == nil {
			got[call.Step.ID] = nil
			return &ModelResult{Text: "no guidance hook", Calls: 1}, nil
		}
		first := call.Guidance()
		if call.Step.ID == "a" {
			close(started)
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		got[call.Step.ID] = [][]string{first, call.Guidance(), call.Guidance()}
		return &ModelResult{Text: "done", Calls: 2}, nil
	}}
	e := New(Config{Tools: h.reg, Model: m})
	p := mkPlan(t, `[
		{"id":"a","kind":"agent","prompt":"do a","tools":["op"]},
		{"id":"b","kind":"agent","prompt":"do b","tools":["op"],"dependsOn":["a"]},
		{"id":"l","kind":"llm","prompt":"say","dependsOn":["b"]}
	]`)
	r, err := e.Start(t.Context(), p, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if takers := r.Guide("keep the old name"); !slices.Equal(takers, []string{"a", "b"}) {
		t.Fatalf("Guide while a runs: takers %v, want [a b]", takers)
	}
	close(release)
	st, err := r.Wait(t.Context())
	if err != nil || st.Status != RunCompleted {
		t.Fatalf("run: %v %s %s", err, st.Status, st.Error)
	}
	want := []string{"keep the old name"}
	if a := got["a"]; len(a) != 3 || a[0] != nil || !slices.Equal(a[1], want) || a[2] != nil {
		t.Errorf("step a read %q, want nothing, then the words once", a)
	}
	if b := got["b"]; len(b) != 3 || !slices.Equal(b[0], want) || b[1] != nil {
		t.Errorf("step b (not started when guided) read %q, want the words before its first call", b)
	}
	if l, ok := got["l"]; !ok || l != nil {
		t.Errorf("the llm step had a guidance hook: %q", l)
	}
	if takers := r.Guide("too late"); len(takers) != 0 {
		t.Errorf("a finished run took guidance: %v", takers)
	}
}
