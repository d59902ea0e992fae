package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
)

// NeedsMoreContextMarker starts a line of a step's answer that asks the
// engine to re-plan; the rest of the line is the suggestion.
const NeedsMoreContextMarker = "NEEDS_MORE_CONTEXT:"

const stepSystem = `You are a step of an automated coding plan run by agentd inside the user's workspace.
Do exactly what the step asks and answer concisely; your answer is the step's output and later steps may use it.
If you cannot do the step well without information you do not have, end your answer with one line
` + NeedsMoreContextMarker + ` <what is missing and how to get it>
and the plan will be extended with steps that gather it.`

const agentSystem = stepSystem + `
You can call tools. Paths are relative to the workspace root. File changes you make may be reviewed by the user;
if a tool result says the user rejected a change, respect the reason: do not make the same change again, adapt or explain.
When the task is done, answer with a short summary of what you did and no tool call.`

// StepModel runs llm and agent steps (engine.StepModel).
type StepModel struct {
	settings *Settings
	// MaxOutputTokens caps each call's answer (0: the profile's or provider's default).
	MaxOutputTokens int
}

// NewStepModel returns a step model using s for every model a step names.
// s must not change while steps run (apply SetEditor before).
func NewStepModel(s *Settings) *StepModel {
	return &StepModel{settings: s}
}

var _ engine.StepModel = (*StepModel)(nil)

// RunStep runs one llm step (a single call) or agent step (a tool loop of
// at most maxIterations model calls; every tool call goes through
// call.Exec).
func (m *StepModel) RunStep(ctx context.Context, call engine.ModelCall) (*engine.ModelResult, error) {
	c, err := m.settings.Client(call.Model)
	if err != nil {
		return nil, err
	}
	res := &engine.ModelResult{}
	add := func(u engine.Usage) {
		res.Usage.InputTokens += u.InputTokens
		res.Usage.OutputTokens += u.OutputTokens
		res.Usage.CostUSD += u.CostUSD
		res.Calls++
	}
	req := &Request{Messages: []Message{{Role: "user", Content: call.Prompt}}, MaxTokens: m.MaxOutputTokens}
	if call.Output != nil {
		req.OnText = call.Output
	}
	if call.Step == nil || call.Step.EffectiveKind() != plans.KindAgent {
		req.System = stepSystem
		resp, u, err := c.Call(ctx, call.Budget, req)
		if err != nil {
			return res, err
		}
		add(u)
		res.Text, res.NeedsMoreContext, res.ContextSuggestion = splitNeedsMore(resp.Text)
		return res, nil
	}
	if call.Exec == nil {
		return res, fmt.Errorf("agent step %q: no tool executor (engine bug)", call.Step.ID)
	}
	req.System = agentSystem
	for _, t := range call.Tools {
		req.Tools = append(req.Tools, ToolDef{Name: t.Name(), Description: t.Description(), Schema: t.Schema()})
	}
	maxIter := call.Step.MaxIterations
	if maxIter <= 0 {
		maxIter = plans.DefaultMaxIterations
	}
	for iter := 0; iter < maxIter; iter++ {
		if call.Guidance != nil {
			for _, g := range call.Guidance() {
				req.Messages = append(req.Messages, Message{Role: "user", Content: engine.GuidancePrefix + g})
			}
		}
		resp, u, err := c.Call(ctx, call.Budget, req)
		if err != nil {
			return res, fmt.Errorf("agent step %q, model call %d: %w", call.Step.ID, iter+1, err)
		}
		add(u)
		if len(resp.ToolCalls) == 0 {
			res.Text, res.NeedsMoreContext, res.ContextSuggestion = splitNeedsMore(resp.Text)
			return res, nil
		}
		req.Messages = append(req.Messages, Message{Role: "assistant", Content: resp.Text, ToolCalls: resp.ToolCalls})
		for i, tc := range resp.ToolCalls {
			if tc.ID == "" {
				tc.ID = fmt.Sprintf("call_%d_%d", iter, i)
				resp.ToolCalls[i].ID = tc.ID
			}
			r, err := call.Exec(ctx, tc.Name, tc.Args)
			if err != nil {
				return res, fmt.Errorf("agent step %q: tool %s: %w", call.Step.ID, tc.Name, err)
			}
			req.Messages = append(req.Messages, Message{Role: "tool", ToolCallID: tc.ID, Content: toolResultText(r)})
		}
	}
	return res, fmt.Errorf("agent step %q did not finish within maxIterations %d (the model kept calling tools); raise maxIterations or split the step",
		call.Step.ID, maxIter)
}

// maxToolResult bounds a tool result sent back to the model.
const maxToolResult = 16 << 10

// toolResultText renders a tool result for the model; rejected hunks and
// their reasons are spelled out.
func toolResultText(r *engine.ToolCallResult) string {
	if r == nil {
		return `{"output": null}`
	}
	var b strings.Builder
	if len(r.Rejected) > 0 {
		note := r.Note
		if note == "" {
			note = "The user REJECTED part of this change."
		}
		b.WriteString(note + " The rejected hunks, with the user's reasons:\n")
		for _, h := range r.Rejected {
			reason := h.Reason
			if reason == "" {
				reason = "(no reason given)"
			}
			fmt.Fprintf(&b, "- %s hunk %s: %s\n", h.Path, h.HunkID, reason)
		}
		b.WriteString("Do not make the rejected change again; take the reason into account.\n")
	}
	data, err := json.Marshal(r)
	if err != nil {
		data = []byte(fmt.Sprintf(`{"error": %q}`, err.Error()))
	}
	s := string(data)
	if len(s) > maxToolResult {
		s = s[:maxToolResult] + fmt.Sprintf("... (truncated: this tool result is %d bytes; only its first %d are sent to you)", len(s), maxToolResult)
	}
	b.WriteString(s)
	return b.String()
}

// splitNeedsMore removes a trailing NEEDS_MORE_CONTEXT line from text.
func splitNeedsMore(text string) (string, bool, string) {
	lines := strings.Split(strings.TrimRight(text, "\n "), "\n")
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-3; i-- {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, NeedsMoreContextMarker) {
			sugg := strings.TrimSpace(strings.TrimPrefix(l, NeedsMoreContextMarker))
			rest := append(lines[:i:i], lines[i+1:]...)
			return strings.TrimSpace(strings.Join(rest, "\n")), true, sugg
		}
	}
	return text, false, ""
}
