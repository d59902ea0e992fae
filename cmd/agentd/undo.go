package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/gitops"
)

// newUndoCmd is "agentd undo [RUN]": the workspace back to before the last
// run (or RUN), through the same protected restore as agentd snapshot
// restore and the editors: files someone changed since the agent last
// left the workspace are conflicts, left alone unless --overwrite.
func newUndoCmd(a *app) *cobra.Command {
	var jc journalCmd
	var ro gitops.RestoreOptions
	cmd := &cobra.Command{
		Use:   "undo [RUN]",
		Short: "restore the workspace to before the last run (or RUN)",
		Long: `Restores the workspace to the snapshot taken at the start of the last run that took
snapshots (or of RUN; 'agentd runs' lists them, from the terminal and the editors alike).
Your own edits made since the run are conflicts, left alone unless --overwrite. The
restore itself can be undone: the command to do it is printed.`,
		Args:              argsBetween(0, 1, "one run ID"),
		ValidArgsFunction: jc.completeRuns,
		RunE: a.action(func(cmd *cobra.Command, args []string) int {
			return cmdUndo(a, &jc, args, ro)
		}),
	}
	jc.flags(cmd)
	cmd.Flags().BoolVar(&ro.DryRun, "dry-run", false, "list what the undo would do and change nothing")
	cmd.Flags().BoolVar(&ro.Overwrite, "overwrite", false, "restore files changed since the run by someone else too")
	return cmd
}

func cmdUndo(a *app, jc *journalCmd, args []string, ro gitops.RestoreOptions) int {
	j, ok := jc.open("undo", a.stderr)
	if !ok {
		return exitFailed
	}
	st, err := j.RunToUndo(firstArg(args))
	if err != nil {
		how := "list the runs with: " + jc.hint("runs")
		if errors.Is(err, engine.ErrRunStillActive) {
			how = "cancel it, then undo it"
		}
		fmt.Fprintf(a.stderr, "agentd undo: %v (workspace %s); %s\n", err, jc.root, how)
		return exitFailed
	}
	sc := &snapCmd{a: a, name: "undo", w: jc.w, asJSON: jc.jsonOut, restoreArgs: []string{st.RunID}}
	store, code := sc.open()
	if store == nil {
		return code
	}
	defer store.Close()
	if !jc.jsonOut {
		what := "undoing"
		if ro.DryRun {
			what = "would undo"
		}
		fmt.Fprintf(a.stdout, "%s run %s (%s, %s), back to its start snapshot %s\n", what, st.RunID, st.Status,
			st.StartTime.Local().Format(time.DateTime), short12(st.Snapshots[0]))
	}
	code = sc.restore(store, st.Snapshots[0], ro)
	if !jc.jsonOut {
		printUndoLeftovers(a.stdout, j, st)
	}
	return code
}

func short12(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// firstArg is args[0], or "" without arguments.
func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
