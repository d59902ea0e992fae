package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// journalCmd is what agentd rules and agentd runs share (the duplicate
// flag and journal blocks they had): --workspace, --state-dir, --json, and
// the journal of that workspace, the one the editor server, agentd acp and
// agentd run keep.
type journalCmd struct {
	w       wsFlags
	jsonOut bool
	root    string // the workspace's root, once open
}

func (jc *journalCmd) flags(cmd *cobra.Command) {
	addWSFlags(cmd.Flags(), &jc.w)
	cmd.Flags().BoolVar(&jc.jsonOut, "json", false, "print JSON")
	completeDirs(cmd, "workspace", "state-dir")
}

// open opens the journal; on failure it prints why (as agentd CMD).
func (jc *journalCmd) open(cmd string, stderr io.Writer) (*engine.Journal, bool) {
	if !checkPlaces(cmd, jc.w.dir, jc.w.stateDir, jc.w.allowBroad, stderr) {
		return nil, false
	}
	ws, err := workspace.Open(jc.w.dir, workspace.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "agentd %s: workspace %s: %v\n", cmd, jc.w.dir, err)
		return nil, false
	}
	jc.root = ws.Root()
	ws.Close()
	j, err := session.OpenJournal(jc.w.stateDir, jc.root, nil)
	if err != nil {
		fmt.Fprintf(stderr, "agentd %s: %v\n", cmd, err)
		return nil, false
	}
	return j, true
}

// hint is a pasteable agentd command on this journal's workspace.
func (jc *journalCmd) hint(args ...string) string {
	return hintCommand(jc.root, jc.w.stateDir, args...)
}

func writeJSON(w io.Writer, v any) {
	enc := newJSONEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// newRulesCmd lists and revokes remembered approval rules ("always"
// answers), shared by the terminal and the editors.
func newRulesCmd(a *app) *cobra.Command {
	group := groupCmd(a, "rules", "list or revoke remembered approval rules")
	group.Long = `Approval rules are the "always" answers given in the terminal or an editor; they apply to
every front end on the same workspace.`
	var lj journalCmd
	list := &cobra.Command{
		Use:   "list",
		Short: "list the remembered approval rules",
		Args:  noArgs,
		RunE: a.action(func(cmd *cobra.Command, args []string) int {
			j, ok := lj.open("rules list", a.stderr)
			if !ok {
				return exitFailed
			}
			return listRules(j, lj.jsonOut, a.stdout, a.stderr)
		}),
	}
	lj.flags(list)
	var rj journalCmd
	revoke := &cobra.Command{
		Use:   "revoke RULE-ID...",
		Short: "forget remembered approval rules",
		Args:  argsBetween(1, 1<<30, "the rule IDs to revoke (agentd rules list shows them)"),
		RunE: a.action(func(cmd *cobra.Command, args []string) int {
			j, ok := rj.open("rules revoke", a.stderr)
			if !ok {
				return exitFailed
			}
			if err := session.Revoke(j, args...); err != nil {
				fmt.Fprintf(a.stderr, "agentd rules revoke: %v; nothing was revoked (%s lists the rules)\n", err, rj.hint("rules", "list"))
				return exitFailed
			}
			fmt.Fprintf(a.stdout, "revoked %s\n", strings.Join(args, ", "))
			return exitOK
		}),
	}
	rj.flags(revoke)
	revoke.Flags().Lookup("json").Hidden = true
	group.AddCommand(list, revoke)
	return group
}

func listRules(j *engine.Journal, jsonOut bool, stdout, stderr io.Writer) int {
	rules, err := j.Rules().List()
	if err != nil {
		fmt.Fprintf(stderr, "agentd rules list: %v\n", err)
		return exitFailed
	}
	if jsonOut {
		writeJSON(stdout, rules)
		return exitOK
	}
	if len(rules) == 0 {
		fmt.Fprintln(stdout, "no remembered approval rules")
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tANSWER\tCATEGORY\tTOOL\tCOMMAND\tCREATED")
	for _, r := range rules {
		ans := "reject"
		if r.Allow {
			ans = "allow"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, ans, r.Category, orDash(r.Tool), orDash(r.Command), r.CreatedAt.Local().Format(time.DateTime))
	}
	tw.Flush()
	return exitOK
}

// newRunsCmd lists the workspace's past runs (from the editor and the
// terminal alike), or prints one run's summary.
func newRunsCmd(a *app) *cobra.Command {
	var jc journalCmd
	cmd := &cobra.Command{
		Use:               "runs [RUN]",
		Short:             "list the workspace's past runs, or show one's summary",
		Args:              argsBetween(0, 1, "one run ID"),
		ValidArgsFunction: jc.completeRuns,
		RunE: a.action(func(cmd *cobra.Command, args []string) int {
			return cmdRuns(a, &jc, args, a.stdout, a.stderr)
		}),
	}
	jc.flags(cmd)
	return cmd
}

func cmdRuns(a *app, jc *journalCmd, args []string, stdout, stderr io.Writer) int {
	j, ok := jc.open("runs", stderr)
	if !ok {
		return exitFailed
	}
	if ps, _ := j.PendingRestores(); len(ps) > 0 {
		// An undo or a restore was under way (or was killed): opening
		// the store recovers it and settles the journal's record of it,
		// and says so first, so that the list tells whether its run is
		// undone.
		sc := &snapCmd{a: a, name: "runs", w: jc.w}
		if _, code := sc.open(); code == exitOK {
			sc.sess.Close()
		}
	}
	runs, err := j.Runs()
	if err != nil {
		fmt.Fprintf(stderr, "agentd runs: %v\n", err)
		return exitFailed
	}
	if len(args) == 1 {
		st, ok := findRun(runs, args[0], "runs", jc, stderr)
		if !ok {
			return exitFailed
		}
		if jc.jsonOut {
			writeJSON(stdout, st)
			return exitOK
		}
		sum := st.Summary
		if sum == "" {
			sum = engine.Summary(st.FinalPlan, *st)
		}
		fmt.Fprint(stdout, sum)
		printChangeSets(stdout, j, st.RunID)
		return exitOK
	}
	if jc.jsonOut {
		for i := range runs {
			runs[i].Steps, runs[i].OriginalPlan, runs[i].FinalPlan = nil, nil, nil
		}
		if runs == nil {
			runs = []engine.RunState{}
		}
		writeJSON(stdout, runs)
		return exitOK
	}
	if len(runs) == 0 {
		fmt.Fprintln(stdout, "no runs recorded for this workspace")
		return exitOK
	}
	sets, _ := review.Recorded(j.Journal, "") // unreadable: no pending counts (agentd runs RUN says why)
	pending := pendingSets(sets, "")
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATUS\tSTARTED\tSTEPS\tSUMMARY")
	for _, st := range runs {
		status := string(st.Status)
		if u := st.Undone; u != nil {
			status += ", undone"
			if n := len(u.Kept); n > 0 {
				status += fmt.Sprintf(" (%d file%s kept)", n, plural(n))
			}
			if u.How == session.HowRollback {
				status = string(st.Status) + ", rolled back"
			}
		}
		status = pendingStatus(status, pending[st.RunID])
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\n", st.RunID, status, st.StartTime.Local().Format(time.DateTime),
			st.CompletedSteps, st.TotalSteps, oneLine(st))
	}
	tw.Flush()
	return exitOK
}

// findRun finds the run whose ID is id or starts with it (a unique
// prefix), or prints why not.
func findRun(runs []engine.RunState, id, cmd string, jc *journalCmd, stderr io.Writer) (*engine.RunState, bool) {
	var found []*engine.RunState
	for i := range runs {
		if runs[i].RunID == id {
			return &runs[i], true
		}
		if strings.HasPrefix(runs[i].RunID, id) {
			found = append(found, &runs[i])
		}
	}
	switch len(found) {
	case 1:
		return found[0], true
	case 0:
		fmt.Fprintf(stderr, "agentd %s: no run %q in this workspace's journal; list them with: %s\n", cmd, id, jc.hint("runs"))
	default:
		fmt.Fprintf(stderr, "agentd %s: %q is the start of %d runs' IDs; give more of it (list them with: %s)\n", cmd, id, len(found), jc.hint("runs"))
	}
	return nil, false
}

// completeRuns completes a run ID from the workspace's journal.
func (jc *journalCmd) completeRuns(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	j, ok := jc.open("runs", io.Discard)
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	runs, _ := j.Runs()
	var ids []string
	for _, st := range runs {
		if strings.HasPrefix(st.RunID, toComplete) {
			ids = append(ids, st.RunID+"\t"+string(st.Status)+" "+oneLine(st))
		}
	}
	return ids, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

// oneLine is a run's summary in one line: its plan's title and its error.
func oneLine(st engine.RunState) string {
	s := ""
	if st.FinalPlan != nil && st.FinalPlan.Title != "" {
		s = st.FinalPlan.Title
	} else if st.PlanID != "" {
		s = "plan " + st.PlanID
	}
	if st.FailedSteps > 0 {
		s += fmt.Sprintf(" (%d failed)", st.FailedSteps)
	}
	if st.Error != "" {
		e := st.Error
		if len(e) > 80 {
			e = e[:77] + "..."
		}
		s += ": " + e
	}
	return strings.TrimSpace(s)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printChangeSets lists a run's change sets with their review state, as
// the journal records them (from the editor or the terminal).
func printChangeSets(w io.Writer, j *engine.Journal, runID string) {
	sets, err := review.Recorded(j.Journal, runID)
	if err != nil {
		fmt.Fprintf(w, "\n(change sets unreadable: %v)\n", err)
	}
	if len(sets) == 0 {
		return
	}
	fmt.Fprintln(w, "\nReview of the change sets (from the journal):")
	for _, c := range sets {
		files := make([]string, len(c.Files))
		for i, f := range c.Files {
			files[i] = f.Path
		}
		fmt.Fprintf(w, "  %s  step %s  %s (review %s)  %s\n", c.ID, orDash(c.StepID), c.Status(), c.Review, strings.Join(files, ", "))
	}
}
