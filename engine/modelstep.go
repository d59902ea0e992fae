package engine

// The steps that are not tool calls: llm and agent steps (through
// Config.Model, an agent's tool calls through callTool), validation and
// input steps.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
)

// modelStep runs an llm or agent step through Config.Model.
func (w *worker) modelStep(ctx context.Context) error {
	s, step := w.s, w.j.step
	if s.opts.DryRun {
		// A dry run makes no model call (with a model configured or not):
		// the step would ask one, and what depends on it would run.
		w.res.wouldRun = WouldRunPrefix + ": it would ask the model (a dry run makes no model call)"
		w.res.output, _ = json.Marshal(map[string]any{"dryRun": true, "wouldRun": true, "reason": w.res.wouldRun})
		w.res.dry = true
		return nil
	}
	if s.cfg.Model == nil { // a plan grown by re-planning after Start
		return fmt.Errorf("step %q (%s): %w: %s", step.ID, step.EffectiveKind(), ErrNoModel, NoModelFix)
	}
	prompt, err := plans.Interpolate(step.Prompt, w.j.outs)
	if err != nil {
		return fmt.Errorf("step %q: resolving references in prompt: %w", step.ID, err)
	}
	sb := &stepBudget{run: s.budget}
	if err := sb.Reserve(estimateTokens(prompt), 0); err != nil {
		return fmt.Errorf("step %q: %w", step.ID, err)
	}
	call := ModelCall{
		RunID: s.r.id, Step: step, Prompt: prompt, Model: step.Model, Budget: sb,
		Output: func(text string) { w.output("model", text) },
	}
	var rejected []HunkRejection
	var rmu sync.Mutex
	if step.EffectiveKind() == plans.KindAgent {
		call.Guidance = s.r.guidanceReader()
		allowed := map[string]bool{}
		if len(step.Tools) == 0 {
			for _, t := range s.cfg.Tools.List() {
				call.Tools = append(call.Tools, t)
				allowed[t.Name()] = true
			}
		} else {
			for _, name := range step.Tools {
				t, ok := s.cfg.Tools.Get(name)
				if !ok {
					return fmt.Errorf("step %q: unknown tool %q in tools", step.ID, name)
				}
				call.Tools = append(call.Tools, t)
				allowed[name] = true
			}
		}
		call.Exec = func(ctx context.Context, tool string, args json.RawMessage) (*ToolCallResult, error) {
			if !allowed[tool] {
				return &ToolCallResult{Error: fmt.Sprintf("tool %q is not available to this step", tool)}, nil
			}
			out, err := w.callTool(ctx, tool, args)
			if err != nil {
				if ctx.Err() != nil {
					return nil, err
				}
				r := &ToolCallResult{Error: tools.ModelText(err)} // with the tool's hint for a model
				if out != nil {
					r.Output = out.value()
				}
				return r, nil
			}
			w.mu.Lock()
			aborted := w.res.aborted
			w.mu.Unlock()
			if aborted {
				return nil, errAborted
			}
			if out.skipped != "" {
				return &ToolCallResult{Error: "not done: " + out.skipped}, nil
			}
			r := &ToolCallResult{Output: out.value()}
			if out.review != nil {
				r.Rejected = out.review.Rejected
				r.Note = rejectionNote(len(out.review.Applied), len(out.review.Rejected))
				rmu.Lock()
				rejected = append(rejected, out.review.Rejected...)
				rmu.Unlock()
			}
			return r, nil
		}
	}
	var mr *ModelResult
	err = w.withTimeout(ctx, func(ctx context.Context) error {
		var err error
		mr, err = s.cfg.Model.RunStep(ctx, call)
		return err
	})
	calls := 1
	if mr != nil && mr.Calls > 0 {
		calls = mr.Calls
	}
	w.mu.Lock()
	w.res.llmCalls += calls
	aborted := w.res.aborted
	w.mu.Unlock()
	if mr != nil {
		sb.settle(mr.Usage)
	}
	if aborted {
		return fmt.Errorf("step %q: %w", step.ID, errAborted)
	}
	if err != nil {
		return fmt.Errorf("step %q: model: %w", step.ID, err)
	}
	if mr == nil {
		mr = &ModelResult{}
	}
	o := map[string]any{"text": mr.Text}
	w.mu.Lock()
	if len(w.res.changeIDs) > 0 {
		o["changes"] = w.res.changeIDs
	}
	w.mu.Unlock()
	if len(rejected) > 0 {
		o["rejected"] = rejected
	}
	raw, err := json.Marshal(o)
	if err != nil {
		return err
	}
	w.mu.Lock()
	if err := w.agentOutcome(); err != nil {
		w.res.output = raw
		w.mu.Unlock()
		return err
	}
	w.res.output = raw
	w.res.needsMore, w.res.suggestion = mr.NeedsMoreContext, mr.ContextSuggestion
	w.mu.Unlock()
	return nil
}

func (w *worker) validationStep() error {
	step := w.j.step
	for i, c := range step.Checks {
		ok, err := plans.EvalCondition(c.Expr, w.j.outs)
		if err != nil {
			return fmt.Errorf("step %q: check %d (%s): %w", step.ID, i+1, c.Expr, err)
		}
		if !ok {
			msg := c.Message
			if msg == "" {
				msg = fmt.Sprintf("%s does not hold", c.Expr)
			}
			return fmt.Errorf("step %q: check failed: %s", step.ID, msg)
		}
	}
	raw, _ := json.Marshal(map[string]any{"passed": len(step.Checks)})
	w.res.output = raw
	return nil
}

func (w *worker) inputStep(ctx context.Context) error {
	step := w.j.step
	q, err := plans.Interpolate(step.Question, w.j.outs)
	if err != nil {
		return fmt.Errorf("step %q: resolving references in question: %w", step.ID, err)
	}
	if w.s.opts.DryRun {
		// A dry run never asks: the step would ask, and what depends on
		// the answer would run.
		w.res.wouldRun = WouldRunPrefix + ": it would ask " + strconv.Quote(q)
		w.res.output, _ = json.Marshal(map[string]any{"dryRun": true, "wouldRun": true, "reason": w.res.wouldRun})
		w.res.dry = true
		return nil
	}
	ask := w.askFunc()
	if ask == nil {
		return fmt.Errorf("step %q asks %q but nobody can answer in this session: run the plan from an editor or a terminal, or replace the step with a fixed value", step.ID, q)
	}
	ans, err := ask(ctx, q, step.Options)
	if err != nil {
		return fmt.Errorf("step %q: asking the user: %w", step.ID, err)
	}
	raw, _ := json.Marshal(ans)
	w.res.output = raw
	return nil
}
