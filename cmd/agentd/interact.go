package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/workspace"
)

// terminal answers the engine's questions at the terminal: approvals,
// reviews of change sets, input steps and failed critical steps. It is the
// terminal's counterpart of what the rpc package asks an editor.
type terminal struct {
	con    *console
	ws     *workspace.Workspace
	yes    bool                    // --yes: allow and accept everything
	cancel context.CancelCauseFunc // "q" stops the whole run; the cause is the run's error
	quiet  bool                    // --review none: do not print diffs
	disp   *display                // prompts wait until what led to them is shown
	book   *review.Book            // the run's change sets, recorded in the journal (nil: not recorded)

	// queue serializes every question of the run, whichever step asks:
	// one prompt at a time, and "a" or "q" settle the ones waiting.
	queue sync.Mutex

	mu        sync.Mutex
	acceptAll bool           // "a" at a review: accept every later change set
	rejectAll bool           // "q": reject the rest, the run is cancelled
	asked     map[string]int // approvals asked per step (see display.waitShown)
	// noInput names the step that needed an answer when standard input
	// was closed: the run stops at once and exits 2.
	noInput string
}

// closedInput records that a step needed an answer and stdin is closed,
// and stops the run.
func (t *terminal) closedInput(step string) {
	t.mu.Lock()
	if t.noInput == "" {
		t.noInput = step
	}
	t.mu.Unlock()
	t.cancel(fmt.Errorf("step %s needs an answer and standard input is closed", step))
}

// stopped reports whether "q" or closed input stopped the run.
func (t *terminal) stopped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rejectAll || t.noInput != ""
}

// shown waits until the display has shown key n times.
func (t *terminal) shown(ctx context.Context, key string, n int) {
	if t.disp != nil {
		t.disp.waitShown(ctx, key, n)
	}
}

// approvalKeys is what "?" prints at an approval prompt.
const approvalKeys = `  y  allow it this time
  n  deny it: the step is skipped and the run ends partial
  a  allow it and remember: this command line (or this tool) is allowed in this
     workspace from now on, here and in the editors (agentd rules list / revoke)
  q  deny it and cancel the run
  ?  this help`

func (t *terminal) Approve(ctx context.Context, req approval.ApprovalRequest) (approval.ApprovalDecision, error) {
	// Remembered "always" answers are the engine's (the workspace's rule
	// store, shared with the editors): it asks only when none applies.
	if t.yes {
		return approval.ApprovalDecision{Allow: true}, nil
	}
	t.queue.Lock()
	defer t.queue.Unlock()
	t.mu.Lock()
	if t.asked == nil {
		t.asked = map[string]int{}
	}
	t.asked[req.StepID]++
	n := t.asked[req.StepID]
	t.mu.Unlock()
	if t.stopped() {
		return approval.ApprovalDecision{Allow: false, Reason: "the run was stopped at the terminal"}, nil
	}
	t.shown(ctx, shownKey("approval", req.StepID), n)
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
	prompt, keys := "allow? [y]es [n]o "+always+" [q]uit [?]help, then Enter:", "ynaq?"
	if req.Sensitive {
		// No remembered rule ever answers a sensitive read (the engine's
		// rule), so "always" is not offered: each read asks.
		prompt, keys = "allow this read? [y]es [n]o [q]uit [?]help, then Enter:", "ynq?"
	}
	text := b.String()
	var ans byte
	for {
		var err error
		ans, err = t.con.Choose(ctx, text, prompt, keys, 0)
		switch {
		case errors.Is(err, errNoAnswer):
			t.closedInput(req.StepID)
			return approval.ApprovalDecision{Allow: false, Reason: err.Error()}, nil
		case err != nil:
			return approval.ApprovalDecision{}, err
		}
		if ans != '?' {
			break
		}
		text = ""
		t.con.Println(approvalKeys)
	}
	// The keys are the engine's four answers (approval.Answer), less
	// "always reject", plus q.
	answer, reason := approval.AnswerRejectOnce, "denied at the terminal"
	switch ans {
	case 'y':
		answer, reason = approval.AnswerAllowOnce, ""
	case 'a':
		answer, reason = approval.AnswerAllowAlways, ""
	case 'q':
		t.mu.Lock()
		t.rejectAll = true
		t.mu.Unlock()
		t.cancel(errQuit)
		reason = "run stopped at the terminal"
	}
	d, _ := approval.Answer(answer, reason)
	return d, nil
}

// Ask answers input steps and ask_user.
func (t *terminal) Ask(ctx context.Context, req engine.InputRequest) (ans string, err error) {
	t.queue.Lock()
	defer t.queue.Unlock()
	defer func() {
		if errors.Is(err, errNoAnswer) {
			t.closedInput(req.StepID)
		}
	}()
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
	t.queue.Lock()
	defer t.queue.Unlock()
	if t.stopped() {
		return engine.FailAbort, nil
	}
	text := fmt.Sprintf("%s step %s failed: %v", t.con.paint("31", "✗"), stepID, err)
	ans, perr := t.con.Choose(ctx, text, "[a]bort the run, [s]kip the step, [r]etry it?", "asr", 'a')
	if perr != nil {
		if errors.Is(perr, errNoAnswer) {
			t.closedInput(stepID)
		}
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
