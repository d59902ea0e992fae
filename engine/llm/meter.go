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
	// unpriced: a call's model has no price in its cost table (its cost
	// counted as 0), so the sum's cost is not known.
	unpriced bool
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

// CostKnown says whether every call under the meter was priced (its
// model found in its cost table): Used().CostUSD is then what they cost.
func (m *UsageMeter) CostKnown() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.unpriced
}

// meter adds u to the meter of ctx, if any (the innermost); priced says
// whether u's cost was known.
func meter(ctx context.Context, u engine.Usage, priced bool) {
	if m, ok := ctx.Value(meterKey{}).(*UsageMeter); ok {
		m.mu.Lock()
		m.used.InputTokens += u.InputTokens
		m.used.OutputTokens += u.OutputTokens
		m.used.CostUSD += u.CostUSD
		m.unpriced = m.unpriced || !priced
		m.mu.Unlock()
	}
}
