package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/gitops"
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
	active := map[string]engine.RunStatus{}
	for _, st := range runs {
		if st.Status == engine.RunRunning || st.Status == engine.RunPaused {
			active[st.RunID] = st.Status
		}
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
	stateDir := jc.w.stateDir
	if stateDir == "" {
		stateDir = gitops.DefaultStateDir()
	}
	if store, err := gitops.Open(a.ctx, ws, gitops.Options{StateDir: stateDir, MaxFileSize: ws.MaxFileSize()}); err == nil {
		defer store.Close()
		book.RecordEdits(engine.LedgerRecorder(engine.StoreLedger(func() (*gitops.Store, error) { return store, nil })))
	} else {
		fmt.Fprintf(a.stderr, "agentd review: warning: the snapshot store cannot be opened (%v); what you accept now cannot be undone\n", err)
	}
	if _, err := book.Load(); err != nil {
		fmt.Fprintf(a.stderr, "agentd review: %v\n", err)
	}
	var todo []*review.Set
	skipped := 0
	sets := book.List()
	book.Read(func() {
		for _, s := range sets {
			if (runID != "" && s.RunID != runID) || s.Counts().Pending == 0 {
				continue
			}
			// A run still going asks about its own unapplied sets.
			if _, busy := active[s.RunID]; busy && s.Review == engine.ReviewBefore {
				skipped++
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
		if skipped > 0 {
			what += fmt.Sprintf(" (%d wait%s for an answer in the run still going)", skipped, pluralS(skipped))
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
	ask:
		for {
			ans, err := con.Choose(a.ctx, text, reviewQuestion(mode), "ynaqes?", 0)
			text = ""
			switch {
			case errors.Is(err, errNoAnswer):
				fmt.Fprintf(a.stderr, "agentd review: standard input is closed; %d change set%s left pending (review them on a terminal: %s)\n",
					len(todo)-i, plural(len(todo)-i), jc.hint("review"))
				return exitUsage
			case err != nil:
				return exitCancelled
			}
			switch ans {
			case 'y':
				t.resolveRecorded(a.ctx, s, []review.Decision{{Action: review.Accept}}, "")
			case 'a':
				all = true
				t.resolveRecorded(a.ctx, s, []review.Decision{{Action: review.Accept}}, "")
			case 'n':
				r, err := con.Prompt(a.ctx, "", "reason (optional, Enter to skip):")
				if err != nil && !errors.Is(err, errNoAnswer) {
					return exitCancelled
				}
				if r == "" {
					r = "rejected at the terminal (agentd review)"
				}
				t.resolveRecorded(a.ctx, s, []review.Decision{{Action: review.Reject}}, r)
			case 'q':
				n := len(todo) - i
				con.Println(fmt.Sprintf("%d change set%s left pending; review later with: %s", n, plural(n), jc.hint("review")))
				return exitOK
			case 's':
				if _, err := t.splitSet(a.ctx, s, s.StepID); err != nil {
					con.Println(con.paint("31", "review: ") + err.Error())
					// Decided elsewhere meanwhile (the book took its state):
					// ask again about what is still pending.
					var changed *review.ChangedError
					pending := false
					book.Read(func() { pending = s.Counts().Pending > 0; cs = s.PendingChange() })
					if errors.As(err, &changed) && pending {
						text = fmt.Sprintf("(%d/%d, run %s, as it is now)\n%s", i+1, len(todo), orDash(s.RunID), t.renderChange(cs))
						continue
					}
				}
			case 'e':
				if err := t.editRecorded(a.ctx, s, cs); err != nil {
					con.Println(con.paint("31", "edit: ") + err.Error())
					continue
				}
			case '?':
				con.Println(reviewLaterKeys)
				continue
			}
			break ask
		}
	}
	con.Println("every pending change set is decided")
	return exitOK
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

// editRecorded is "e" on a recorded set: a set applied already (review
// after) is taken out first, so the edited version is written onto the
// file as it was before the change; then the edit goes as at a run.
func (t *terminal) editRecorded(ctx context.Context, s *review.Set, cs *workspace.ChangeSet) error {
	var mode engine.ReviewMode
	t.book.Read(func() { mode = s.Review })
	if mode == engine.ReviewAfter {
		res, err := t.book.Resolve(ctx, review.Files{WS: t.ws}, s, []review.Decision{{Action: review.Reject}}, "replaced by an edit at the terminal")
		if err != nil {
			return err
		}
		if len(res.Conflicts) > 0 {
			return fmt.Errorf("%s: %s (the change stays as it is)", res.Conflicts[0].Path, res.Conflicts[0].Message)
		}
	}
	if _, err := t.edit(ctx, cs); err != nil {
		if mode == engine.ReviewAfter {
			// Nothing is lost: the change goes back in as it was.
			var d []review.Decision
			t.book.Read(func() {
				for _, u := range s.Units() {
					if u.Status() == review.Rejected {
						d = append(d, review.Decision{Path: u.F.Path, HunkID: u.ID(), Action: review.Accept})
					}
				}
			})
			if _, rerr := t.book.Resolve(ctx, review.Files{WS: t.ws}, s, d, ""); rerr != nil {
				return fmt.Errorf("%v; and putting the change back failed: %v", err, rerr)
			}
			return fmt.Errorf("%v; the change is kept as it was", err)
		}
		return err
	}
	return nil
}

func pluralS(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}
