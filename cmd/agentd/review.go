package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/rpc"
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
//
// The set is in the review book (and so in the journal, pending) from the
// moment it is asked about: a prompt that ends without an answer (Ctrl-C,
// stdin closed, the process killed) leaves it pending for agentd review or
// an editor, and a decision another process makes meanwhile (agentd review,
// an editor) ends the prompt with that decision.
func (t *terminal) ReviewBefore(ctx context.Context, cs *workspace.ChangeSet) (*engine.ReviewOutcome, error) {
	t.queue.Lock()
	defer t.queue.Unlock()
	t.mu.Lock()
	accept, rejectAll, noInput := t.yes || t.acceptAll, t.rejectAll, t.noInput != ""
	t.mu.Unlock()
	set := review.New(cs, engine.ReviewBefore)
	t.book.Put(set)
	switch {
	case rejectAll:
		return t.resolve(ctx, set, []review.Decision{{Action: review.Reject}}, "the run was stopped at the terminal")
	case noInput:
		return nil, errNoAnswer // left pending
	}
	t.shown(ctx, shownKey("change", cs.ID), 1)
	text := t.renderChange(cs)
	if accept {
		if !t.quiet {
			t.con.Println(text)
		}
		return t.resolve(ctx, set, []review.Decision{{Action: review.Accept}}, "")
	}
	askCtx, stop := t.watchDecided(ctx, set)
	defer stop()
	elsewhere := func() (*engine.ReviewOutcome, bool) {
		if !errors.Is(context.Cause(askCtx), errDecidedElsewhere) {
			return nil, false
		}
		var out *engine.ReviewOutcome
		var st string
		t.book.Read(func() { out, st = set.Outcome(), set.Status() })
		t.con.Println(fmt.Sprintf("%s change %s was decided in another agentd process: %s", t.con.paint("36", "~"), cs.ID, st))
		return out, true
	}
	for {
		ans, err := t.con.Choose(askCtx, text, "apply this change? [y]es [n]o [a]ll remaining [q]uit [e]dit [s]plit [?]help, then Enter:", "ynaqes?", 0)
		text = ""
		switch {
		case errors.Is(err, errNoAnswer):
			t.closedInput(cs.StepID)
			return nil, err // left pending
		case err != nil:
			if out, ok := elsewhere(); ok {
				return out, nil
			}
			return nil, err // left pending
		}
		switch ans {
		case 'y':
			return t.resolve(ctx, set, []review.Decision{{Action: review.Accept}}, "")
		case 'n':
			r, err := t.con.Prompt(askCtx, "", "reason (optional, Enter to skip):")
			if err != nil && !errors.Is(err, errNoAnswer) {
				if out, ok := elsewhere(); ok {
					return out, nil
				}
				return nil, err
			}
			return t.resolve(ctx, set, []review.Decision{{Action: review.Reject}}, r)
		case 'a':
			t.mu.Lock()
			t.acceptAll = true
			t.mu.Unlock()
			return t.resolve(ctx, set, []review.Decision{{Action: review.Accept}}, "")
		case 'q':
			t.mu.Lock()
			t.rejectAll = true
			t.mu.Unlock()
			t.cancel(errQuit)
			out, err := t.resolve(ctx, set, []review.Decision{{Action: review.Reject}}, "the run was stopped at the terminal")
			if out != nil {
				out.Aborted = true
			}
			return out, err
		case 's':
			out, err := t.splitSet(askCtx, set, cs.StepID)
			if o, ok := elsewhere(); ok {
				return o, nil
			}
			if err == nil || !t.askAgain(err, set) {
				return out, err
			}
			t.book.Read(func() { text = t.renderChange(set.PendingChange()) })
		case 'e':
			if err := t.edit(ctx, set, "", ""); err != nil {
				t.con.Println(t.con.paint("31", "edit: ") + err.Error())
				t.askAgain(err, set)
				t.book.Read(func() { text = t.renderChange(set.PendingChange()) })
				continue
			}
			if p := t.pending(set); p {
				t.book.Read(func() { text = t.renderChange(set.PendingChange()) })
				continue
			}
			var out *engine.ReviewOutcome
			t.book.Read(func() { out = set.Outcome() })
			return out, nil
		case '?':
			t.con.Println(reviewKeys)
		}
	}
}

// errDecidedElsewhere ends a prompt whose set another agentd process
// decided meanwhile.
var errDecidedElsewhere = errors.New("decided in another agentd process")

// watchDecided returns a context for the prompts about set that ends
// (cause errDecidedElsewhere) when nothing of set is pending any more:
// another process decided it. It looks at the journal as often as an
// editor's daemon does (rpc.ChangesSyncInterval).
func (t *terminal) watchDecided(ctx context.Context, set *review.Set) (context.Context, func()) {
	askCtx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(rpc.ChangesSyncInterval)
		defer tick.Stop()
		for {
			select {
			case <-askCtx.Done():
				return
			case <-tick.C:
			}
			// Only another process's record comes back from Sync (the
			// book's own saves do not): this prompt's own decision never
			// reads as one made elsewhere.
			synced, _ := t.book.Sync()
			for _, sy := range synced {
				if sy.Set == set && !t.pending(set) {
					cancel(errDecidedElsewhere)
					return
				}
			}
		}
	}()
	return askCtx, func() { cancel(nil); <-done }
}

// pending reports whether some unit of set is still pending.
func (t *terminal) pending(set *review.Set) bool {
	p := false
	t.bookRead(func() { p = set.Counts().Pending > 0 })
	return p
}

// askAgain reports whether err is a decision refused because another
// process decided part of set meanwhile, with something still pending:
// the prompt asks again about what is pending now.
func (t *terminal) askAgain(err error, set *review.Set) bool {
	var changed *review.ChangedError
	return errors.As(err, &changed) && t.pending(set)
}

// splitSet asks about each pending unit of set, as git add -p does (agentd
// review finishes a set some of whose units were decided already), and
// resolves the answers. e edits the hunk in $EDITOR and decides it at once.
// When stdin closes, the hunks answered are decided and the rest stays
// pending (errNoAnswer, or the outcome if something was decided); when ctx
// ends, nothing is decided.
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
	edited := false
	rest := review.Action("")
	closed := error(nil)
units:
	for i, u := range units {
		act := rest
		for act == "" {
			ans, err := t.con.Choose(ctx, t.renderUnit(u, i+1, len(units)),
				fmt.Sprintf("apply this hunk (%d/%d)? [y]es [n]o [a]ll the rest [d]rop the rest [e]dit [?]help, then Enter:", i+1, len(units)), "ynade?", 0)
			if errors.Is(err, errNoAnswer) {
				t.closedInput(stepID)
				closed = err
				break units
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
			case 'e':
				if err := t.edit(ctx, set, u.F.Path, u.ID()); err != nil {
					t.con.Println(t.con.paint("31", "edit: ") + err.Error())
					var ee *review.EditError
					if errors.As(err, &ee) {
						continue
					}
					return nil, err
				}
				edited = true
				continue units
			case '?':
				t.con.Println("  y  apply this hunk\n  n  leave it out\n  a  apply this and the rest of the change set\n  d  leave out this and the rest\n  e  edit this hunk in $EDITOR; what you keep is applied\n  ?  this help")
			}
		}
		decisions = append(decisions, review.Decision{Path: u.F.Path, HunkID: u.ID(), Action: act})
	}
	if closed != nil && len(decisions) == 0 && !edited {
		return nil, closed // left pending
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

// resolve applies decisions on set (in the book) through the review core,
// and reports conflicts (files changed meanwhile, left alone).
func (t *terminal) resolve(ctx context.Context, set *review.Set, decisions []review.Decision, reason string) (*engine.ReviewOutcome, error) {
	book := t.book
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
