//go:build unix

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/internal/fakemodel"
)

// Waiting for a model is visible: the live line shows the phase and the
// time it has taken, with a spinner; --verbose shows the model's text as it
// streams; the model client's log line (a retry after a 429) is printed on
// a cleared line, never over the live line.
func TestTermPlanningWaitIsVisible(t *testing.T) {
	srv := fakemodel.New()
	var mu sync.Mutex
	calls := 0
	srv.Handle(func(r fakemodel.Request) fakemodel.Reply {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			return fakemodel.Reply{Fault: fakemodel.FaultRateLimit, RetryAfter: "1"}
		}
		time.Sleep(1500 * time.Millisecond) // a slow model
		return fakemodel.Reply{Text: "{\n\"title\": \"Slow\",\n\"steps\": [{\"id\": \"r\", \"tool\": \"read_file\", \"args\": {\"path\": \"a.txt\"}}]\n}"}
	})
	modelEnv(t, srv)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	r := startPTY(t, nil, "run", "--request", "read a.txt", "--workspace", ws, "--state-dir", t.TempDir(), "--verbose", "--yes", "--no-snapshots")
	at := r.waitFor("agentd run: exploring (round 1 of 6): waiting for the model · 1.", 0)
	r.waitFor(`│ model: "title": "Slow",`, at)
	if code := r.wait(); code != exitOK {
		t.Fatalf("exit %d\n%s", code, r.tail())
	}
	r.mu.Lock()
	raw := r.out.String()
	r.mu.Unlock()
	if !regexp.MustCompile(`[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] agentd run: exploring \(round 1 of 6\): waiting for the model · \d`).MatchString(raw) {
		t.Errorf("no spinner beside the phase and the time:\n%s", r.tail())
	}
	// The retry is said in the terminal's words, never as a raw slog line.
	i := strings.Index(raw, "agentd run: model openai:gpt-4o: call failed (")
	if i < 0 || rawSlog.MatchString(raw) {
		t.Fatalf("the retry is not said in the terminal's words, or a slog line is printed:\n%s", r.tail())
	}
	line := raw[:i]
	line = line[strings.LastIndexAny(line, "\r\n")+1:]
	if j := strings.LastIndex(raw[:i], "\r\x1b[K"); j < 0 || !strings.HasPrefix(line, "\x1b[K") {
		t.Errorf("the retry line is not on a line of its own: %q", raw[max(0, i-120):i+40])
	}
}

// The ETA shows only when it is an estimate worth showing: not under a
// second, not beside a step running longer than it.
func TestETAWorthShowing(t *testing.T) {
	d := &display{started: map[string]time.Time{}}
	ms := func(n int64) *int64 { return &n }
	st := &engine.RunState{EtaMs: ms(40_000), CurrentSteps: []string{"build"}}
	d.started["build"] = time.Now().Add(-5 * time.Second)
	if eta, ok := d.etaWorthShowing(st); !ok || eta != 40*time.Second {
		t.Errorf("a 40s estimate beside a 5s step: %v %v", eta, ok)
	}
	d.started["build"] = time.Now().Add(-300 * time.Second)
	if _, ok := d.etaWorthShowing(st); ok {
		t.Error("an ETA of 40s beside a step running for 300s is shown")
	}
	st = &engine.RunState{EtaMs: ms(300)}
	if _, ok := d.etaWorthShowing(st); ok {
		t.Error("ETA 0s is shown")
	}
}
