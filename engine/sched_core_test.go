package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestSchedReadySetNotLevels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		// a is slow; b -> c is a fast chain that must not wait for a.
		p := mkPlan(t, `[
			{"id":"a","tool":"op","args":{"sleep":"1s"}},
			{"id":"b","tool":"op","args":{"sleep":"100ms"}},
			{"id":"c","tool":"op","args":{"sleep":"100ms"},"dependsOn":["b"]},
			{"id":"d","tool":"op","args":{"sleep":"100ms"},"dependsOn":["a"]}
		]`)
		st, _ := runPlan(t, e, p, RunOptions{})
		if st.Status != RunCompleted {
			t.Fatalf("status %s: %s", st.Status, st.Error)
		}
		if got := h.startOf("c"); got != ms(100) {
			t.Errorf("c started at %v, want 100ms (right after b, not after a)", got)
		}
		if got := h.startOf("d"); got != ms(1000) {
			t.Errorf("d started at %v, want 1s", got)
		}
		if st.CompletedSteps != 4 || st.Progress != 1 {
			t.Errorf("completed %d progress %v", st.CompletedSteps, st.Progress)
		}
		if d := stepState(t, st, "a").DurationMs; d != 1000 {
			t.Errorf("a duration %dms, want 1000", d)
		}
	})
}

func TestSchedMaxParallel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		var steps []string
		for i := range 10 {
			steps = append(steps, `{"id":"s`+string(rune('0'+i))+`","tool":"op","args":{"sleep":"1s"}}`)
		}
		p := mkPlan(t, "["+strings.Join(steps, ",")+"]")
		start := time.Now()
		st, _ := runPlan(t, e, p, RunOptions{MaxParallel: 3})
		if st.Status != RunCompleted {
			t.Fatalf("status %s", st.Status)
		}
		if el := time.Since(start); el != 4*time.Second {
			t.Errorf("10 x 1s steps with maxParallel 3 took %v, want 4s", el)
		}
		if h.maxRun != 3 {
			t.Errorf("max concurrent %d, want 3", h.maxRun)
		}
		// Default is DefaultMaxParallel.
		h2 := newHarness()
		runPlan(t, New(Config{Tools: h2.reg}), p, RunOptions{})
		if h2.maxRun != DefaultMaxParallel {
			t.Errorf("default max concurrent %d, want %d", h2.maxRun, DefaultMaxParallel)
		}
	})
}

func TestSchedSequentialOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		p := mkPlan(t, `[
			{"id":"c","tool":"op","args":{"sleep":"10ms"},"dependsOn":["a"]},
			{"id":"a","tool":"op","args":{"sleep":"10ms"}},
			{"id":"b","tool":"op","args":{"sleep":"10ms"}},
			{"id":"d","tool":"op","args":{"sleep":"10ms"},"dependsOn":["b"]}
		]`)
		st, _ := runPlan(t, e, p, RunOptions{Mode: "sequential", MaxParallel: 8})
		if st.Status != RunCompleted {
			t.Fatalf("status %s", st.Status)
		}
		if want := []string{"a", "c", "b", "d"}; !slices.Equal(h.order, want) {
			t.Errorf("order %v, want %v", h.order, want)
		}
		if h.maxRun != 1 {
			t.Errorf("max concurrent %d in sequential mode", h.maxRun)
		}
	})
}

func TestSchedPauseResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		p := mkPlan(t, `[
			{"id":"a","tool":"op","args":{"sleep":"1s"}},
			{"id":"b","tool":"op","args":{"sleep":"1s"},"dependsOn":["a"]}
		]`)
		rec := &recorder{}
		r, err := e.Start(t.Context(), p, RunOptions{Subscribers: []Subscriber{rec}})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		r.Pause()
		if st := r.State(); st.Status != RunPaused || !slices.Equal(st.CurrentSteps, []string{"a"}) {
			t.Fatalf("after pause: status %s current %v", st.Status, st.CurrentSteps)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if st := r.State(); stepState(t, st, "a").Status != StepCompleted || stepState(t, st, "b").Status != StepReady {
			t.Fatalf("paused run: a %s b %s; want a completed (running steps finish), b ready (not started)",
				stepState(t, st, "a").Status, stepState(t, st, "b").Status)
		}
		if h.callCount("b") != 0 {
			t.Fatal("b started while paused")
		}
		r.Resume()
		st, err := r.Wait(t.Context())
		if err != nil || st.Status != RunCompleted {
			t.Fatalf("wait: %v %s", err, st.Status)
		}
		if got := h.startOf("b"); got != 2500*time.Millisecond {
			t.Errorf("b started at %v, want 2.5s (at resume)", got)
		}
		if len(rec.of(EventRunPaused)) != 1 || len(rec.of(EventRunResumed)) != 1 {
			t.Errorf("pause/resume events: %v", rec.trace())
		}
	})
}

func TestSchedCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		p := mkPlan(t, `[
			{"id":"a","tool":"op","args":{"sleep":"1h"}},
			{"id":"b","tool":"op","args":{"sleep":"1h"}},
			{"id":"c","tool":"op","args":{},"dependsOn":["a"]}
		]`)
		r, err := e.Start(t.Context(), p, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		r.Cancel()
		st, err := r.Wait(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != RunCancelled {
			t.Fatalf("status %s", st.Status)
		}
		if time.Since(h.t0) != time.Second {
			t.Errorf("cancel took until %v", time.Since(h.t0))
		}
		wantStatus(t, st, map[string]StepStatus{"a": StepCancelled, "b": StepCancelled, "c": StepCancelled})
		if h.ctxErrs["a"] != context.Canceled {
			t.Errorf("a's context error %v, want context.Canceled", h.ctxErrs["a"])
		}
		if err := r.RetryStep("a", nil); err == nil {
			t.Error("RetryStep on a finished run succeeded")
		}
	})
}

func TestSchedContextCancelsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		ctx, cancel := context.WithCancel(t.Context())
		r, err := e.Start(ctx, mkPlan(t, `[{"id":"a","tool":"op","args":{"sleep":"1h"}}]`), RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		cancel()
		st, _ := r.Wait(t.Context())
		if st.Status != RunCancelled || stepState(t, st, "a").Status != StepCancelled {
			t.Fatalf("status %s / %s", st.Status, stepState(t, st, "a").Status)
		}
	})
}

func TestSchedTimeoutAndRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		p := mkPlan(t, `[
			{"id":"slow","tool":"op","args":{"sleep":"10s"},"timeout":"1s","retry":{"max":1,"delay":"500ms"}},
			{"id":"dflt","tool":"op","args":{"sleep":"10s"},"critical":false}
		]`)
		st, rec := runPlan(t, e, p, RunOptions{StepTimeout: 3 * time.Second})
		if st.Status != RunFailed {
			t.Fatalf("status %s", st.Status)
		}
		s := stepState(t, st, "slow")
		if s.Attempts != 2 || !strings.Contains(s.Error, "timed out after 1s") {
			t.Errorf("slow: attempts %d error %q", s.Attempts, s.Error)
		}
		if got := h.startOf("slow"); got != 0 {
			t.Errorf("first attempt at %v", got)
		}
		if starts := h.starts["slow"]; len(starts) != 2 || starts[1] != 1500*time.Millisecond {
			t.Errorf("attempt starts %v, want [0 1.5s]", starts)
		}
		r := rec.of(EventStepRetrying)
		if len(r) != 1 || r[0].DelayMs != 500 {
			t.Errorf("retrying events %+v", r)
		}
		// The run failed at 2.5s; dflt (RunOptions.StepTimeout 3s) was still
		// running and is cancelled.
		if got := stepState(t, st, "dflt").Status; got != StepCancelled {
			t.Errorf("dflt %s, want cancelled", got)
		}
	})
}

func TestSchedStepTimeoutFromOptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		st, _ := runPlan(t, e, mkPlan(t, `[{"id":"a","tool":"op","args":{"sleep":"10s"}}]`), RunOptions{StepTimeout: 2 * time.Second})
		if s := stepState(t, st, "a"); s.Status != StepFailed || !strings.Contains(s.Error, "timed out after 2s") || h.endOf("a") != 2*time.Second {
			t.Errorf("a: %s %q ended %v", s.Status, s.Error, h.endOf("a"))
		}
	})
}

func TestSchedBackoffCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		p := mkPlan(t, `[
			{"id":"a","tool":"op","args":{"fail":"flaky","retryable":true,"failTimes":3},"retry":{"max":3,"delay":"1s","maxDelay":"1500ms"}},
			{"id":"t","tool":"op","args":{"fail":"temp","temporary":true,"failTimes":2},"retry":{"max":2,"delay":"1s"}},
			{"id":"n","tool":"op","args":{"fail":"bad input"},"retry":{"max":5,"delay":"1s"},"critical":false}
		]`)
		st, rec := runPlan(t, e, p, RunOptions{})
		if st.Status != RunPartial {
			t.Fatalf("status %s (%s)", st.Status, st.Error)
		}
		var delays []int64
		for _, ev := range rec.of(EventStepRetrying) {
			if ev.StepID == "a" {
				delays = append(delays, ev.DelayMs)
			}
		}
		if !slices.Equal(delays, []int64{1000, 1500, 1500}) {
			t.Errorf("a's delays %v, want [1000 1500 1500] (1s*2^n capped at 1.5s)", delays)
		}
		if a := stepState(t, st, "a"); a.Status != StepCompleted || a.Attempts != 4 {
			t.Errorf("a: %s after %d attempts", a.Status, a.Attempts)
		}
		if tt := stepState(t, st, "t"); tt.Status != StepCompleted || tt.Attempts != 3 || h.startOf("t") != 0 || h.starts["t"][2] != 3*time.Second {
			t.Errorf("t (Temporary): %s after %d attempts, starts %v", tt.Status, tt.Attempts, h.starts["t"])
		}
		if n := stepState(t, st, "n"); n.Status != StepFailed || n.Attempts != 1 {
			t.Errorf("non-retryable error: %s after %d attempts", n.Status, n.Attempts)
		}
	})
}

func TestSchedNonCriticalFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		p := mkPlan(t, `[
			{"id":"bad","tool":"op","args":{"fail":"boom","out":{"exitCode":2}},"critical":false},
			{"id":"dep","tool":"op","args":{},"dependsOn":["bad"]},
			{"id":"dep2","tool":"op","args":{},"dependsOn":["dep"]},
			{"id":"ind","tool":"op","args":{"sleep":"1s"}},
			{"id":"after","tool":"op","args":{},"dependsOn":["ind"]}
		]`)
		st, rec := runPlan(t, e, p, RunOptions{})
		if st.Status != RunPartial {
			t.Fatalf("status %s", st.Status)
		}
		wantStatus(t, st, map[string]StepStatus{"bad": StepFailed, "dep": StepBlocked, "dep2": StepBlocked, "ind": StepCompleted, "after": StepCompleted})
		if o := string(stepState(t, st, "bad").Output); o != `{"exitCode":2}` {
			t.Errorf("a failed step keeps what its tool returned: output %s", o)
		}
		if r := stepState(t, st, "dep").Reason; !strings.Contains(r, `"bad" failed`) {
			t.Errorf("dep reason %q", r)
		}
		if st.FailedSteps != 1 || st.BlockedSteps != 2 || st.CompletedSteps != 2 {
			t.Errorf("counts %+v", st)
		}
		if len(rec.of(EventStepBlocked)) != 2 {
			t.Errorf("blocked events: %v", rec.trace())
		}
	})
}

func TestSchedCriticalFailureHeadless(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		p := mkPlan(t, `[
			{"id":"bad","tool":"op","args":{"sleep":"1s","fail":"boom"}},
			{"id":"dep","tool":"op","args":{},"dependsOn":["bad"]},
			{"id":"long","tool":"op","args":{"sleep":"1h"}},
			{"id":"later","tool":"op","args":{},"dependsOn":["long"]}
		]`)
		st, _ := runPlan(t, e, p, RunOptions{})
		if st.Status != RunFailed || !strings.Contains(st.Error, `step "bad" failed`) || !strings.Contains(st.Error, "boom") {
			t.Fatalf("status %s error %q", st.Status, st.Error)
		}
		wantStatus(t, st, map[string]StepStatus{"bad": StepFailed, "dep": StepBlocked, "long": StepCancelled, "later": StepCancelled})
		if time.Since(h.t0) != time.Second {
			t.Errorf("run ended at %v, want 1s (running steps cancelled)", time.Since(h.t0))
		}
	})
}

func TestSchedSkips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		p := mkPlan(t, `[
			{"id":"a","tool":"op","args":{"out":{"n":1}}},
			{"id":"w","tool":"op","args":{},"dependsOn":["a"],"when":"${a.n} == 2"},
			{"id":"wdep","tool":"op","args":{},"dependsOn":["w"]},
			{"id":"y","tool":"op","args":{},"dependsOn":["a"],"when":"${a.n} == 1"},
			{"id":"planskip","tool":"op","args":{},"skip":true},
			{"id":"slow","tool":"op","args":{"sleep":"1s"}},
			{"id":"user","tool":"op","args":{},"dependsOn":["slow"]},
			{"id":"userdep","tool":"op","args":{},"dependsOn":["user"]}
		]`)
		r, err := e.Start(t.Context(), p, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
		if err := r.SkipStep("user"); err != nil {
			t.Fatal(err)
		}
		if err := r.SkipStep("slow"); err == nil {
			t.Error("skipping a running step succeeded")
		}
		st, _ := r.Wait(t.Context())
		if st.Status != RunCompleted {
			t.Fatalf("status %s", st.Status)
		}
		wantStatus(t, st, map[string]StepStatus{"w": StepSkipped, "wdep": StepBlocked, "y": StepCompleted,
			"planskip": StepSkipped, "user": StepSkipped, "userdep": StepBlocked})
		if r := stepState(t, st, "user").Reason; r != "skipped by the user" {
			t.Errorf("user reason %q", r)
		}
		if r := stepState(t, st, "w").Reason; !strings.Contains(r, "is false") {
			t.Errorf("w reason %q", r)
		}
		if h.callCount("w")+h.callCount("planskip")+h.callCount("user") != 0 {
			t.Error("a skipped step ran")
		}
	})
}

func TestSchedRetryStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		p := mkPlan(t, `[
			{"id":"bad","tool":"op","args":{"fail":"boom"},"critical":false},
			{"id":"dep","tool":"op","args":{},"dependsOn":["bad"]},
			{"id":"long","tool":"op","args":{"sleep":"10s"}}
		]`)
		r, err := e.Start(t.Context(), p, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if st := r.State(); stepState(t, st, "dep").Status != StepBlocked {
			t.Fatalf("dep %s", stepState(t, st, "dep").Status)
		}
		if err := r.RetryStep("dep", nil); err == nil || !strings.Contains(err.Error(), "retry that step first") {
			t.Errorf("retrying a step blocked by a failure: %v", err)
		}
		if err := r.RetryStep("long", nil); err == nil {
			t.Error("retrying a running step succeeded")
		}
		if err := r.RetryStep("bad", []byte(`{"out":{"fixed":true}}`)); err != nil {
			t.Fatal(err)
		}
		st, _ := r.Wait(t.Context())
		if st.Status != RunCompleted {
			t.Fatalf("status %s", st.Status)
		}
		wantStatus(t, st, map[string]StepStatus{"bad": StepCompleted, "dep": StepCompleted})
		if b := stepState(t, st, "bad"); b.Attempts != 2 || string(b.Output) != `{"fixed":true}` {
			t.Errorf("bad: attempts %d output %s", b.Attempts, b.Output)
		}
		if st.PlanVersion != p.Version+1 || st.FinalPlan == nil || len(st.FinalPlan.History) == 0 {
			t.Errorf("plan version %d (was %d)", st.PlanVersion, p.Version)
		}
	})
}

func TestSchedPanicBecomesFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		p := mkPlan(t, `[
			{"id":"p","tool":"op","args":{"panic":"kaboom"},"critical":false},
			{"id":"ok","tool":"op","args":{"sleep":"1s"}}
		]`)
		st, _ := runPlan(t, e, p, RunOptions{})
		if st.Status != RunPartial {
			t.Fatalf("status %s", st.Status)
		}
		if s := stepState(t, st, "p"); s.Status != StepFailed || !strings.Contains(s.Error, "panicked: kaboom") {
			t.Errorf("p: %s %q", s.Status, s.Error)
		}
		wantStatus(t, st, map[string]StepStatus{"ok": StepCompleted})
	})
}

func TestSchedStateMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		p := mkPlan(t, `[
			{"id":"a","tool":"op","args":{"sleep":"1s"}},
			{"id":"b","tool":"op","args":{"sleep":"1s"},"dependsOn":["a"]},
			{"id":"c","tool":"op","args":{"sleep":"1s"},"dependsOn":["b"]},
			{"id":"d","tool":"op","args":{"sleep":"1s"},"dependsOn":["c"]}
		]`)
		r, err := e.Start(t.Context(), p, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		st := r.State()
		if st.EtaMs != nil || st.Progress != 0 || !slices.Equal(st.CurrentSteps, []string{"a"}) || st.ElapsedMs != 500 {
			t.Errorf("at 0.5s: eta %v progress %v current %v elapsed %d", st.EtaMs, st.Progress, st.CurrentSteps, st.ElapsedMs)
		}
		time.Sleep(time.Second)
		st = r.State()
		if st.EtaMs == nil || *st.EtaMs != 3000 || st.Progress != 0.25 || st.CompletedSteps != 1 || st.TotalSteps != 4 {
			t.Errorf("at 1.5s: eta %v progress %v completed %d", st.EtaMs, st.Progress, st.CompletedSteps)
		}
		if st.ToolCalls != 1 {
			t.Errorf("tool calls %d", st.ToolCalls)
		}
		fin, _ := r.Wait(t.Context())
		if fin.ElapsedMs != 4000 || fin.EtaMs != nil || fin.Summary == "" || fin.ToolCalls != 4 {
			t.Errorf("final elapsed %d eta %v tool calls %d", fin.ElapsedMs, fin.EtaMs, fin.ToolCalls)
		}
	})
}

// TestSchedEtaCountsParallelism: 16 independent 1 s steps, 4 at a time.
// At 1.5 s four have ended and 12 remain: at the parallelism seen so far
// (4) that is 3 s, not the 12 s of mean time x remaining steps.
func TestSchedEtaCountsParallelism(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		var steps []string
		for i := range 16 {
			steps = append(steps, fmt.Sprintf(`{"id":"s%d","tool":"op","args":{"sleep":"1s"}}`, i))
		}
		p := mkPlan(t, "["+strings.Join(steps, ",")+"]")
		r, err := e.Start(t.Context(), p, RunOptions{MaxParallel: 4})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		st := r.State()
		if st.EtaMs == nil || *st.EtaMs != 3000 || st.CompletedSteps != 4 {
			t.Errorf("at 1.5s: eta %v ms, %d completed; want 3000 ms, 4", st.EtaMs, st.CompletedSteps)
		}
		if fin, _ := r.Wait(t.Context()); fin.ElapsedMs != 4000 {
			t.Errorf("the run took %d ms, want 4000", fin.ElapsedMs)
		}
	})
}

func TestSchedStateIsACopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		e := New(Config{Tools: h.reg})
		p := mkPlan(t, `[{"id":"a","tool":"op","args":{"sleep":"1s"}},{"id":"b","tool":"op","args":{},"dependsOn":["a"]}]`)
		r, err := e.Start(t.Context(), p, RunOptions{RunID: "r-1"})
		if err != nil {
			t.Fatal(err)
		}
		if r.ID() != "r-1" {
			t.Errorf("id %q", r.ID())
		}
		st := r.State()
		st.Steps[0].Status = StepFailed
		pl := r.Plan()
		pl.Steps[0].ID = "changed"
		if got := r.State().Steps[0].Status; got != StepRunning {
			t.Errorf("state changed through a copy: %s", got)
		}
		if r.Plan().Steps[0].ID != "a" || p.Steps[0].ID != "a" {
			t.Error("plan changed through a copy")
		}
		fin, _ := r.Wait(t.Context())
		if fin.Status != RunCompleted || r.State().Status != RunCompleted || r.Plan().Steps[1].ID != "b" {
			t.Errorf("after the run: %s %s", fin.Status, r.State().Status)
		}
		if unsub := r.Subscribe(&recorder{}); unsub == nil {
			t.Error("nil unsubscribe")
		}
	})
}
