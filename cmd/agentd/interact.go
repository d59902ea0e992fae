package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/workspace"
)

// terminal answers the engine's questions at the terminal: approvals,
// reviews of change sets, input steps and failed critical steps. It is the
// terminal's counterpart of what the rpc package asks an editor.
type terminal struct {
	con    *console
	ws     *workspace.Workspace
	yes    bool               // --yes: allow and accept everything
	cancel context.CancelFunc // "q" stops the whole run
	quiet  bool               // --review none: do not print diffs
	book   *review.Book       // the run's change sets, recorded in the journal (nil: not recorded)

	mu        sync.Mutex
	acceptAll bool // "a" at a review
}

func (t *terminal) Approve(ctx context.Context, req engine.ApprovalRequest) (engine.ApprovalDecision, error) {
	// Remembered "always" answers are the engine's (the workspace's rule
	// store, shared with the editors): it asks only when none applies.
	if t.yes {
		return engine.ApprovalDecision{Allow: true}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s step %s wants to %s (%s, risk %s)\n", t.con.paint("33", "?"), req.StepID, lowerFirst(req.Title), req.Category, req.Risk)
	if req.Command != "" {
		cwd := req.Cwd
		if cwd == "" {
			cwd = "."
		}
		fmt.Fprintf(&b, "    $ %s\n    in %s\n", req.Command, cwd)
	}
	if req.Detail != "" {
		for _, l := range strings.Split(strings.TrimRight(req.Detail, "\n"), "\n") {
			fmt.Fprintf(&b, "    %s\n", l)
		}
	}
	always := "[a]lways for " + string(req.Category) + " " + req.Tool
	if req.Command != "" {
		always = "[a]lways for this command"
	}
	ans, err := t.con.Choose(ctx, b.String(), "allow? [y]es [n]o "+always+" [q]uit:", "ynaq", 0)
	switch {
	case errors.Is(err, errNoAnswer):
		return engine.ApprovalDecision{Allow: false, Reason: err.Error()}, nil
	case err != nil:
		return engine.ApprovalDecision{}, err
	}
	switch ans {
	case 'y':
		return engine.ApprovalDecision{Allow: true}, nil
	case 'a':
		return engine.ApprovalDecision{Allow: true, Always: true}, nil
	case 'q':
		t.cancel()
		return engine.ApprovalDecision{Allow: false, Reason: "run stopped at the terminal"}, nil
	}
	return engine.ApprovalDecision{Allow: false, Reason: "denied at the terminal"}, nil
}

// Ask answers input steps and ask_user.
func (t *terminal) Ask(ctx context.Context, req engine.InputRequest) (string, error) {
	q := fmt.Sprintf("%s step %s asks: %s", t.con.paint("33", "?"), req.StepID, req.Question)
	if len(req.Options) > 0 {
		var b strings.Builder
		for i, o := range req.Options {
			fmt.Fprintf(&b, "  %d) %s\n", i+1, o)
		}
		for {
			ans, err := t.con.Prompt(ctx, q+"\n"+b.String(), "choose 1-"+fmt.Sprint(len(req.Options))+":")
			if err != nil {
				return "", err
			}
			var n int
			if _, err := fmt.Sscan(ans, &n); err == nil && n >= 1 && n <= len(req.Options) {
				return req.Options[n-1], nil
			}
			for _, o := range req.Options {
				if strings.EqualFold(o, ans) {
					return o, nil
				}
			}
			q = ""
		}
	}
	return t.con.Prompt(ctx, q, ">")
}

// OnFailure asks what to do with a failed critical step (interactive only).
func (t *terminal) OnFailure(ctx context.Context, runID, stepID string, err error) (engine.FailureAction, error) {
	text := fmt.Sprintf("%s step %s failed: %v", t.con.paint("31", "✗"), stepID, err)
	ans, perr := t.con.Choose(ctx, text, "[a]bort the run, [s]kip the step, [r]etry it?", "asr", 'a')
	if perr != nil {
		return engine.FailAbort, nil
	}
	switch ans {
	case 's':
		return engine.FailSkip, nil
	case 'r':
		return engine.FailRetry, nil
	}
	return engine.FailAbort, nil
}

func lowerFirst(s string) string {
	if s == "" {
		return "do something"
	}
	return strings.ToLower(s[:1]) + s[1:]
}
