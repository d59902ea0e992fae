package repomap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A parse stops when its context is done (the progress callback asks the
// host), and the same parser then parses the next file whole.
func TestParseCancelled(t *testing.T) {
	var b strings.Builder
	b.WriteString("package big\n\n")
	for i := range 20000 {
		fmt.Fprintf(&b, "func F%d(x int) int { return x*%d + len(\"%d\") }\n", i, i, i)
	}
	src := []byte(b.String())
	var w parsers
	defer w.close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if syms, err := symbolsOf(ctx, &w, langGo, src); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled parse: %d symbols, err %v; want context.Canceled", len(syms), err)
	}
	syms, err := symbolsOf(context.Background(), &w, langGo, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(syms) != 20000 || syms[19999].Name != "F19999" || syms[19999].Line != 20002 {
		t.Fatalf("after a cancelled parse: %d symbols, last %+v; want 20000, F19999 at line 20002", len(syms), syms[len(syms)-1])
	}
}

// A parse already running stops when its context is done: the progress
// callback (wasm: asking the host; native: reading the flag the context's
// AfterFunc sets) ends it, and the same parser then parses the next file.
// The context's Err is nil at the parse's start, so only the callback can
// stop it; the source takes far longer to parse than a goroutine to start.
func TestParseCancelledWhileParsing(t *testing.T) {
	var b strings.Builder
	b.WriteString("package big\n\n")
	for i := range 200000 {
		fmt.Fprintf(&b, "func F%d(x int) int { return x*%d + len(\"%d\") }\n", i, i, i)
	}
	src := []byte(b.String())
	var w parsers
	defer w.close()
	ctx := &doneLater{Context: context.Background(), done: make(chan struct{})}
	close(ctx.done)
	syms, err := symbolsOf(ctx, &w, langGo, src)
	if err == nil {
		t.Fatalf("a parse whose context is done while it runs finished with %d symbols; want it stopped", len(syms))
	}
	if !errors.Is(err, errCancelled) && !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v; want the parse cancelled", err)
	}
	syms, err = symbolsOf(context.Background(), &w, langGo, []byte("package p\nfunc A() {}\n"))
	if err != nil || len(syms) != 1 {
		t.Fatalf("after a cancelled parse: %+v, %v; want A", syms, err)
	}
}

// doneLater is a context whose Done is closed but whose Err says nothing
// until asked a second time.
type doneLater struct {
	context.Context
	done  chan struct{}
	asked atomic.Int32
}

func (c *doneLater) Done() <-chan struct{} { return c.done }
func (c *doneLater) Err() error {
	if c.asked.Add(1) == 1 {
		return nil
	}
	return context.Canceled
}

// Every language of lang.go is in the build's parsers, under the same
// index (TestNativeMatchesWasm checks parsers.wasm beside native ones).
func TestEveryLanguageParses(t *testing.T) {
	srcs := map[*lang]string{
		langGo: "package p\nfunc A() {}\n", langJS: "function A() {}\n", langTS: "function A(): void {}\n",
		langTSX: "function A() { return <div/> }\n", langPython: "def A():\n    pass\n", langRust: "fn A() {}\n",
		langLua: "function A() end\n", langJava: "class A {}\n", langC: "int A(void) { return 0; }\n",
		langCPP: "class A { void f(); };\n",
	}
	var w parsers
	defer w.close()
	for _, l := range allLangs {
		syms, err := symbolsOf(context.Background(), &w, l, []byte(srcs[l]))
		if err != nil || len(syms) == 0 || syms[0].Name != "A" {
			t.Errorf("%s: %+v, %v; want A first", l.name, syms, err)
		}
	}
}

// The compiled parsers.wasm (the darwin and windows/arm64 releases'
// parsers, and any build without cgo) is kept in the user's cache dir for
// the next process; a cache dir that cannot be made or written costs a compile in
// every process, never the map, and the debug log says so.
func TestCompilationCache(t *testing.T) {
	t.Cleanup(resetEngine)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	parse := func() {
		t.Helper()
		e, err := getEngine(context.Background(), log)
		if err != nil {
			t.Fatal(err)
		}
		w := parsers{pool: e}
		defer w.close()
		syms, err := symbolsOf(context.Background(), &w, langGo, []byte("package p\nfunc A() {}\n"))
		if err != nil || len(syms) != 1 || syms[0].Name != "A" {
			t.Fatalf("symbols %+v, err %v; want A", syms, err)
		}
	}

	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("LocalAppData", t.TempDir())
	base, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	resetEngine()
	parse()
	dir := filepath.Join(base, "agentd", "wazero")
	if !strings.Contains(logs.String(), "parsers ready") || !strings.Contains(logs.String(), dir) {
		t.Fatalf("log %q does not name the compilation cache %s", logs.String(), dir)
	}
	var files []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 1 || !strings.Contains(files[0], "wazero-") {
		t.Fatalf("compilation cache %s holds %q; want one compiled module under wazero's versioned folder", dir, files)
	}

	// A "cache dir" below a regular file cannot be made.
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	resetEngine()
	logs.Reset()
	engineCacheDir = filepath.Join(blocker, "wazero")
	parse()
	if !strings.Contains(logs.String(), "without the compilation cache") || !strings.Contains(logs.String(), engineCacheDir) {
		t.Fatalf("log %q does not say the parsers were compiled without the cache at %s", logs.String(), engineCacheDir)
	}
}

// Prepare (in builds without native parsers) compiles parsers.wasm
// without waiting for a file to parse (the daemon calls it at start).
func TestPrepare(t *testing.T) {
	t.Cleanup(resetEngine)
	resetEngine()
	engineCacheDir = t.TempDir()
	logs := &lockedBuffer{}
	prepareWasm(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(logs.String(), "parsers ready"); {
		if time.Now().After(deadline) {
			t.Fatalf("no parsers two minutes after Prepare; log %q", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := getEngine(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// resetEngine drops the process's compiled parsers, as a new process
// starts without them: the next parse compiles the module again, or loads
// it from the compilation cache (in engineCacheDir when set).
func resetEngine() {
	preparing.Wait()
	if theEngine != nil {
		theEngine.rt.Close(context.Background())
	}
	theEngine, engineErr = nil, nil
	engineOnce = sync.Once{}
	engineCacheDir = ""
}
