package session

import (
	"context"
	"fmt"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/review"
)

// ParseReview reads a review mode's name given in field (a flag such as
// "--review", an option such as "initializationOptions.review"): "" (the
// default), before, after or none. A bad name is a *FieldError naming the
// field and the allowed values, the same words in every front end.
func ParseReview(field, name string) (engine.ReviewMode, error) {
	m, err := review.ParseMode(name)
	if err != nil {
		return "", &FieldError{Field: field, Message: err.Error()}
	}
	return m, nil
}

// Answer is who answers a run's questions: the front end's answer mode.
type Answer string

const (
	// AnswerAsk: the workspace's approval policy (Session.Policy); what
	// it asks, and every review, goes to the user through the front end
	// (the editors, ACP's "ask" mode, agentd run without --yes).
	AnswerAsk Answer = "ask"
	// AnswerYes: nothing is asked (AllowAllPolicy), and the front end
	// answers yes to any review it is given; by default changes are
	// applied and kept for a later review (agentd run --yes).
	AnswerYes Answer = "yes"
	// AnswerAuto: nothing is asked and nothing reviewed: changes are
	// written at once (ACP's "auto" mode).
	AnswerAuto Answer = "auto"
)

// RunRequest is how a front end asks for a run: its answer mode, the
// user's review mode if they chose one, and the rest of the run's options.
type RunRequest struct {
	Answer Answer
	// Review is the user's choice ("" = the default: ReviewMode).
	Review engine.ReviewMode
	// Unattended says no one sees a review as the run makes it (agentd
	// run whose standard input is not a terminal): a question may still
	// be answered, but a change is not held for one by default.
	Unattended bool
	// Options are the run's other options. Options.Review is ignored
	// (Review is the user's choice); Options.Approval, if set, replaces
	// the workspace's policy for AnswerAsk (agentd/run/start's
	// options.approval).
	Options engine.RunOptions
}

// ReviewMode is the run's review mode: the user's choice, else the one
// default of every front end: none when nothing is to be reviewed (auto),
// after when the front end answers for the user (yes) or no one is there
// to review as the run goes (unattended), else before.
func (r RunRequest) ReviewMode() engine.ReviewMode {
	switch {
	case r.Review != "":
		return r.Review
	case r.Answer == AnswerAuto:
		return engine.ReviewNone
	case r.Answer == AnswerYes || r.Unattended:
		return engine.ReviewAfter
	}
	return engine.ReviewBefore
}

// RunOptions composes the run's options from req: its review mode
// (ReviewMode) and its approval policy. Ask runs under the workspace's
// policy (or req.Options.Approval), yes and auto under AllowAllPolicy
// with the workspace's denyCommands.
// Review mode none means one thing everywhere: file changes are applied
// at once, neither reviewed nor asked about (the policy's write is
// allow); deletes, commands, git and network still follow the policy.
func (s *Session) RunOptions(req RunRequest) (engine.RunOptions, error) {
	opts := req.Options
	if _, err := ParseReview("review", string(req.Review)); err != nil {
		return opts, err
	}
	opts.Review = req.ReviewMode()
	var pol approval.ApprovalPolicy
	switch req.Answer {
	case AnswerYes, AnswerAuto:
		// Nothing is asked, but what the workspace refuses stays refused
		// (docs/acp.md, agentd run --yes): its denyCommands.
		p, err := s.Policy()
		if err != nil {
			return opts, &PolicyError{err}
		}
		pol = approval.AllowAllPolicy()
		pol.DenyCommands = p.DenyCommands
	case AnswerAsk, "":
		if req.Options.Approval != nil {
			pol = *req.Options.Approval
		} else {
			p, err := s.Policy()
			if err != nil {
				return opts, &PolicyError{err}
			}
			pol = p
		}
	default:
		return opts, &FieldError{Field: "answer", Message: fmt.Sprintf("must be ask, yes or auto, not %q", req.Answer)}
	}
	if opts.Review == engine.ReviewNone {
		pol.Write = approval.PolicyAllow
	}
	opts.Approval = &pol
	return opts, nil
}

// StartRun starts plan on eng (built on Config) with the options
// RunOptions composes: the one way every front end starts a run.
func (s *Session) StartRun(ctx context.Context, eng *engine.Engine, plan *plans.Plan, req RunRequest) (*engine.Run, error) {
	opts, err := s.RunOptions(req)
	if err != nil {
		return nil, err
	}
	run, err := eng.Start(ctx, plan, opts)
	if err == nil {
		s.liveRuns.Store(run.ID(), run)
		select {
		case <-run.Done(): // ended before it was kept: its end may be told already
			s.liveRuns.Delete(run.ID())
		default:
		}
	}
	return run, err
}

// PolicyError is a run not started because the workspace's approval
// policy cannot be read (Session.Policy's error, unchanged in its words).
type PolicyError struct{ Err error }

func (e *PolicyError) Error() string { return e.Err.Error() }
func (e *PolicyError) Unwrap() error { return e.Err }
