package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
)

// chattyTool burns a fixed amount of CPU and emits output chunks, like a
// command printing as it works. The work is a deterministic loop, so the
// engine is CPU-bound: any CPU the server takes shows in the run time.
type chattyTool struct{ spin, outputs int }

func (chattyTool) Name() string             { return "chatty" }
func (chattyTool) Description() string      { return "benchmark tool: works and prints" }
func (chattyTool) Category() tools.Category { return tools.CategoryRead }
func (chattyTool) Risk() tools.Risk         { return tools.RiskLow }
func (chattyTool) Schema() json.RawMessage  { return json.RawMessage(`{"type":"object"}`) }
func (t chattyTool) Run(ctx context.Context, env *tools.Env, _ json.RawMessage) (*tools.Result, error) {
	x := uint64(1)
	for i := 0; i < t.outputs; i++ {
		x = spinWork(x, t.spin)
		env.Emit("stdout", "line of output\n")
	}
	x = spinWork(x, t.spin)
	return &tools.Result{Output: x & 1}, nil
}

//go:noinline
func spinWork(x uint64, n int) uint64 {
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

// spinPerMicro is how many spinWork iterations take a microsecond here.
func spinPerMicro() int {
	const n = 20_000_000
	t0 := time.Now()
	if spinWork(1, n) == 0 {
		panic("xorshift never reaches 0")
	}
	return max(1, int(float64(n)/float64(time.Since(t0).Microseconds())))
}

const (
	chattySteps   = 2000 // x (stepStarted + 3 stepOutput + stepFinished) = ~10,000 events
	chattyOutputs = 3
	chattyStepUs  = 380 // CPU per step: the run lasts about 1 s
)

func chattyPlan() json.RawMessage {
	var steps []string
	for i := 0; i < chattySteps; i++ {
		steps = append(steps, fmt.Sprintf(`{"id":"c%d","tool":"chatty","args":{}}`, i))
	}
	return json.RawMessage(`{"title":"chatty","steps":[` + strings.Join(steps, ",") + `]}`)
}

// BenchmarkRunEventsChatty measures issue 4's speed point: a run emitting
// about 10,000 events per second (stepStarted, stepOutput, stepFinished)
// for about a second, run sequentially on one engine, alternately with only
// a counting subscriber (engine-only) and through agentd/run/start with
// every event going to an in-process client over a pipe (over-rpc). The
// metric engine-ratio is the median over pairs of over-rpc / engine-only
// engine time, where engine time is the run's own ElapsedMs.
//
//	go test -run '^$' -bench 'RunEventsChatty' -benchtime 10x ./rpc/
func BenchmarkRunEventsChatty(b *testing.B) {
	root := b.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	perUs := spinPerMicro()
	reg := tools.Builtin()
	reg.Register(chattyTool{spin: perUs * chattyStepUs / (chattyOutputs + 1), outputs: chattyOutputs})

	var (
		mu       sync.Mutex
		finished = make(chan int64, 1)
		nonOut   int   // events other than stepOutput seen by the client
		outs     int   // stepOutput notifications
		lastSeq  int64 = -1
		bad      string
	)
	srv, call, stop := benchServerOpts(b, Options{
		Logger: testLogger(b), StateDir: b.TempDir(), Tools: reg,
		Configure: func(cfg *engine.Config, _ *ModelOptions) { cfg.MaxSteps = chattySteps },
	}, func(method string, params []byte) {
		if method != "agentd/run/didChange" {
			return
		}
		var p RunEventParams
		if err := json.Unmarshal(params, &p); err != nil {
			b.Errorf("didChange: %v", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if int64(p.Event.Seq) <= lastSeq && bad == "" {
			bad = fmt.Sprintf("event seq %d after %d", p.Event.Seq, lastSeq)
		}
		lastSeq = int64(p.Event.Seq)
		if p.Event.Type == engine.EventStepOutput {
			outs++
		} else {
			nonOut++
		}
		if p.Event.Type == engine.EventRunFinished {
			if p.State == nil {
				bad = "runFinished without state"
				finished <- 0
				return
			}
			finished <- p.State.ElapsedMs
		}
	})
	defer stop()
	// The client declares workDoneProgress as VS Code does, so the server
	// also sends $/progress (the harsher case).
	call("initialize", map[string]any{"rootUri": pathToURI(root), "capabilities": map[string]any{
		"window": map[string]any{"workDoneProgress": true}}}, nil)
	eng, err := srv.engine()
	if err != nil {
		b.Fatal(err)
	}
	raw := chattyPlan()
	p, err := plans.ParsePlan("plan.json", raw)
	if err != nil {
		b.Fatal(err)
	}
	var pl plans.Plan
	call("agentd/plan/load", map[string]any{"plan": raw}, &pl)

	engineOnly := func() (ms int64, events int) {
		var n int
		var nmu sync.Mutex
		sub := engine.SubscriberFunc(func(ev engine.Event) { nmu.Lock(); n++; nmu.Unlock() })
		run, err := eng.Start(context.Background(), p.Clone(), engine.RunOptions{Mode: "sequential", Review: engine.ReviewNone, Subscribers: []engine.Subscriber{sub}})
		if err != nil {
			b.Fatal(err)
		}
		st, err := run.Wait(context.Background())
		if err != nil || st.Status != engine.RunCompleted {
			b.Fatalf("run: %v %v", st.Status, err)
		}
		nmu.Lock()
		defer nmu.Unlock()
		return st.ElapsedMs, n
	}
	overRPC := func() (ms int64, nonOutput, outputs int) {
		mu.Lock()
		nonOut, outs, lastSeq = 0, 0, -1
		mu.Unlock()
		var res RunStartResult
		call("agentd/run/start", map[string]any{"planId": pl.ID, "options": map[string]any{"review": "none", "mode": "sequential"}}, &res)
		select {
		case ms = <-finished:
		case <-time.After(waitTimeout):
			b.Fatal("run did not finish")
		}
		mu.Lock()
		defer mu.Unlock()
		if bad != "" {
			b.Fatal(bad)
		}
		return ms, nonOut, outs
	}

	var plain, served, ratios []float64
	var events, outputs int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Alternate which goes first so drift (heat, GC) hits both alike.
		var e, r int64
		var nonOutput int
		if i%2 == 0 {
			e, events = engineOnly()
			r, nonOutput, outputs = overRPC()
		} else {
			r, nonOutput, outputs = overRPC()
			e, events = engineOnly()
		}
		// Every step's stepStarted and stepFinished, plus runStarted and
		// runFinished, reach the client; stepOutput may be coalesced.
		if want := 2*chattySteps + 2; nonOutput < want {
			b.Fatalf("client saw %d non-output events, want at least %d", nonOutput, want)
		}
		plain = append(plain, float64(e))
		served = append(served, float64(r))
		ratios = append(ratios, float64(r)/float64(e))
	}
	b.StopTimer()
	slices.Sort(plain)
	slices.Sort(served)
	slices.Sort(ratios)
	me, mr := plain[len(plain)/2], served[len(served)/2]
	b.ReportMetric(me, "engine-only-ms")
	b.ReportMetric(mr, "over-rpc-ms")
	// Each pair ran back to back, so its ratio cancels slow drift.
	b.ReportMetric(ratios[len(ratios)/2], "engine-ratio")
	b.ReportMetric(float64(events)/(me/1000), "events/s")
	b.ReportMetric(float64(outputs), "output-notes/run")
}
