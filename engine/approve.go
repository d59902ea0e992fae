package engine

// Whether a call may happen: its risk, the policy, the remembered rules
// and the Approver; and which calls may change files behind a change set.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentd/agentd/engine/tools"
)

// riskOf is the risk of one call: the tool's RiskOf when it assesses calls
// (git: reads low, commit and apply high), else its fixed Risk.
func riskOf(t tools.Tool, args json.RawMessage) tools.Risk {
	if ra, ok := t.(tools.RiskAssessor); ok {
		if r := ra.RiskOf(args); r != "" {
			return r
		}
	}
	return t.Risk()
}

// mayChangeFiles reports whether a call may change the workspace other than
// through a change set: commands may write anything, and git's actions
// other than its low-risk reads (status, diff, log) change the working tree
// or the repository; a tool that runs in another process (an MCP server's:
// tools.UncheckedWriter) may write anything whatever its category. Such
// calls get a snapshot after their step, so that restore and rollback
// know the agent's own work from the user's.
func mayChangeFiles(t tools.Tool, cat tools.Category, args json.RawMessage) bool {
	if u, ok := t.(tools.UncheckedWriter); ok && u.WritesUnchecked() {
		return true
	}
	switch cat {
	case tools.CategoryCommand:
		return true
	case tools.CategoryGit:
		return riskOf(t, args) != tools.RiskLow
	}
	return false
}

// approve applies the policy and asks the Approver if needed. It returns
// a non-empty reason when the call must not happen.
func (w *worker) approve(ctx context.Context, t tools.Tool, cat tools.Category, risk tools.Risk, desc tools.Description, changeID string) (string, error) {
	s, step := w.s, w.j.step
	v, why := s.policy.decide(cat, risk, step.Approval, desc.Command)
	switch v {
	case verdictAllow:
		return "", nil
	case verdictDeny:
		return "denied by the approval policy: " + why, nil
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
	req := ApprovalRequest{
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
func (w *worker) ask(ctx context.Context, req ApprovalRequest, why string) (ApprovalDecision, error) {
	s := w.s
	var rules *ApprovalRules
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
			return ApprovalDecision{Allow: r.Allow, Reason: reason}, nil
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
