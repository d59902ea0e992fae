//go:build unix

package repomap

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/workspace"
)

// cpuTime is the process's user+system CPU time: the machine is shared,
// so wall time alone says little about the map's own cost.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The benchmarks run on the tree in $REPOMAP_TREE (bench/repomap.sh makes a
// 40,000-file tree from the Linux sources and runs them); without it they
// run on this repository.
func benchTree(b *testing.B) string {
	if d := os.Getenv("REPOMAP_TREE"); d != "" {
		return d
	}
	d, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkFirstMap is the first map of a tree in a new process: the
// workspace opened, every file walked, the source files read, hashed and
// scanned, then ranked and rendered for a request (which parses the files
// the ranking needs), and the cache file written, as the planner does.
// "watch" also starts the daemon's file watcher. The parsers come from
// wazero's compilation cache (filled by an earlier process, untimed), as
// in every process but the first on a machine; "walk-cold" starts each
// run with an empty compilation cache, as that first process does (it
// compiles parsers.wasm and fills the cache); "daemon" is "watch" with
// the parsers already loaded (untimed), as the daemon's Prepare at start
// leaves them for its first plan.
func BenchmarkFirstMap(b *testing.B) {
	for _, mode := range []string{"walk", "watch", "walk-cold", "daemon"} {
		b.Run(mode, func(b *testing.B) {
			dir := benchTree(b)
			q := Query{Request: "fix the timeout handling in the scheduler", Tokens: DefaultTokens}
			var cpu, worst time.Duration
			compiled := b.TempDir()
			resetEngine()
			engineCacheDir = compiled
			if _, err := getEngine(context.Background(), nil); err != nil {
				b.Fatal(err)
			}
			parsed := 0
			for b.Loop() {
				cache := filepath.Join(b.TempDir(), "repomap.map")
				resetEngine()
				engineCacheDir = compiled
				if mode == "walk-cold" {
					engineCacheDir = b.TempDir()
				}
				if mode == "daemon" {
					if _, err := getEngine(context.Background(), nil); err != nil {
						b.Fatal(err)
					}
				}
				t0 := cpuTime()
				m := New(openWS(b, dir), Options{Watch: mode == "watch" || mode == "daemon", CacheFile: cache})
				if err := m.Update(context.Background()); err != nil {
					b.Fatal(err)
				}
				if _, _, err := m.Render(context.Background(), q); err != nil {
					b.Fatal(err)
				}
				if err := m.Save(); err != nil {
					b.Fatal(err)
				}
				d := cpuTime() - t0
				cpu += d
				worst = max(worst, d)
				b.ReportMetric(float64(m.Stats().Files), "files")
				parsed += m.Stats().Parsed
				m.Close()
			}
			resetEngine()
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(worst.Seconds(), "cpu-max-s")
			b.ReportMetric(float64(parsed)/float64(b.N), "parsed/op")
		})
	}
}

// BenchmarkAfterOneChange is a map after one file changed: the check for
// changes, one file re-read and re-parsed, the ranking and the rendering,
// and Save (which skips rewriting the cache file for a small change).
// "walk" is a map kept in memory without a watcher: every source file is
// stat'ed. "watch" is the daemon's map (Options.Watch): only the paths the
// watcher reports are, except for the full walk every fullWalkEvery maps,
// which the mean includes when -benchtime is at least that many runs.
// "process" is a new process each time (agentd plan, agentd run): the
// workspace opened, the map loaded from the cache file (with the saved
// directory listings), then as "walk"; the last run's map is collected
// first, untimed, as a new process has no garbage of the last one.
// cpu-max-s is the slowest run.
func BenchmarkAfterOneChange(b *testing.B) {
	for _, mode := range []string{"walk", "watch", "process"} {
		b.Run(mode, func(b *testing.B) { benchAfterOneChange(b, mode) })
	}
}

func benchAfterOneChange(b *testing.B, mode string) {
	watch := mode == "watch"
	dir := benchTree(b)
	compiled := b.TempDir()
	resetEngine()
	engineCacheDir = compiled
	b.Cleanup(resetEngine)
	ws := openWS(b, dir)
	m := New(ws, Options{Watch: watch, CacheFile: filepath.Join(b.TempDir(), "repomap.map")})
	b.Cleanup(func() {
		if m != nil {
			m.Close()
		}
	})
	ctx := context.Background()
	if err := m.Update(ctx); err != nil {
		b.Fatal(err)
	}
	// The file that changes: the first file of the map.
	var target string
	m.mu.Lock()
	for p := range m.files {
		if target == "" || p < target {
			target = p
		}
	}
	m.mu.Unlock()
	q := Query{Request: "fix the timeout handling in the scheduler", Tokens: DefaultTokens}
	// A plan for this request was made before: its files are parsed (the
	// lazy ranking settles after a few rounds).
	for range 10 {
		if err := m.Update(ctx); err != nil {
			b.Fatal(err)
		}
		if _, _, err := m.Render(ctx, q); err != nil {
			b.Fatal(err)
		}
		if m.Stats().Parsed == 0 {
			break
		}
	}
	if err := m.SaveNow(); err != nil {
		b.Fatal(err)
	}
	abs := filepath.Join(dir, filepath.FromSlash(target))
	orig, err := os.ReadFile(abs)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.WriteFile(abs, orig, 0o644) })
	i := 0
	parsed := 0
	cache := m.opts.CacheFile
	var prev *workspace.Workspace // the last process's workspace
	b.Cleanup(func() {
		if prev != nil {
			prev.Close()
		}
	})
	var cpu, worst time.Duration
	for b.Loop() {
		b.StopTimer()
		i++
		data := append(append([]byte(nil), orig...), []byte("\n// change "+string(rune('a'+i%26))+"\n")...)
		if err := os.WriteFile(abs, data, 0o644); err != nil {
			b.Fatal(err)
		}
		if mode == "process" {
			// A new process starts with an empty heap: the last one's map
			// and workspace are closed and collected before the clock runs.
			if prev != nil {
				prev.Close()
			}
			m, prev = nil, nil
			// and its parsers come from the compilation cache again.
			resetEngine()
			engineCacheDir = compiled
			runtime.GC()
		}
		b.StartTimer()
		t0 := cpuTime()
		if mode == "process" {
			ws, err := workspace.Open(dir, workspace.Options{})
			if err != nil {
				b.Fatal(err)
			}
			prev = ws
			m = New(ws, Options{CacheFile: cache})
		}
		if err := m.Update(ctx); err != nil {
			b.Fatal(err)
		}
		if _, _, err := m.Render(context.Background(), q); err != nil {
			b.Fatal(err)
		}
		if err := m.Save(); err != nil {
			b.Fatal(err)
		}
		d := cpuTime() - t0
		cpu += d
		worst = max(worst, d)
		st := m.Stats()
		if st.Read != 1 {
			b.Fatalf("read %d files after one change, want 1", st.Read)
		}
		parsed += st.Parsed
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(worst.Seconds(), "cpu-max-s")
	// Files parsed for the first time (the changed one, and files the
	// lazy ranking reaches for the first time); never content parsed before.
	b.ReportMetric(float64(parsed)/float64(b.N), "parsed/op")
}

// BenchmarkCompileParsers is what the first parse of agentd's first process
// pays: wazero compiling parsers.wasm, with no compilation cache yet.
func BenchmarkCompileParsers(b *testing.B) {
	var cpu time.Duration
	for b.Loop() {
		resetEngine()
		engineCacheDir = b.TempDir()
		t0 := cpuTime()
		if _, err := getEngine(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - t0
	}
	resetEngine()
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}
