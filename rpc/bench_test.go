package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
)

// eventPlan is a plan of n independent read_file steps: about 3 events per
// step (stepStarted, stepFinished, and the run's own).
func eventPlan(n int) json.RawMessage {
	var steps []string
	for i := 0; i < n; i++ {
		steps = append(steps, fmt.Sprintf(`{"id":"r%d","tool":"read_file","args":{"path":"f.txt"}}`, i))
	}
	return json.RawMessage(`{"title":"events","steps":[` + strings.Join(steps, ",") + `]}`)
}

const eventSteps = 200

// BenchmarkRunEvents compares a run's duration with the engine alone and
// with every event going to an editor over a pipe as agentd/run/didChange.
// The ratio over-rpc / engine-only is the cost of the server.
func BenchmarkRunEvents(b *testing.B) {
	root := b.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	// Both variants use the engine of an initialized server (same tools,
	// snapshots and writer); only the way events leave differs.
	b.Run("engine-only", func(b *testing.B) {
		srv, call, stop := benchServer(b, root, nil)
		defer stop()
		call("initialize", map[string]any{"rootUri": pathToURI(root), "capabilities": map[string]any{}}, nil)
		eng, err := srv.engine()
		if err != nil {
			b.Fatal(err)
		}
		p, err := plans.ParsePlan("plan.json", eventPlan(eventSteps))
		if err != nil {
			b.Fatal(err)
		}
		var events, engineMs atomic.Int64
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			sub := engine.SubscriberFunc(func(engine.Event) { events.Add(1) })
			run, err := eng.Start(context.Background(), p, engine.RunOptions{Review: engine.ReviewNone, Subscribers: []engine.Subscriber{sub}})
			if err != nil {
				b.Fatal(err)
			}
			st, err := run.Wait(context.Background())
			if err != nil || st.Status != engine.RunCompleted {
				b.Fatalf("run: %v %v", st.Status, err)
			}
			engineMs.Add(st.ElapsedMs)
		}
		b.ReportMetric(float64(events.Load())/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(engineMs.Load())/float64(b.N), "engine-ms/run")
	})
	b.Run("over-rpc", func(b *testing.B) {
		var notes, engineMs atomic.Int64
		finished := make(chan struct{}, 1)
		_, call, stop := benchServer(b, root, func(method string, params []byte) {
			if method == "agentd/run/didChange" {
				notes.Add(1)
				if strings.Contains(string(params), `"type":"runFinished"`) {
					var p RunEventParams
					_ = json.Unmarshal(params, &p)
					engineMs.Add(p.State.ElapsedMs)
					finished <- struct{}{}
				}
			}
		})
		defer stop()
		call("initialize", map[string]any{"rootUri": pathToURI(root), "capabilities": map[string]any{}}, nil)
		var pl plans.Plan
		call("agentd/plan/load", map[string]any{"plan": eventPlan(eventSteps)}, &pl)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			var res RunStartResult
			call("agentd/run/start", map[string]any{"planId": pl.ID, "options": map[string]any{"review": "none"}}, &res)
			select {
			case <-finished:
			case <-time.After(waitTimeout):
				b.Fatal("run did not finish")
			}
		}
		b.ReportMetric(float64(notes.Load())/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(engineMs.Load())/float64(b.N), "engine-ms/run")
	})
}

// benchServer starts an in-process server over a pipe; notes receives
// every notification.
func benchServer(b *testing.B, root string, notes func(method string, params []byte)) (*Server, func(method string, params, result any), func()) {
	return benchServerOpts(b, Options{Logger: testLogger(b), StateDir: b.TempDir()}, notes)
}

// benchServerOpts is benchServer with the server's options.
func benchServerOpts(b *testing.B, opts Options, notes func(method string, params []byte)) (*Server, func(method string, params, result any), func()) {
	a, c := net.Pipe()
	srv := NewServer(opts)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), a) }()
	conn := jsonrpc2.NewConn(jsonrpc2.NewStream(c))
	conn.Go(context.Background(), func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		if notes != nil && !req.IsCall() {
			notes(req.Method(), req.Params())
		}
		return nil, nil
	})
	call := func(method string, params, result any) {
		if _, err := conn.Call(context.Background(), method, params, result); err != nil {
			b.Fatalf("%s: %v", method, err)
		}
	}
	return srv, call, func() {
		_ = conn.Close()
		<-done
	}
}

// BenchmarkRunGetMedian reports the median round trip of agentd/run/get on
// a finished run, over real stdio pipes to the built binary.
func BenchmarkRunGetMedian(b *testing.B) {
	root := b.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	p := startProc(b, root)
	p.initialize(b, root)
	r := p.roundTrip(b, 2, "agentd/plan/load", json.RawMessage(`{"plan":`+string(eventPlan(1))+`}`))
	var pl plans.Plan
	if r.Err() != nil || json.Unmarshal(r.Result(), &pl) != nil {
		b.Fatalf("plan/load: %v", r.Err())
	}
	r = p.roundTrip(b, 3, "agentd/run/start", json.RawMessage(fmt.Sprintf(`{"planId":%q,"options":{"review":"none"}}`, pl.ID)))
	var st RunStartResult
	if r.Err() != nil || json.Unmarshal(r.Result(), &st) != nil {
		b.Fatalf("run/start: %v", r.Err())
	}
	params := json.RawMessage(fmt.Sprintf(`{"runId":%q}`, st.RunID))
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if r := p.roundTrip(b, int64(10+i), "agentd/run/get", params); r.Err() != nil {
			b.Fatalf("run/get: %v", r.Err())
		}
		durs = append(durs, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "µs-median")
	if kib, err := rssKiB(p.cmd.Process.Pid); err == nil {
		b.ReportMetric(float64(kib)/1024, "MiB-RSS")
	}
}

// BenchmarkRunEventsBinary runs the same plan through the built binary
// over real stdio pipes; compare its engine-ms/run with
// BenchmarkRunEvents/engine-only.
func BenchmarkRunEventsBinary(b *testing.B) {
	root := b.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	p := startProc(b, root)
	p.initialize(b, root)
	r := p.roundTrip(b, 2, "agentd/plan/load", json.RawMessage(`{"plan":`+string(eventPlan(eventSteps))+`}`))
	var pl plans.Plan
	if r.Err() != nil || json.Unmarshal(r.Result(), &pl) != nil {
		b.Fatalf("plan/load: %v", r.Err())
	}
	var notes, engineMs int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		params := json.RawMessage(fmt.Sprintf(`{"planId":%q,"options":{"review":"none"}}`, pl.ID))
		if _, err := p.stream.Write(context.Background(), jsonrpc2.NewCall(jsonrpc2.NewNumberID(int64(100+i)), "agentd/run/start", jsonrpc2.RawMessage(params))); err != nil {
			b.Fatal(err)
		}
		for done := false; !done; {
			m, _, err := p.stream.Read(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			n, ok := m.(*jsonrpc2.Notification)
			if !ok || n.Method() != "agentd/run/didChange" {
				continue
			}
			notes++
			if strings.Contains(string(n.Params()), `"type":"runFinished"`) {
				var ev RunEventParams
				_ = json.Unmarshal(n.Params(), &ev)
				engineMs += ev.State.ElapsedMs
				done = true
			}
		}
	}
	b.ReportMetric(float64(notes)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(engineMs)/float64(b.N), "engine-ms/run")
}
