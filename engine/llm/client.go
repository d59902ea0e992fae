package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentd/agentd/engine"
)

// RetryMessage is the message of the log record Call writes before each
// retry, with the attributes model, attempt, wait (a time.Duration) and
// err; a terminal front end says it in its own words (cmd/agentd).
const RetryMessage = "model call failed; retrying"

// RetryPolicy bounds the provider client's own retries of retryable errors.
// The zero value means the defaults below.
type RetryPolicy struct {
	Attempts int           // total attempts (default 4)
	Base     time.Duration // first backoff (default 1s), doubled each time
	Max      time.Duration // backoff cap (default 30s)
	// MaxRetryAfter is the longest Retry-After honoured; a longer one ends
	// the retries with the error (default 2m).
	MaxRetryAfter time.Duration
}

func (r RetryPolicy) norm() RetryPolicy {
	if r.Attempts <= 0 {
		r.Attempts = 4
	}
	if r.Base <= 0 {
		r.Base = time.Second
	}
	if r.Max <= 0 {
		r.Max = 30 * time.Second
	}
	if r.MaxRetryAfter <= 0 {
		r.MaxRetryAfter = 2 * time.Minute
	}
	return r
}

// backoff is the wait before retry n (0-based) after err.
func (r RetryPolicy) backoff(n int, err error) (time.Duration, bool) {
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		if e.RetryAfter > r.MaxRetryAfter {
			return 0, false
		}
		return e.RetryAfter, true
	}
	d := r.Base << n
	if d > r.Max || d <= 0 {
		d = r.Max
	}
	return d, true
}

// Client calls one model: budget reservation, bounded retries with
// backoff, usage and cost.
type Client struct {
	Provider Provider
	Spec     Spec
	Costs    CostTable
	Retry    RetryPolicy
	Logger   *slog.Logger
}

// estimate is the tokens a request may use: prompt chars/4 plus the output cap.
func estimate(req *Request) int {
	n := len(req.System)
	for _, m := range req.Messages {
		n += len(m.Content) + len(m.ToolCallID)
		for _, tc := range m.ToolCalls {
			n += len(tc.Name) + len(tc.Args)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	if req.JSON != nil {
		n += len(req.JSON.Schema)
	}
	out := req.MaxTokens
	if out <= 0 {
		out = 1024
	}
	return n/4 + 1 + out
}

// Call sends req. With a budget, it first reserves the estimated tokens and
// cost (failing with engine.ErrBudgetExceeded before any request is made)
// and afterwards adds the actual usage. Retryable errors are retried with
// capped exponential backoff (honouring Retry-After); the last error is
// returned. The returned usage is what was counted.
func (c *Client) Call(ctx context.Context, budget engine.Budget, req *Request) (*Response, engine.Usage, error) {
	if req.Model == "" {
		req.Model = c.Spec.Model
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = c.Spec.MaxTokens
	}
	if budget != nil {
		est := estimate(req)
		p, _ := c.Costs.Lookup(req.Model)
		estCost := float64(est)*p.Input/1e6 + float64(max(req.MaxTokens, 1024))*p.Output/1e6
		if err := budget.Reserve(est, estCost); err != nil {
			return nil, engine.Usage{}, fmt.Errorf("model %s: %w", c.Spec.Label, err)
		}
	}
	pol := c.Retry.norm()
	var lastErr error
	tries := 0
	for attempt := 0; attempt < pol.Attempts; attempt++ {
		if attempt > 0 {
			d, ok := pol.backoff(attempt-1, lastErr)
			if !ok {
				return nil, engine.Usage{}, fmt.Errorf("not retried: the server asks to wait longer than %v: %w", pol.MaxRetryAfter, lastErr)
			}
			c.Logger.Info(RetryMessage, "model", c.Spec.Label, "attempt", attempt+1, "wait", d, "err", lastErr)
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, engine.Usage{}, fmt.Errorf("model %s: %w (while waiting to retry after: %v)", c.Spec.Label, ctx.Err(), lastErr)
			case <-t.C:
			}
		}
		tries++
		resp, err := c.send(ctx, req)
		if err == nil {
			u := engine.Usage{InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens,
				CostUSD: c.Costs.Cost(req.Model, resp.Usage)}
			if budget != nil {
				budget.Add(u)
			}
			return resp, u, nil
		}
		lastErr = err
		var e *Error
		if !errors.As(err, &e) || !e.IsRetryable() || ctx.Err() != nil {
			return nil, engine.Usage{}, err
		}
	}
	return nil, engine.Usage{}, fmt.Errorf("after %d attempts: %w", tries, lastErr)
}

// send makes one attempt. If it fails after part of the answer was
// streamed, the stream says so, since the retry streams the answer anew.
func (c *Client) send(ctx context.Context, req *Request) (*Response, error) {
	onText := req.OnText
	if onText == nil {
		return c.Provider.Send(ctx, req)
	}
	streamed := false
	r := *req
	r.OnText = func(s string) {
		streamed = true
		onText(s)
	}
	resp, err := c.Provider.Send(ctx, &r)
	var e *Error
	if err != nil && streamed && errors.As(err, &e) {
		onText(fmt.Sprintf("\n[%s: the answer broke off (%s); it starts again if retried]\n", c.Spec.Label, e.Kind))
	}
	return resp, err
}
