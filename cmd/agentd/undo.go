package main

import (
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
	runs, err := j.Runs()
	if err != nil {
		fmt.Fprintf(a.stderr, "agentd undo: %v\n", err)
		return exitFailed
	}
	var st *engine.RunState
	if len(args) == 1 {
		if st, ok = findRun(runs, args[0], "undo", jc, a.stderr); !ok {
			return exitFailed
		}
		if len(st.Snapshots) == 0 {
			fmt.Fprintf(a.stderr, "agentd undo: run %s took no snapshot (it ran with --dry-run or --no-snapshots), so there is nothing to undo it with\n", st.RunID)
			return exitFailed
		}
	} else {
		// The newest run that took snapshots: a dry run changed nothing.
		for i := range runs {
			if len(runs[i].Snapshots) > 0 {
				st = &runs[i]
				break
			}
		}
		if st == nil {
			fmt.Fprintf(a.stderr, "agentd undo: no run with snapshots in this workspace's journal (%s), so there is nothing to undo; list the runs with: %s\n", jc.root, jc.hint("runs"))
			return exitFailed
		}
	}
	if st.Status == engine.RunRunning || st.Status == engine.RunPaused {
		fmt.Fprintf(a.stderr, "agentd undo: run %s is still %s; cancel it first, then undo it\n", st.RunID, st.Status)
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
	return sc.restore(store, st.Snapshots[0], ro)
}

func short12(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
