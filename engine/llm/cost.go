package llm

import (
	"sort"
	"strings"
)

// Price is a model's price in USD per million tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// builtinPrices are list prices (USD per million tokens). Users extend or
// override them with "costs" in ~/.config/agentd/config.json. A model name
// matches its entry exactly or by the longest prefix ("claude-sonnet-4-..."
// matches "claude-sonnet-4").
var builtinPrices = map[string]Price{
	"gpt-4o":            {2.5, 10},
	"gpt-4o-mini":       {0.15, 0.6},
	"gpt-4.1":           {2, 8},
	"gpt-4.1-mini":      {0.4, 1.6},
	"gpt-4.1-nano":      {0.1, 0.4},
	"gpt-5":             {1.25, 10},
	"gpt-5-mini":        {0.25, 2},
	"o3":                {2, 8},
	"o3-mini":           {1.1, 4.4},
	"o4-mini":           {1.1, 4.4},
	"claude-opus-4":     {15, 75},
	"claude-sonnet-4":   {3, 15},
	"claude-3-7-sonnet": {3, 15},
	"claude-3-5-sonnet": {3, 15},
	"claude-3-5-haiku":  {0.8, 4},
	"claude-haiku-4":    {1, 5},
}

// CostTable prices model use.
type CostTable map[string]Price

// NewCostTable returns the built-in prices with extra added on top.
func NewCostTable(extra map[string]Price) CostTable {
	t := CostTable{}
	for k, v := range builtinPrices {
		t[k] = v
	}
	for k, v := range extra {
		t[k] = v
	}
	return t
}

// Lookup returns the price of model (provider prefixes such as "openai/"
// are ignored) and whether it is known. Local models are free.
func (t CostTable) Lookup(model string) (Price, bool) {
	if p, ok := t[model]; ok {
		return p, true
	}
	if i := strings.LastIndex(model, "/"); i >= 0 {
		if p, ok := t[model[i+1:]]; ok {
			return p, true
		}
		model = model[i+1:]
	}
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		if strings.HasPrefix(model, k) {
			return t[k], true
		}
	}
	return Price{}, false
}

// Cost is the USD cost of u with model.
func (t CostTable) Cost(model string, u Usage) float64 {
	p, _ := t.Lookup(model)
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output) / 1e6
}
