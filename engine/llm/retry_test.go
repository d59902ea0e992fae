package llm

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/internal/fakemodel"
)

// callTimed calls once and returns the fake time it took.
func callTimed(t *testing.T, c *Client, ctx context.Context, req *Request) (*Response, time.Duration, error) {
	t.Helper()
	t0 := time.Now()
	resp, _, err := c.Call(ctx, nil, req)
	return resp, time.Since(t0), err
}

func TestRetries(t *testing.T) {
	httpDate := func() string { return time.Now().Add(7 * time.Second).UTC().Format(http.TimeFormat) }
	cases := []struct {
		name    string
		model   string
		stream  bool
		faults  func() []fakemodel.Reply
		timeout time.Duration
		wait    time.Duration // fake time until the answer
	}{
		{"429 Retry-After seconds", "openai:gpt-4o", false, func() []fakemodel.Reply {
			return []fakemodel.Reply{{Fault: fakemodel.FaultRateLimit, RetryAfter: "3"}}
		}, 0, 3 * time.Second},
		{"429 Retry-After HTTP date", "anthropic:claude-sonnet-4", false, func() []fakemodel.Reply {
			return []fakemodel.Reply{{Fault: fakemodel.FaultRateLimit, RetryAfter: httpDate()}}
		}, 0, 7 * time.Second},
		{"500 twice: backoff 1s then 2s", "openai:gpt-4o", true, func() []fakemodel.Reply {
			return []fakemodel.Reply{{Fault: fakemodel.FaultServer}, {Fault: fakemodel.FaultServer}}
		}, 0, 3 * time.Second},
		{"hang until the attempt times out", "openai:gpt-4o", false, func() []fakemodel.Reply {
			return []fakemodel.Reply{{Fault: fakemodel.FaultHang}}
		}, 30 * time.Second, 31 * time.Second},
		{"hang: no data within the idle timeout", "anthropic:claude-sonnet-4", true, func() []fakemodel.Reply {
			return []fakemodel.Reply{{Fault: fakemodel.FaultHang}}
		}, 0, DefaultIdleTimeout + time.Second},
		{"openai error inside the stream", "openai:gpt-4o", true, func() []fakemodel.Reply {
			return []fakemodel.Reply{{Fault: fakemodel.FaultStreamError}}
		}, 0, time.Second},
		{"anthropic overloaded event inside the stream", "anthropic:claude-sonnet-4", true, func() []fakemodel.Reply {
			return []fakemodel.Reply{{Fault: fakemodel.FaultStreamError}}
		}, 0, time.Second},
		{"openai stream stalls mid-way", "openai:gpt-4o", true, func() []fakemodel.Reply {
			return []fakemodel.Reply{{Fault: fakemodel.FaultStall, Text: "a long answer that stalls"}}
		}, 0, DefaultIdleTimeout + time.Second},
		{"anthropic stream stalls mid-way", "anthropic:claude-sonnet-4", true, func() []fakemodel.Reply {
			return []fakemodel.Reply{{Fault: fakemodel.FaultStall, Text: "a long answer that stalls"}}
		}, 0, DefaultIdleTimeout + time.Second},
		{"openai stream cut mid-way", "openai:gpt-4o", true, func() []fakemodel.Reply {
			return []fakemodel.Reply{{Fault: fakemodel.FaultCutStream, Text: "partial answer here"}}
		}, 0, time.Second},
		{"anthropic stream cut mid-way", "anthropic:claude-sonnet-4", true, func() []fakemodel.Reply {
			return []fakemodel.Reply{{Fault: fakemodel.FaultCutStream, Text: "partial answer here"}}
		}, 0, time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := fakemodel.New()
				faults := tc.faults()
				srv.Push(faults...)
				srv.Push(fakemodel.Reply{Text: "ok"})
				s := memSettings(srv, tc.model, nil)
				c := mustClient(t, s)
				c.Spec.Timeout = tc.timeout
				c.Provider = s.Provider(&c.Spec)
				req := &Request{Messages: userMsg("x")}
				var streamed strings.Builder
				if tc.stream {
					req.OnText = func(s string) { streamed.WriteString(s) }
				}
				resp, took, err := callTimed(t, c, t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				if resp.Text != "ok" {
					t.Errorf("text %q", resp.Text)
				}
				if tc.stream && !strings.HasSuffix(streamed.String(), "ok") {
					t.Errorf("streamed %q", streamed.String())
				}
				// Faults with text break off after part of it was streamed.
				if tc.stream && faults[0].Text != "" && !strings.Contains(streamed.String(), "broke off") {
					t.Errorf("a retried stream does not say the answer starts again: %q", streamed.String())
				}
				if took != tc.wait {
					t.Errorf("took %v of fake time, want %v", took, tc.wait)
				}
				if n := len(srv.Requests()); n != len(faults)+1 {
					t.Errorf("%d requests, want %d", n, len(faults)+1)
				}
			})
		})
	}
}

func TestRetriesBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := fakemodel.New()
		srv.Handle(func(fakemodel.Request) fakemodel.Reply { return fakemodel.Reply{Fault: fakemodel.FaultServer} })
		c := mustClient(t, memSettings(srv, "openai:gpt-4o", nil))
		_, took, err := callTimed(t, c, t.Context(), &Request{Messages: userMsg("x")})
		var e *Error
		if !errors.As(err, &e) || e.Kind != ErrServer || !e.IsRetryable() {
			t.Fatalf("err = %v", err)
		}
		if !strings.Contains(err.Error(), "after 4 attempts") {
			t.Errorf("err %q does not say how often it tried", err)
		}
		// 1s + 2s + 4s of backoff between 4 attempts.
		if n := len(srv.Requests()); n != 4 || took != 7*time.Second {
			t.Errorf("%d requests in %v, want 4 in 7s", n, took)
		}
		// The engine's retry policy sees it as retryable through the wrapping.
		var r interface{ IsRetryable() bool }
		if !errors.As(err, &r) || !r.IsRetryable() {
			t.Error("wrapped error does not expose IsRetryable")
		}
	})
}

func TestRetryAfterTooLongGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := fakemodel.New()
		srv.Push(fakemodel.Reply{Fault: fakemodel.FaultRateLimit, RetryAfter: "3600"}, fakemodel.Reply{Text: "never"})
		c := mustClient(t, memSettings(srv, "openai:gpt-4o", nil))
		_, took, err := callTimed(t, c, t.Context(), &Request{Messages: userMsg("x")})
		var e *Error
		if !errors.As(err, &e) || e.Kind != ErrRateLimit || e.RetryAfter != time.Hour || took != 0 {
			t.Fatalf("err = %v after %v", err, took)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("%d requests", n)
		}
	})
}

func TestCancelDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := fakemodel.New()
		srv.Push(fakemodel.Reply{Fault: fakemodel.FaultRateLimit, RetryAfter: "60"}, fakemodel.Reply{Text: "never"})
		c := mustClient(t, memSettings(srv, "openai:gpt-4o", nil))
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, took, err := callTimed(t, c, ctx, &Request{Messages: userMsg("x")})
		if !errors.Is(err, context.DeadlineExceeded) || took != 5*time.Second {
			t.Fatalf("err = %v after %v", err, took)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("%d requests", n)
		}
	})
}

func TestHangCancelledByCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := fakemodel.New()
		srv.Push(fakemodel.Reply{Fault: fakemodel.FaultHang})
		c := mustClient(t, memSettings(srv, "anthropic:claude-sonnet-4", nil))
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, took, err := callTimed(t, c, ctx, &Request{Messages: userMsg("x"), OnText: func(string) {}})
		var e *Error
		if errors.As(err, &e) || !errors.Is(err, context.DeadlineExceeded) || took != time.Minute {
			t.Fatalf("err = %v after %v: the caller's own deadline is not a provider error", err, took)
		}
	})
}

func TestKeyRedactedInRetryLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := fakemodel.New()
		echo := `{"error":{"message":"upstream said: Authorization: Bearer ` + testOpenAIKey + `"}}`
		srv.Push(fakemodel.Reply{Fault: fakemodel.FaultStatus, Status: 503, Body: echo}, fakemodel.Reply{Text: "ok"})
		logs := &syncBuf{}
		c := mustClient(t, memSettings(srv, "openai:gpt-4o", logs))
		if _, _, err := c.Call(t.Context(), nil, &Request{Messages: userMsg("x")}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(logs.String(), "retrying") || !strings.Contains(logs.String(), "[REDACTED]") {
			t.Errorf("expected a retry log with the redacted message: %s", logs.String())
		}
		if strings.Contains(logs.String(), testOpenAIKey) {
			t.Errorf("key in logs: %s", logs.String())
		}
	})
}

func TestBudgetStopsBeforeTheCall(t *testing.T) {
	srv := fakemodel.New()
	c := mustClient(t, memSettings(srv, "openai:gpt-4o", nil))
	b := engine.NewBudget(100, 0)
	_, _, err := c.Call(t.Context(), b, &Request{Messages: userMsg(strings.Repeat("long prompt ", 100))})
	if !errors.Is(err, engine.ErrBudgetExceeded) {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests made despite the budget", n)
	}
	// Within budget: the actual usage is counted.
	b = engine.NewBudget(100_000, 1)
	srv.Push(fakemodel.Reply{Text: "ok", InputTokens: 1000, OutputTokens: 100})
	if _, _, err := c.Call(t.Context(), b, &Request{Messages: userMsg("short")}); err != nil {
		t.Fatal(err)
	}
	tok, cost := b.Used()
	if tok != 1100 || cost != (1000*2.5+100*10)/1e6 {
		t.Errorf("used %d tokens $%v", tok, cost)
	}
}
