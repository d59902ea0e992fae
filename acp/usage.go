package acp

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
)

// ---- Usage -------------------------------------------------------------

// Every model call of a turn is counted once, as input and output tokens:
// the planner's calls (the plan, recoveries, re-plans) from the growth of
// planner.Used(), the llm and agent steps' from their results. The turn's
// total is their sum, so input + output = total in every answer.

// countingModel counts what llm and agent steps use.
type countingModel struct {
	engine.StepModel
	s *session
}

func (m *countingModel) RunStep(ctx context.Context, call engine.ModelCall) (*engine.ModelResult, error) {
	res, err := m.StepModel.RunStep(ctx, call)
	if res != nil {
		m.s.addUsage(res.Usage)
	}
	return res, err
}

// syncPlannerUsage counts what the planner used since it was last looked at.
func (s *session) syncPlannerUsage() {
	if s.models == nil {
		return
	}
	s.mu.Lock()
	cur := s.models.Planner.Used()
	d := engine.Usage{InputTokens: cur.InputTokens - s.plannerSeen.InputTokens, OutputTokens: cur.OutputTokens - s.plannerSeen.OutputTokens,
		CostUSD: cur.CostUSD - s.plannerSeen.CostUSD}
	s.plannerSeen = cur
	s.mu.Unlock()
	if d.InputTokens != 0 || d.OutputTokens != 0 || d.CostUSD != 0 {
		s.addUsage(d)
	}
}

// addUsage counts u in the turn and the session and tells the client.
func (s *session) addUsage(u engine.Usage) {
	s.mu.Lock()
	s.turnUsage.InputTokens += u.InputTokens
	s.turnUsage.OutputTokens += u.OutputTokens
	s.turnUsage.CostUSD += u.CostUSD
	s.saved.InputTokens += u.InputTokens
	s.saved.OutputTokens += u.OutputTokens
	s.saved.Tokens += u.InputTokens + u.OutputTokens
	s.saved.CostUSD += u.CostUSD
	t, c := s.saved.Tokens, s.saved.CostUSD
	s.mu.Unlock()
	s.send(sdk.SessionUpdate{UsageUpdate: &sdk.SessionUsageUpdate{Used: t, Cost: &sdk.Cost{Amount: c, Currency: "USD"}}}, false)
}

// ---- Recovery ----------------------------------------------------------

// recoverer is the engine's Planner as the session shows it: each
// recovery or re-plan is its own tool call (kind think) with the model's
// decision as its content, and its model calls count in the turn's usage.
type recoverer struct {
	s *session
	n atomic.Int64
}

func (r *recoverer) Recover(ctx context.Context, req engine.RecoveryRequest) (*engine.RecoveryDecision, error) {
	id := r.begin(req.StepID, "recover", fmt.Sprintf("Recover from the failure of step %s (asking the model)", req.StepID), req.Error)
	dec, err := r.s.models.Planner.Recover(ctx, req)
	note := ""
	if dec != nil {
		note = "decision: " + dec.Action
		if dec.Reason != "" {
			note += " — " + dec.Reason
		}
	}
	r.end(id, note, err)
	return dec, err
}

func (r *recoverer) RePlan(ctx context.Context, req engine.RePlanRequest) ([]*plans.Step, error) {
	id := r.begin(req.StepID, "replan", fmt.Sprintf("Extend the plan for step %s (asking the model)", req.StepID), req.Suggestion)
	steps, err := r.s.models.Planner.RePlan(ctx, req)
	ids := make([]string, len(steps))
	for i, st := range steps {
		ids[i] = st.ID
	}
	r.end(id, fmt.Sprintf("added %d step(s): %s", len(steps), strings.Join(ids, ", ")), err)
	return steps, err
}

func (r *recoverer) begin(stepID, what, title, why string) sdk.ToolCallId {
	s := r.s
	run := "run"
	s.mu.Lock()
	if w := s.watch; w != nil {
		w.mu.Lock()
		if w.run != nil {
			run = w.run.ID()
		}
		w.mu.Unlock()
	}
	s.mu.Unlock()
	id := sdk.ToolCallId(fmt.Sprintf("%s/%s/%s-%d", run, stepID, what, r.n.Add(1)))
	opts := []sdk.ToolCallStartOpt{sdk.WithStartKind(sdk.ToolKindThink), sdk.WithStartStatus(sdk.ToolCallStatusInProgress)}
	if why != "" {
		opts = append(opts, sdk.WithStartContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(why))}))
	}
	s.startCall(id, func() sdk.SessionUpdate { return sdk.StartToolCall(id, title, opts...) })
	return id
}

func (r *recoverer) end(id sdk.ToolCallId, note string, err error) {
	s := r.s
	s.syncPlannerUsage()
	status := sdk.ToolCallStatusCompleted
	if err != nil {
		status, note = sdk.ToolCallStatusFailed, err.Error()
	}
	s.send(sdk.UpdateToolCall(id, sdk.WithUpdateStatus(status), sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(note))})), true)
}

// ---- Message chunks ----------------------------------------------------

// chunk sends agent text. A new block (the plan, a step's model text, the
// run's outcome, a command's result) starts a paragraph of its own: the
// client joins chunks as they come, so without it "…Hi." and "Run …" run
// together.
func (s *session) chunk(text string, newBlock bool) {
	if text == "" {
		return
	}
	s.mu.Lock()
	last := s.lastChunk
	if newBlock && last != "" && !strings.HasSuffix(last, "\n\n") {
		if strings.HasSuffix(last, "\n") {
			text = "\n" + text
		} else {
			text = "\n\n" + text
		}
	}
	s.lastChunk = text
	if n := len(s.lastChunk); n > 2 {
		s.lastChunk = s.lastChunk[n-2:]
	}
	s.mu.Unlock()
	s.send(sdk.UpdateAgentMessageText(text), true)
}
