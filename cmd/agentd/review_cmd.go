package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// newReviewCmd is "agentd review [RUN]": the change sets the journal holds
// still pending (a run with --review after, a run stopped at a prompt) are
// asked about at the terminal with the run's own keys, and decided through
// the same review book as the editors' (agentd/changes/resolve).
func newReviewCmd(a *app) *cobra.Command {
	var jc journalCmd
	cmd := &cobra.Command{
		Use:   "review [RUN]",
		Short: "review the change sets still pending (of RUN, or of every run)",
		Long: `Asks about every change set the workspace's journal holds still pending, oldest first:
those of a run with --review after (applied already: n takes a change out again), and those
a run stopped before deciding. The keys are the run's: y keeps (or applies) it, n takes it
out (or leaves it out), a does so for every later one, q stops and leaves the rest pending,
e edits it in $EDITOR, s decides hunk by hunk. The editors see the same decisions.`,
		Example: `  agentd run plan.json --review after --yes
  agentd review`,
		Args:              argsBetween(0, 1, "one run ID"),
		ValidArgsFunction: jc.completeRuns,
		RunE: a.action(func(cmd *cobra.Command, args []string) int {
			return cmdReview(a, &jc, firstArg(args))
		}),
	}
	jc.flags(cmd)
	cmd.Flags().Lookup("json").Hidden = true
	return cmd
}

// reviewQuestion is the prompt of agentd review: the run's keys; a set
// applied already is kept or taken out, one not applied is applied or not.
func reviewQuestion(mode engine.ReviewMode) string {
	if mode == engine.ReviewAfter {
		return "keep this change? [y]es [n]o, take it out [a]ll remaining [q]uit [e]dit [s]plit [?]help, then Enter:"
	}
	return "apply this change? [y]es [n]o [a]ll remaining [q]uit [e]dit [s]plit [?]help, then Enter:"
}

const reviewLaterKeys = `  y  keep it (review after: it is applied already) or apply it
  n  take it out of the files again (or do not apply it); you may give a reason
  a  the same as y for this and every later change set
  q  stop here: this and the later change sets stay pending for later
  e  open the change in $EDITOR as a patch; what you keep is what is written
  s  split: decide hunk by hunk, as git add -p
  ?  this help`

func cmdReview(a *app, jc *journalCmd, runArg string) int {
	j, ok := jc.open("review", a.stderr)
	if !ok {
		return exitFailed
	}
	runs, err := j.Runs()
	if err != nil {
		fmt.Fprintf(a.stderr, "agentd review: %v\n", err)
		return exitFailed
	}
	runID := ""
	if runArg != "" {
		st, ok := findRun(runs, runArg, "review", jc, a.stderr)
		if !ok {
			return exitUsage
		}
		runID = st.RunID
	}
	ws, err := workspace.Open(jc.root, workspace.Options{})
	if err != nil {
		fmt.Fprintf(a.stderr, "agentd review: workspace %s: %v\n", jc.root, err)
		return exitFailed
	}
	defer ws.Close()
	book := session.NewBook(j, func(id string, err error) {
		fmt.Fprintf(a.stderr, "agentd review: warning: the review of change %s is not recorded in the journal: %v\n", id, err)
	})
	defer book.Close()
	// What a decision writes is its run's edit, recorded for undo as in the run.
	if closeStore, err := session.RecordBookEdits(a.ctx, book, ws, jc.w.stateDir); err == nil {
		defer closeStore()
	} else {
		fmt.Fprintf(a.stderr, "agentd review: warning: the snapshot store cannot be opened (%v); what you accept now cannot be undone\n", err)
	}
	if _, err := book.Load(); err != nil {
		fmt.Fprintf(a.stderr, "agentd review: %v\n", err)
	}
	// Every pending set, a running or paused run's too (as the editors
	// decide them): the run asking about one hears of the decision
	// through the journal, and a prompt here about a set the run (or an
	// editor) decides meanwhile moves on.
	var todo []*review.Set
	sets := book.List()
	book.Read(func() {
		for _, s := range sets {
			if (runID != "" && s.RunID != runID) || s.Counts().Pending == 0 {
				continue
			}
			todo = append(todo, s)
		}
	})
	if len(todo) == 0 {
		what := "no change set is pending in this workspace's journal"
		if runID != "" {
			what = "no change set of run " + runID + " is pending"
		}
		fmt.Fprintln(a.stdout, what)
		return exitOK
	}
	con := newConsole(a.stdout, stdin)
	stop := func(error) {}
	t := &terminal{con: con, ws: ws, book: book, cancel: stop}
	con.Println(fmt.Sprintf("%d change set%s pending", len(todo), plural(len(todo))))
	all := false
	for i, s := range todo {
		var cs *workspace.ChangeSet
		var mode engine.ReviewMode
		book.Read(func() { cs, mode = s.PendingChange(), s.Review })
		text := fmt.Sprintf("(%d/%d, run %s)\n%s", i+1, len(todo), orDash(s.RunID), t.renderChange(cs))
		if all {
			con.Println(text)
			t.resolveRecorded(a.ctx, s, []review.Decision{{Action: review.Accept}}, "")
			continue
		}
		if !t.pending(s) {
			continue // decided in another process since
		}
		askCtx, stopWatch := t.watchDecided(a.ctx, s)
		code, done := t.reviewOne(a, jc, askCtx, s, text, mode, len(todo)-i, &all)
		stopWatch()
		if errors.Is(context.Cause(askCtx), errDecidedElsewhere) {
			var st string
			book.Read(func() { st = s.Status() })
			con.Println(fmt.Sprintf("%s change %s was decided in another agentd process: %s", con.paint("36", "~"), s.ID, st))
			continue
		}
		if done {
			return code
		}
	}
	con.Println("every pending change set is decided")
	return exitOK
}

// reviewOne asks about one recorded set until it is decided (done false),
// or the review ends (done true, with the exit code): q, stdin closed,
// Ctrl-C. left is the number of sets not decided yet, this one included.
func (t *terminal) reviewOne(a *app, jc *journalCmd, ctx context.Context, s *review.Set, text string, mode engine.ReviewMode, left int, all *bool) (code int, done bool) {
	con, book := t.con, t.book
	for {
		ans, err := con.Choose(ctx, text, reviewQuestion(mode), "ynaqes?", 0)
		text = ""
		switch {
		case errors.Is(err, errNoAnswer):
			fmt.Fprintf(a.stderr, "agentd review: standard input is closed; %d change set%s left pending (review them on a terminal: %s)\n",
				left, plural(left), jc.hint("review"))
			return exitUsage, true
		case err != nil:
			return exitCancelled, true
		}
		asNow := func() {
			var cs *workspace.ChangeSet
			book.Read(func() { cs = s.PendingChange() })
			text = fmt.Sprintf("(as it is now)\n%s", t.renderChange(cs))
		}
		switch ans {
		case 'y':
			t.resolveRecorded(a.ctx, s, []review.Decision{{Action: review.Accept}}, "")
		case 'a':
			*all = true
			t.resolveRecorded(a.ctx, s, []review.Decision{{Action: review.Accept}}, "")
		case 'n':
			r, err := con.Prompt(ctx, "", "reason (optional, Enter to skip):")
			if err != nil && !errors.Is(err, errNoAnswer) {
				return exitCancelled, true
			}
			if r == "" {
				r = "rejected at the terminal (agentd review)"
			}
			t.resolveRecorded(a.ctx, s, []review.Decision{{Action: review.Reject}}, r)
		case 'q':
			con.Println(fmt.Sprintf("%d change set%s left pending; review later with: %s", left, plural(left), jc.hint("review")))
			return exitOK, true
		case 's':
			if _, err := t.splitSet(ctx, s, s.StepID); err != nil {
				if errors.Is(err, errNoAnswer) || ctx.Err() != nil {
					continue // asked again: says what is left pending, or ends
				}
				con.Println(con.paint("31", "review: ") + err.Error())
				// Decided elsewhere meanwhile (the book took its state):
				// ask again about what is still pending.
				if t.askAgain(err, s) {
					asNow()
					continue
				}
			}
			if t.pending(s) {
				asNow()
				continue
			}
		case 'e':
			if err := t.edit(a.ctx, s, "", ""); err != nil {
				con.Println(con.paint("31", "edit: ") + err.Error())
				if t.askAgain(err, s) {
					asNow()
				}
				continue
			}
			var st string
			book.Read(func() { st = s.Status() })
			con.Println(fmt.Sprintf("%s change %s: %s", con.paint("36", "~"), s.ID, st))
		case '?':
			con.Println(reviewLaterKeys)
			continue
		}
		return 0, false
	}
}

// resolveRecorded decides a recorded set through the review book.
func (t *terminal) resolveRecorded(ctx context.Context, s *review.Set, d []review.Decision, reason string) {
	res, err := t.book.Resolve(ctx, review.Files{WS: t.ws}, s, d, reason)
	if err != nil {
		t.con.Println(t.con.paint("31", "review: ") + err.Error())
		return
	}
	for _, c := range res.Conflicts {
		t.con.Println(t.con.paint("31", "conflict: ") + c.Path + ": " + c.Message)
	}
	var st string
	t.book.Read(func() { st = s.Status() })
	t.con.Println(fmt.Sprintf("%s change %s: %s", t.con.paint("36", "~"), s.ID, st))
}

func pluralS(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}
