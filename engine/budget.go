package engine

import (
	"fmt"
	"sync"
)

// RunBudget is the Budget of one run: it caps tokens and cost (0 = no cap)
// and counts what model calls used. Safe for concurrent use.
type RunBudget struct {
	mu        sync.Mutex
	maxTokens int
	maxCost   float64
	tokens    int
	cost      float64
	calls     int // model calls counted by Add directly (the planner's)
}

// NewBudget returns a budget with the given caps (0 = unlimited).
func NewBudget(maxTokens int, maxCostUSD float64) *RunBudget {
	return &RunBudget{maxTokens: maxTokens, maxCost: maxCostUSD}
}

// Reserve fails with ErrBudgetExceeded if the estimate would go over a cap.
// Nothing is counted.
func (b *RunBudget) Reserve(estTokens int, estCostUSD float64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.maxTokens > 0 && b.tokens+estTokens > b.maxTokens {
		return fmt.Errorf("%w: %d tokens used, about %d more needed, limit %d (raise maxTokens)",
			ErrBudgetExceeded, b.tokens, estTokens, b.maxTokens)
	}
	if b.maxCost > 0 && b.cost+estCostUSD > b.maxCost {
		return fmt.Errorf("%w: $%.4f used, about $%.4f more needed, limit $%.4f (raise maxCostUSD)",
			ErrBudgetExceeded, b.cost, estCostUSD, b.maxCost)
	}
	return nil
}

// Add counts actual use of one model call made outside a step (the
// planner's); steps count theirs through their own budget.
func (b *RunBudget) Add(u Usage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	b.add(u)
}

// add counts usage without counting a call (b.mu held).
func (b *RunBudget) add(u Usage) {
	b.tokens += u.InputTokens + u.OutputTokens
	b.cost += u.CostUSD
}

// addStepUsage counts a step's usage; the step reports its calls itself.
func (b *RunBudget) addStepUsage(u Usage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.add(u)
}

// Calls returns the model calls counted by Add.
func (b *RunBudget) Calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

// Used returns the tokens and cost counted so far.
func (b *RunBudget) Used() (tokens int, costUSD float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens, b.cost
}

// stepBudget is what one model step sees: it forwards to the run's budget
// and remembers what the model code itself counted, so that the engine can
// count the rest of the step's reported usage without counting twice.
type stepBudget struct {
	run   *RunBudget
	mu    sync.Mutex
	added Usage
}

func (b *stepBudget) Reserve(estTokens int, estCostUSD float64) error {
	return b.run.Reserve(estTokens, estCostUSD)
}

func (b *stepBudget) Add(u Usage) {
	b.mu.Lock()
	b.added.InputTokens += u.InputTokens
	b.added.OutputTokens += u.OutputTokens
	b.added.CostUSD += u.CostUSD
	b.mu.Unlock()
	b.run.addStepUsage(u)
}

// settle counts the part of total that the model code did not Add itself.
func (b *stepBudget) settle(total Usage) {
	b.mu.Lock()
	rest := Usage{
		InputTokens:  max(0, total.InputTokens-b.added.InputTokens),
		OutputTokens: max(0, total.OutputTokens-b.added.OutputTokens),
		CostUSD:      max(0, total.CostUSD-b.added.CostUSD),
	}
	b.added.InputTokens += rest.InputTokens
	b.added.OutputTokens += rest.OutputTokens
	b.added.CostUSD += rest.CostUSD
	b.mu.Unlock()
	if rest != (Usage{}) {
		b.run.addStepUsage(rest)
	}
}

// estimateTokens is a rough token count of a prompt (4 bytes a token), for
// Reserve before a call.
func estimateTokens(s string) int { return len(s)/4 + 1 }

// PlanningUsage is what making a run's plan used, before the run.
type PlanningUsage struct {
	Calls int   `json:"calls"`
	Usage Usage `json:"usage"`
}
