package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/fakemodel"
)

// rateLimitedOnce is a fake model whose first answer is a 429 (retry
// after 1s) and whose later answers are plan.
func rateLimitedOnce(t *testing.T, plan string) {
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
		return fakemodel.Reply{Text: plan, InputTokens: 1000, OutputTokens: 50}
	})
	modelEnv(t, srv)
}

var (
	rawSlog   = regexp.MustCompile(`(?m)(^|\s)(time=|level=[A-Z]+ msg=)`)
	retrySaid = regexp.MustCompile(`(?m)^agentd (plan|chat|run): model openai:gpt-4o: call failed \([^\n]*429[^\n]*\); retrying in 1s \(attempt 2\)$`)
)

// Without a terminal, agentd plan says a model retry in its own words on
// one line; no raw slog line reaches the output.
func TestPlanRetrySaidNotLogged(t *testing.T) {
	rateLimitedOnce(t, `{"title":"Read","steps":[{"id":"r","tool":"read_file","args":{"path":"a.txt"}}]}`)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	r := agentd(t, "", "plan", "read a.txt", "--workspace", ws, "--explore", "-1", "--output", filepath.Join(t.TempDir(), "p.json"))
	out := r.stdout + r.stderr
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, out)
	}
	if rawSlog.MatchString(out) || !retrySaid.MatchString(out) {
		t.Errorf("want the retry said on one line and no slog lines:\n%s", out)
	}
}

// Without a terminal, a chat turn prints its plan, a few lines of run
// summary (status, files changed) and the turn's line with the tokens,
// not the run's whole Markdown summary, and says a retry in its words.
func TestChatTurnBriefAndRetrySaid(t *testing.T) {
	rateLimitedOnce(t, `{"title":"One","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"one\n"}}]}`)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("zero\n"), 0o644)
	r := agentd(t, "write a.txt\n", "chat", "--workspace", ws, "--state-dir", t.TempDir(), "--explore", "-1", "--yes")
	out := r.stdout + r.stderr
	if r.code != exitOK || readFile(t, filepath.Join(ws, "a.txt")) != "one\n" {
		t.Fatalf("exit %d, a.txt %q\n%s", r.code, readFile(t, filepath.Join(ws, "a.txt")), out)
	}
	if rawSlog.MatchString(out) || !retrySaid.MatchString(out) {
		t.Errorf("want the retry said on one line and no slog lines:\n%s", out)
	}
	m := regexp.MustCompile(`(?s)\nrun \S+: completed, 1 of 1 steps completed\n(.*)turn 1: completed; 1050 tokens`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no brief run summary before the turn's line:\n%s", r.stdout)
	}
	if lines := strings.Count(m[1], "\n"); lines > 4 || !strings.Contains(m[1], "changed: a.txt") {
		t.Errorf("the turn's summary is %d lines (want at most 5, naming a.txt):\n%s", lines+1, m[0])
	}
	for _, not := range []string{"model call(s)", "| step |", "**Status:**"} {
		if strings.Contains(out, not) {
			t.Errorf("the chat prints the run's whole summary (%q):\n%s", not, out)
		}
	}
}
