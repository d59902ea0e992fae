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
func (t *terminal) keepChanges(book *review.Book, stderr io.Writer) {
	t.book = book
	if j := book.Journal(); j != nil {
		book.Keep(j, func(id string, err error) {
			fmt.Fprintf(stderr, "agentd run: warning: the review of change %s is not recorded in the journal: %v\n", id, err)
		})
	}
}

// reviewKeys is what "?" prints at a review prompt.
const reviewKeys = `  y  apply this change set
  n  do not apply it (you may give a reason; the step is skipped)
  a  apply this and every later change set of the run, from any step
  q  do not apply this or any later change set, and cancel the run
  e  open the change in $EDITOR as a patch; what you keep is applied
  s  split: decide hunk by hunk, as git add -p
  ?  this help`

// ReviewBefore shows the change set's diff and applies it if the user says
// so. Reviews from parallel steps wait in one queue: one prompt at a time,
// each after the events that led to it, and "a" or "q" settle the rest.
func (t *terminal) ReviewBefore(ctx context.Context, cs *workspace.ChangeSet) (*engine.ReviewOutcome, error) {
	t.queue.Lock()
	defer t.queue.Unlock()
	t.mu.Lock()
	accept, reject := t.yes || t.acceptAll, t.rejectAll || t.noInput != ""
	t.mu.Unlock()
	if reject {
		return t.decide(ctx, cs, []review.Decision{{Action: review.Reject}}, "the run was stopped at the terminal")
	}
	t.shown(ctx, shownKey("change", cs.ID), 1)
	text := t.renderChange(cs)
	if accept {
		if !t.quiet {
			t.con.Println(text)
		}
		return t.decide(ctx, cs, []review.Decision{{Action: review.Accept}}, "")
	}
	for {
		ans, err := t.con.Choose(ctx, text, "apply this change? [y]es [n]o [a]ll remaining [q]uit [e]dit [s]plit [?]help, then Enter:", "ynaqes?", 0)
		text = ""
		switch {
		case errors.Is(err, errNoAnswer):
			t.closedInput(cs.StepID)
			return t.decide(ctx, cs, []review.Decision{{Action: review.Reject}}, err.Error())
		case err != nil:
			return nil, err
		}
		switch ans {
		case 'y':
			return t.decide(ctx, cs, []review.Decision{{Action: review.Accept}}, "")
		case 'n':
			r, err := t.con.Prompt(ctx, "", "reason (optional, Enter to skip):")
			if err != nil && !errors.Is(err, errNoAnswer) {
				return nil, err
			}
			return t.decide(ctx, cs, []review.Decision{{Action: review.Reject}}, r)
		case 'a':
			t.mu.Lock()
			t.acceptAll = true
			t.mu.Unlock()
			return t.decide(ctx, cs, []review.Decision{{Action: review.Accept}}, "")
		case 'q':
			t.mu.Lock()
			t.rejectAll = true
			t.mu.Unlock()
			t.cancel(errQuit)
			out, err := t.decide(ctx, cs, []review.Decision{{Action: review.Reject}}, "the run was stopped at the terminal")
			if out != nil {
				out.Aborted = true
			}
			return out, err
		case 's':
			return t.split(ctx, cs)
		case 'e':
			out, err := t.edit(ctx, cs)
			if err == nil {
				return out, nil
			}
			t.con.Println(t.con.paint("31", "edit: ") + err.Error())
		case '?':
			t.con.Println(reviewKeys)
		}
	}
}

// split asks about each unit (hunk, or whole file) of the change set, as
// git add -p does, then applies the decisions through the review core.
func (t *terminal) split(ctx context.Context, cs *workspace.ChangeSet) (*engine.ReviewOutcome, error) {
	return t.splitSet(ctx, review.New(cs, engine.ReviewBefore), cs.StepID)
}

// splitSet asks about each pending unit of set (agentd review finishes a
// set some of whose units were decided already) and resolves them.
func (t *terminal) splitSet(ctx context.Context, set *review.Set, stepID string) (*engine.ReviewOutcome, error) {
	var units []review.Unit
	t.bookRead(func() {
		for _, u := range set.Units() {
			if u.Status() == review.Pending {
				units = append(units, u)
			}
		}
	})
	var decisions []review.Decision
	rest := review.Action("")
	for i, u := range units {
		act := rest
		for act == "" {
			ans, err := t.con.Choose(ctx, t.renderUnit(u, i+1, len(units)),
				fmt.Sprintf("apply this hunk (%d/%d)? [y]es [n]o [a]ll the rest [d]rop the rest [?]help, then Enter:", i+1, len(units)), "ynad?", 0)
			if errors.Is(err, errNoAnswer) {
				t.closedInput(stepID)
				ans = 'd'
			} else if err != nil {
				return nil, err
			}
			switch ans {
			case 'y':
				act = review.Accept
			case 'n':
				act = review.Reject
			case 'a':
				act, rest = review.Accept, review.Accept
			case 'd':
				act, rest = review.Reject, review.Reject
			case '?':
				t.con.Println("  y  apply this hunk\n  n  leave it out\n  a  apply this and the rest of the change set\n  d  leave out this and the rest\n  ?  this help")
			}
		}
		decisions = append(decisions, review.Decision{Path: u.F.Path, HunkID: u.ID(), Action: act})
	}
	return t.resolve(ctx, set, decisions, "left out at the terminal")
}

// bookRead reads sets' state under the book's lock (set by a review of
// recorded sets; a set of this run is not shared yet).
func (t *terminal) bookRead(f func()) {
	if t.book != nil {
		t.book.Read(f)
		return
	}
	f()
}

// renderUnit shows one hunk (or a whole-file change) of a split review.
func (t *terminal) renderUnit(u review.Unit, i, n int) string {
	head := t.con.paint("36", fmt.Sprintf("~ %s (%d/%d)", u.F.Path, i, n))
	if u.H == nil {
		return fmt.Sprintf("%s: %s %s", head, u.F.Op, u.F.Path)
	}
	fd := &diff.FileDiff{OldPath: u.F.Path, NewPath: u.F.Path, Hunks: []diff.Hunk{u.H.Hunk}}
	return head + "\n" + t.paintDiff(diff.Unified(fd))
}

// decide accepts or rejects the whole change set through the review model
// and reports conflicts (files changed meanwhile, left alone).
func (t *terminal) decide(ctx context.Context, cs *workspace.ChangeSet, decisions []review.Decision, reason string) (*engine.ReviewOutcome, error) {
	return t.resolve(ctx, review.New(cs, engine.ReviewBefore), decisions, reason)
}

// resolve applies decisions on set through the review core, and reports
// conflicts (files changed meanwhile, left alone).
func (t *terminal) resolve(ctx context.Context, set *review.Set, decisions []review.Decision, reason string) (*engine.ReviewOutcome, error) {
	book := t.book
	book.Put(set)
	res, err := book.Resolve(ctx, review.Files{WS: t.ws}, set, decisions, reason)
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

// OfferAfter prints a change set that was applied already.
func (t *terminal) OfferAfter(ctx context.Context, cs *workspace.ChangeSet) error {
	if t.book != nil {
		t.book.Put(review.New(cs, engine.ReviewAfter))
	}
	if !t.quiet {
		// After what led to it, as a review prompt would be.
		t.shown(ctx, shownKey("change", cs.ID), 1)
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
		b.WriteString(t.paintDiff(diff.Unified(f.Diff)))
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// paintDiff colours a unified diff.
func (t *terminal) paintDiff(u string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(u, "\n") {
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
	return strings.TrimRight(b.String(), "\n")
}
