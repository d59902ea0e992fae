package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
)

// benchTool does nothing, or sleeps for args.sleep.
type benchTool struct{}

func (benchTool) Name() string             { return "noop" }
func (benchTool) Description() string      { return "does nothing" }
func (benchTool) Category() tools.Category { return tools.CategoryRead }
func (benchTool) Risk() tools.Risk         { return tools.RiskLow }
func (benchTool) Schema() json.RawMessage  { return json.RawMessage(`{"type":"object"}`) }
func (benchTool) Run(ctx context.Context, env *tools.Env, args json.RawMessage) (*tools.Result, error) {
	if len(args) > 2 {
		var a struct{ Sleep time.Duration }
		if err := json.Unmarshal(args, &a); err == nil && a.Sleep > 0 {
			select {
			case <-time.After(a.Sleep):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return &tools.Result{}, nil
}

func benchEngine(maxSteps int) *Engine {
	reg := tools.NewRegistry()
	reg.Register(benchTool{})
	return New(Config{Tools: reg, MaxSteps: maxSteps})
}

// randomDAG has n no-op steps, each depending on up to 3 random earlier ones.
func randomDAG(n int) *plans.Plan {
	r := rand.New(rand.NewPCG(1, 2))
	p := &plans.Plan{Title: "bench"}
	for i := range n {
		s := &plans.Step{ID: fmt.Sprintf("s%d", i), Tool: "noop", Args: json.RawMessage(`{}`)}
		if i > 0 {
			for range r.IntN(4) {
				d := fmt.Sprintf("s%d", r.IntN(i))
				if !slices.Contains(s.DependsOn, d) {
					s.DependsOn = append(s.DependsOn, d)
				}
			}
		}
		p.Steps = append(p.Steps, s)
	}
	return p
}

func runBench(b *testing.B, e *Engine, p *plans.Plan, opts RunOptions) {
	r, err := e.Start(context.Background(), p, opts)
	if err != nil {
		b.Fatal(err)
	}
	st, err := r.Wait(context.Background())
	if err != nil || st.Status != RunCompleted {
		b.Fatalf("run: %v %s %s", err, st.Status, st.Error)
	}
}

// BenchmarkSchedOverhead measures scheduling overhead per step (validation,
// start, dependency bookkeeping, events, state) on a 10,000-step random DAG
// of no-op steps. Target: <= 50 µs/step.
func BenchmarkSchedOverhead(b *testing.B) {
	const n = 10000
	p := randomDAG(n)
	e := benchEngine(n)
	for _, sub := range []bool{false, true} {
		name := "no-subscriber"
		if sub {
			name = "one-subscriber"
		}
		b.Run(name, func(b *testing.B) {
			opts := RunOptions{MaxParallel: 8}
			if sub {
				opts.Subscribers = []Subscriber{SubscriberFunc(func(Event) {})}
			}
			var run, val, runCPU, valCPU time.Duration
			for b.Loop() {
				t0, c0 := time.Now(), cpuTime()
				if probs := plans.ValidatePlan(p, e.cfg.Tools, n); len(probs) > 0 {
					b.Fatal(probs[0].Message)
				}
				t1, c1 := time.Now(), cpuTime()
				runBench(b, e, p, opts)
				val += t1.Sub(t0)
				run += time.Since(t1)
				valCPU += c1 - c0
				runCPU += cpuTime() - c1
			}
			steps := float64(b.N * n)
			// ns/step is the whole run (Start validates the plan too);
			// validate-ns/step is ValidatePlan alone (the plan model's
			// share); sched-ns/step is the difference: the scheduler's own
			// overhead per step.
			b.ReportMetric(float64(run.Nanoseconds())/steps, "ns/step")
			b.ReportMetric(float64(val.Nanoseconds())/steps, "validate-ns/step")
			b.ReportMetric(float64((run-val).Nanoseconds())/steps, "sched-ns/step")
			// The same in CPU time (all threads), which a loaded machine
			// distorts less than wall time.
			b.ReportMetric(float64((runCPU-valCPU).Nanoseconds())/steps, "sched-cpu-ns/step")
		})
	}
}

// BenchmarkSchedParallelSpeedup runs 64 independent 100 ms steps with
// maxParallel 8 and sequentially, and reports how many times faster the
// parallel run is (target >= 7x).
func BenchmarkSchedParallelSpeedup(b *testing.B) {
	p := &plans.Plan{Title: "speedup"}
	for i := range 64 {
		p.Steps = append(p.Steps, &plans.Step{ID: fmt.Sprintf("s%d", i), Tool: "noop", Args: json.RawMessage(`{"Sleep":100000000}`)})
	}
	e := benchEngine(0)
	var par, seq time.Duration
	for b.Loop() {
		t0 := time.Now()
		runBench(b, e, p, RunOptions{MaxParallel: 8})
		t1 := time.Now()
		runBench(b, e, p, RunOptions{Mode: "sequential"})
		par += t1.Sub(t0)
		seq += time.Since(t1)
	}
	b.ReportMetric(float64(par.Milliseconds())/float64(b.N), "parallel-ms/op")
	b.ReportMetric(float64(seq.Milliseconds())/float64(b.N), "sequential-ms/op")
	b.ReportMetric(float64(seq)/float64(par), "speedup-x")
}
