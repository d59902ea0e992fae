package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/journal"
)

// newUndoCmd is "agentd undo [RUN]" and "agentd undo --restore": the
// daemon's two undos (package session), with the meaning they have in the
// editors and ACP, recorded in the workspace's journal. Undo of a run
// steps back: a second undo undoes the run before. Both go through the
// protected restore: files someone changed since the agent last left the
// workspace are conflicts, left alone unless --overwrite.
func newUndoCmd(a *app) *cobra.Command {
	var jc journalCmd
	var ro gitops.RestoreOptions
	var restore bool
	cmd := &cobra.Command{
		Use:   "undo [RUN]",
		Short: "undo the last run (a second undo, the run before), or with --restore the last restore",
		Long: `Restores the workspace to the snapshot taken at the start of the newest run not yet
undone (or of RUN; 'agentd runs' lists them, from the terminal and the editors alike).
Run again, it undoes the run before. A run that took no snapshots (--dry-run,
--no-snapshots) is named, not skipped over.

With --restore, undoes the newest restore not yet undone, whichever front end did it
(agentd snapshot restore, an editor, ACP, or an undo of a run).

Your own edits made since are conflicts, left alone unless --overwrite.`,
		Args:              argsBetween(0, 1, "one run ID"),
		ValidArgsFunction: jc.completeRuns,
		RunE: a.action(func(cmd *cobra.Command, args []string) int {
			if restore && len(args) > 0 {
				fmt.Fprintln(a.stderr, "agentd undo: --restore takes no run ID: it undoes the last restore")
				return exitUsage
			}
			return cmdUndo(a, &jc, args, restore, ro)
		}),
	}
	jc.flags(cmd)
	cmd.Flags().BoolVar(&restore, "restore", false, "undo the last restore instead of the last run")
	cmd.Flags().BoolVar(&ro.DryRun, "dry-run", false, "list what the undo would do and change nothing")
	cmd.Flags().BoolVar(&ro.Overwrite, "overwrite", false, "restore files changed since by someone else too")
	return cmd
}

func cmdUndo(a *app, jc *journalCmd, args []string, restore bool, ro gitops.RestoreOptions) int {
	name := "undo"
	if restore {
		name = "undo --restore"
	}
	sc := &snapCmd{a: a, name: name, w: jc.w, asJSON: jc.jsonOut, restoreArgs: args}
	store, code := sc.open()
	if store == nil {
		return code
	}
	defer sc.sess.Close()
	jc.root = sc.root
	what := "undid"
	if ro.DryRun {
		what = "would undo"
	}
	if restore {
		res, err := sc.sess.UndoRestore(a.ctx, ro)
		if err != nil && errors.Is(err, journal.ErrNoRestoreToUndo) {
			fmt.Fprintf(a.stderr, "agentd undo --restore: %v in %s (restores by agentd snapshot restore, agentd undo, the editors and ACP are recorded)\n", err, sc.root)
			return exitFailed
		}
		if err != nil {
			return sc.report(store, nil, err, ro, nil)
		}
		return sc.report(store, res.Restore, nil, ro, func() {
			u := res.Undid
			about := "the restore to " + short12(u.SnapshotID)
			if u.RunID != "" {
				about = "the undo of run " + u.RunID
			}
			fmt.Fprintf(a.stdout, "%s %s (%s), back to %s\n", what, about, u.At.Local().Format(time.DateTime), short12(u.Before))
		})
	}
	res, err := sc.sess.UndoRun(a.ctx, firstArg(args), ro)
	if err != nil {
		var ns *journal.NoSnapshotsError
		how := "list the runs with: " + jc.hint("runs")
		switch {
		case errors.As(err, &ns):
			how = "undo an older run by its ID: " + jc.hint("undo", "RUN") + " (" + jc.hint("runs") + " lists them)"
		case errors.Is(err, journal.ErrRunStillActive):
			how = "cancel it, then undo it"
		case errors.Is(err, journal.ErrNothingToUndo), errors.Is(err, journal.ErrNoSuchRun), errors.Is(err, journal.ErrAmbiguousRun):
		default:
			return sc.report(store, nil, err, ro, nil)
		}
		fmt.Fprintf(a.stderr, "agentd undo: %v (journal of %s); %s\n", err, sc.root, how)
		return exitFailed
	}
	if jc.jsonOut {
		return sc.out(res, func() {})
	}
	code = sc.report(store, res.Restore, nil, ro, func() {
		st := res.Run
		fmt.Fprintf(a.stdout, "%s run %s (%s, %s), back to its start snapshot %s\n", what, st.RunID, st.Status,
			st.StartTime.Local().Format(time.DateTime), short12(res.SnapshotID))
		if !ro.DryRun {
			fmt.Fprintf(a.stdout, "again to undo the run before; undo this undo with: %s\n", jc.hint("undo", "--restore"))
		}
	})
	printUndoLeftovers(a.stdout, res.Leftovers) // what a restore cannot take back
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
