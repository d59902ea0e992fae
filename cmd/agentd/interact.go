package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/engine"
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

// ReviewBefore shows the change set's diff and applies it if the user says so.
func (t *terminal) ReviewBefore(ctx context.Context, cs *workspace.ChangeSet) (*engine.ReviewOutcome, error) {
	t.mu.Lock()
	accept := t.yes || t.acceptAll
	t.mu.Unlock()
	text := t.renderChange(cs)
	if !accept {
		ans, err := t.con.Choose(ctx, text, "apply this change? [y]es [n]o [a]ll remaining [q]uit:", "ynaq", 0)
		if errors.Is(err, errNoAnswer) {
			return t.reject(cs, err.Error()), nil
		}
		if err != nil {
			return nil, err
		}
		switch ans {
		case 'n':
			reason, err := t.con.Prompt(ctx, "", "reason (optional, Enter to skip):")
			if err != nil && !errors.Is(err, errNoAnswer) {
				return nil, err
			}
			return t.reject(cs, reason), nil
		case 'q':
			t.cancel()
			return &engine.ReviewOutcome{Aborted: true}, nil
		case 'a':
			t.mu.Lock()
			t.acceptAll = true
			t.mu.Unlock()
		}
	} else if !t.quiet {
		t.con.Println(text)
	}
	return t.apply(ctx, cs)
}

// OfferAfter prints a change set that was applied already.
func (t *terminal) OfferAfter(ctx context.Context, cs *workspace.ChangeSet) error {
	if !t.quiet {
		t.con.Println(t.renderChange(cs))
	}
	return nil
}

func (t *terminal) apply(ctx context.Context, cs *workspace.ChangeSet) (*engine.ReviewOutcome, error) {
	res, err := t.ws.Apply(ctx, cs, nil, nil)
	if err != nil {
		return nil, err
	}
	out := &engine.ReviewOutcome{}
	conflicted := map[string]bool{}
	for _, c := range res.Conflicts {
		conflicted[c.Path] = true
		out.Conflicts = append(out.Conflicts, c.Path)
		t.con.Println(t.con.paint("31", "conflict: ") + c.Error())
	}
	for _, f := range cs.Files {
		if conflicted[f.Path] {
			continue
		}
		ids := hunkIDs(f)
		if len(ids) == 0 {
			ids = []string{f.Path}
		}
		out.Applied = append(out.Applied, ids...)
	}
	return out, nil
}

func (t *terminal) reject(cs *workspace.ChangeSet, reason string) *engine.ReviewOutcome {
	out := &engine.ReviewOutcome{}
	for _, f := range cs.Files {
		ids := hunkIDs(f)
		if len(ids) == 0 {
			ids = []string{""}
		}
		for _, id := range ids {
			out.Rejected = append(out.Rejected, engine.HunkRejection{Path: f.Path, HunkID: id, Reason: reason})
		}
	}
	return out
}

func hunkIDs(f *workspace.FileChange) []string {
	if f.Diff == nil {
		return nil
	}
	ids := make([]string, 0, len(f.Diff.Hunks))
	for _, h := range f.Diff.Hunks {
		ids = append(ids, h.ID)
	}
	return ids
}

// renderChange renders a change set as a coloured unified diff.
func (t *terminal) renderChange(cs *workspace.ChangeSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s change %s from step %s:\n", t.con.paint("36", "~"), cs.ID, cs.StepID)
	for _, f := range cs.Files {
		switch {
		case f.Op == workspace.OpMove && (f.Diff == nil || len(f.Diff.Hunks) == 0):
			fmt.Fprintf(&b, "move %s -> %s\n", f.OldPath, f.Path)
			continue
		case f.Diff == nil:
			fmt.Fprintf(&b, "%s %s\n", f.Op, f.Path)
			continue
		}
		for _, line := range strings.SplitAfter(diff.Unified(f.Diff), "\n") {
			if line == "" {
				continue
			}
			switch {
			case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"), strings.HasPrefix(line, "diff "):
				line = t.con.paint("1", strings.TrimSuffix(line, "\n")) + "\n"
			case strings.HasPrefix(line, "+"):
				line = t.con.paint("32", strings.TrimSuffix(line, "\n")) + "\n"
			case strings.HasPrefix(line, "-"):
				line = t.con.paint("31", strings.TrimSuffix(line, "\n")) + "\n"
			case strings.HasPrefix(line, "@@"):
				line = t.con.paint("36", strings.TrimSuffix(line, "\n")) + "\n"
			}
			b.WriteString(line)
		}
	}
	return strings.TrimRight(b.String(), "\n")
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
