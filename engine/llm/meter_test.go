package llm

import (
	"context"
	"testing"

	"github.com/agentd/agentd/engine"
)

// A meter's cost is known only while every call under it was priced: one
// call of a model without a price makes the sum's cost unknown.
func TestUsageMeterCostKnownOnlyWhenEveryCallIsPriced(t *testing.T) {
	ctx, m := WithUsageMeter(context.Background())
	meter(ctx, engine.Usage{InputTokens: 10, OutputTokens: 2, CostUSD: 0.5}, true)
	if !m.CostKnown() || m.Used().CostUSD != 0.5 {
		t.Fatalf("after a priced call: known %v, used %+v", m.CostKnown(), m.Used())
	}
	meter(ctx, engine.Usage{InputTokens: 5, OutputTokens: 1}, false)
	if m.CostKnown() {
		t.Fatal("a call without a price left the meter's cost known")
	}
	if u := m.Used(); u.InputTokens != 15 || u.OutputTokens != 3 {
		t.Fatalf("tokens %+v, want 15 and 3", u)
	}
}
