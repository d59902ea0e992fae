package llm

import (
	"context"
	"sync"

	"github.com/agentd/agentd/engine"
)

// UsageMeter adds up the usage the providers reported for the model calls
// made under one context (WithUsageMeter): a chat turn's tokens, whatever
// else the planner is asked at the same time.
type UsageMeter struct {
	mu   sync.Mutex
	used engine.Usage
}

type meterKey struct{}

// WithUsageMeter returns ctx with a new meter that every model call made
// under it (Planner.Create, Planner.Answer and their exploration) adds
// its usage to.
func WithUsageMeter(ctx context.Context) (context.Context, *UsageMeter) {
	m := &UsageMeter{}
	return context.WithValue(ctx, meterKey{}, m), m
}

// Used is what the calls under the meter's context reported so far.
func (m *UsageMeter) Used() engine.Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// meter adds u to the meter of ctx, if any (the innermost).
func meter(ctx context.Context, u engine.Usage) {
	if m, ok := ctx.Value(meterKey{}).(*UsageMeter); ok {
		m.mu.Lock()
		m.used.InputTokens += u.InputTokens
		m.used.OutputTokens += u.OutputTokens
		m.used.CostUSD += u.CostUSD
		m.mu.Unlock()
	}
}
