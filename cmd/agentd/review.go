package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/workspace"
)

// The terminal's review of change sets: y/n/a/q per change set. What a
// decision does to the files is package review's, as for the editor.

// keepChanges makes the run's change sets and their review state recorded
// in the workspace's journal by the review book, as the editor server's
// are: `agentd runs RUN` and a daemon started later find them.
func (t *terminal) keepChanges(j *engine.Journal, stderr io.Writer) {
	t.book = review.NewBook()
	t.book.Keep(j, func(id string, err error) {
		fmt.Fprintf(stderr, "agentd run: warning: the review of change %s is not recorded in the journal: %v\n", id, err)
	})
}

// ReviewBefore shows the change set's diff and applies it if the user says so.
func (t *terminal) ReviewBefore(ctx context.Context, cs *workspace.ChangeSet) (*engine.ReviewOutcome, error) {
	t.mu.Lock()
	accept := t.yes || t.acceptAll
	t.mu.Unlock()
	text := t.renderChange(cs)
	decision, reason := review.Accept, ""
	if !accept {
		ans, err := t.con.Choose(ctx, text, "apply this change? [y]es [n]o [a]ll remaining [q]uit:", "ynaq", 0)
		switch {
		case errors.Is(err, errNoAnswer):
			decision, reason = review.Reject, err.Error()
		case err != nil:
			return nil, err
		case ans == 'n':
			r, err := t.con.Prompt(ctx, "", "reason (optional, Enter to skip):")
			if err != nil && !errors.Is(err, errNoAnswer) {
				return nil, err
			}
			decision, reason = review.Reject, r
		case ans == 'q':
			t.cancel()
			return &engine.ReviewOutcome{Aborted: true}, nil
		case ans == 'a':
			t.mu.Lock()
			t.acceptAll = true
			t.mu.Unlock()
		}
	} else if !t.quiet {
		t.con.Println(text)
	}
	return t.decide(ctx, cs, decision, reason)
}

// decide accepts or rejects the whole change set through the review model
// and reports conflicts (files changed meanwhile, left alone).
func (t *terminal) decide(ctx context.Context, cs *workspace.ChangeSet, action review.Action, reason string) (*engine.ReviewOutcome, error) {
	book := t.book
	if book == nil {
		book = review.NewBook()
	}
	set := review.New(cs, engine.ReviewBefore)
	book.Put(set)
	res, err := book.Resolve(ctx, review.Files{WS: t.ws}, set, []review.Decision{{Action: action}}, reason)
	if err != nil {
		return nil, err
	}
	for _, c := range res.Conflicts {
		t.con.Println(t.con.paint("31", "conflict: ") + c.Message)
	}
	var out *engine.ReviewOutcome
	book.Read(func() { out = set.Outcome() })
	return out, nil
}

// OfferAfter prints a change set that was applied already; it stays
// pending review in the journal (an editor can review it later).
func (t *terminal) OfferAfter(ctx context.Context, cs *workspace.ChangeSet) error {
	if t.book != nil {
		t.book.Put(review.New(cs, engine.ReviewAfter))
	}
	if !t.quiet {
		t.con.Println(t.renderChange(cs))
	}
	return nil
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
