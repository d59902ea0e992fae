package engine

// Whether a call may happen: its risk, the policy, the remembered rules
// and the Approver; and which calls may change files behind a change set.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/tools"
)

// approve applies the policy and asks the Approver if needed. It returns
// a non-empty reason when the call must not happen.
func (w *worker) approve(ctx context.Context, t tools.Tool, cat tools.Category, risk tools.Risk, desc tools.Description, changeID string) (string, error) {
	s, step := w.s, w.j.step
	ask, deny, why := s.policy.Decide(cat, risk, step.Approval, desc.Command)
	if deny {
		return "denied by the approval policy: " + why, nil
	}
	if !ask {
		return "", nil
	}
	title := desc.Title
	if title == "" {
		if desc.Command != "" {
			title = "Run " + desc.Command
		} else {
			title = fmt.Sprintf("%s (step %s)", t.Name(), step.ID)
		}
	}
	detail := desc.Detail
	if detail == "" {
		detail = step.Description
	}
	req := approval.ApprovalRequest{
		RunID: s.r.id, StepID: step.ID, Tool: t.Name(), Category: cat, Risk: risk,
		Title: title, Detail: detail, Command: desc.Command, Cwd: desc.Cwd, ChangeID: changeID,
	}
	dec, err := w.ask(ctx, req, why)
	if err != nil {
		return "", fmt.Errorf("step %q: asking for approval: %w", step.ID, err)
	}
	if !dec.Allow {
		r := "approval denied"
		if dec.Reason != "" {
			r += ": " + dec.Reason
		}
		return r, nil
	}
	return "", nil
}

// ask answers req from the workspace's remembered rules, else asks the
// Approver (and remembers an "always" answer).
func (w *worker) ask(ctx context.Context, req approval.ApprovalRequest, why string) (approval.ApprovalDecision, error) {
	s := w.s
	var rules *approval.ApprovalRules
	if s.cfg.Journal != nil {
		rules = s.cfg.Journal.Rules()
	}
	// A remembered rule (by category and tool) never answers for a
	// sensitive read: each secret is asked for (sensitive.go).
	if rules != nil && !req.Sensitive {
		r, err := rules.Match(req)
		if err != nil {
			// Asking is the safe side; the user learns why they are asked.
			s.log.Error("remembered approval rules unreadable; asking", "err", err)
			w.output("log", fmt.Sprintf("agentd: %v; asking instead\n", err))
		} else if r != nil {
			reason := "remembered rule " + r.ID
			if r.Reason != "" {
				reason += ": " + r.Reason
			}
			if r.Allow {
				w.allowedBy(AllowedBy{RuleID: r.ID, Command: req.Command})
			}
			return approval.ApprovalDecision{Allow: r.Allow, Reason: reason}, nil
		}
	}
	w.waiting(true, Event{Type: EventApprovalPending, Reason: why, ChangeID: req.ChangeID})
	dec, err := s.cfg.Approver.Approve(ctx, req)
	w.waiting(false, Event{Type: EventStepProgress, Reason: "approval answered"})
	if err != nil {
		return dec, err
	}
	if dec.Always && rules != nil {
		r, err := rules.Remember(req, dec.Allow, dec.Reason)
		if err != nil {
			s.log.Error("could not remember an approval", "err", err)
			w.output("log", fmt.Sprintf("agentd: this answer applies now but is not remembered: %v\n", err))
		} else {
			s.log.Info("remembered approval rule", "rule", r.ID, "category", r.Category, "tool", r.Tool, "command", r.Command, "allow", r.Allow)
		}
	}
	return dec, nil
}

func (w *worker) askFunc() func(ctx context.Context, question string, options []string) (string, error) {
	in := w.s.cfg.Inputter
	if in == nil {
		return nil
	}
	if w.s.opts.DryRun {
		// A dry run never asks: a model's ask_user gets this answer.
		return func(ctx context.Context, question string, options []string) (string, error) {
			return "", fmt.Errorf("this is a dry run, which asks the user nothing: go on with the most likely answer to %q, or stop", question)
		}
	}
	return func(ctx context.Context, question string, options []string) (string, error) {
		w.waiting(true, Event{Type: EventStepProgress, Reason: "asking: " + question})
		defer w.waiting(false, Event{Type: EventStepProgress, Reason: "answered"})
		return in.Ask(ctx, InputRequest{RunID: w.s.r.id, StepID: w.j.step.ID, Question: question, Options: options})
	}
}

// allowedBy records on the step, and says in an event, that a remembered
// rule allowed what it asked.
func (w *worker) allowedBy(a AllowedBy) {
	n, gen := w.j.n, w.j.gen
	ev := Event{Type: EventStepProgress, StepID: w.j.step.ID, Reason: a.String(), AllowedBy: &a}
	w.s.post(func(s *sched) {
		if n.gen != gen {
			return
		}
		n.st.AllowedBy = &a
		s.emit(ev)
	})
}

// approveSensitive asks before t reads a sensitive file; it returns a
// non-empty reason when the call must not happen, and handled false when
// the call reads no sensitive file (the usual approval applies).
func (w *worker) approveSensitive(ctx context.Context, t tools.Tool, args json.RawMessage) (why string, handled bool, err error) {
	s, step := w.s, w.j.step
	paths := approval.ReadPaths(t, args)
	if len(paths) == 0 || s.cfg.WS == nil {
		return "", false, nil
	}
	g := approval.ReadGate{WS: s.cfg.WS, RunID: s.r.id, StepID: step.ID, Auto: step.Approval == "auto",
		Ask: func(ctx context.Context, req approval.ApprovalRequest) (approval.ApprovalDecision, error) {
			return w.ask(ctx, req, "reads a sensitive file: "+req.Title)
		}}
	v, err := g.Check(ctx, t.Name(), paths)
	if err != nil {
		return "", true, fmt.Errorf("step %q: asking for approval: %w", step.ID, err)
	}
	if !v.Allowed {
		if t.Category() != tools.CategoryRead {
			// A command naming a sensitive file: what it prints would
			// reach a model, so it is not run.
			return fmt.Sprintf("%s was not run: it names %s, a sensitive file (matches %q), and the user did not allow it to be read: %s",
				t.Name(), v.Path, v.Pattern, v.Reason), true, nil
		}
		return v.Reason, true, nil
	}
	return "", v.Sensitive, nil
}
