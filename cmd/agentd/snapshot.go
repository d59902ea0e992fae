package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/session"
)

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
func (l *stringList) Type() string       { return "stringList" }

// snapCmd is what every snapshot subcommand shares: the workspace and state
// flags, --json, and the session they open.
type snapCmd struct {
	a      *app
	name   string // "snapshot list", "undo": the command, in messages
	root   string // the workspace's root, once the session is open
	w      wsFlags
	asJSON bool
	// restoreArgs are the arguments after the command that a printed
	// "restore anyway" hint repeats (the snapshot ID, --path P...).
	restoreArgs []string
	// sess is the workspace's session, once open: the commands go
	// through it, and restores are recorded in the journal by it (agentd
	// undo --restore).
	sess *session.Session
}

func newSnapshotCmd(a *app) *cobra.Command {
	group := groupCmd(a, "snapshot", "create, list, show, diff, restore and gc snapshots")
	group.Long = `Snapshots record the workspace in a shadow git repository outside it (your own .git is
never touched); agentd run and the editors take them before and after every step.`
	sub := func(use, short string, args cobra.PositionalArgs, body func(sc *snapCmd, sess *session.Session, args []string) int) (*cobra.Command, *snapCmd) {
		sc := &snapCmd{a: a}
		cmd := &cobra.Command{Use: use, Short: short, Args: args}
		addWSFlags(cmd.Flags(), &sc.w)
		cmd.Flags().BoolVar(&sc.asJSON, "json", false, "machine-readable output")
		completeDirs(cmd, "workspace", "state-dir")
		cmd.RunE = a.action(func(cmd *cobra.Command, args []string) int {
			sc.name = "snapshot " + cmd.Name()
			defer session.OneShot()()
			sess, code := sc.open()
			if sess == nil {
				return code
			}
			defer sess.Close()
			return body(sc, sess, args)
		})
		if strings.Contains(use, " ID") || strings.Contains(use, " A") {
			// show ID, diff A [B], restore ID: Tab completes snapshot IDs.
			cmd.ValidArgsFunction = sc.completeSnapshots
		}
		group.AddCommand(cmd)
		return cmd, sc
	}

	var label string
	create, _ := sub("create", "record the workspace now", noArgs, func(sc *snapCmd, sess *session.Session, _ []string) int {
		snap, err := sess.TakeSnapshot(sc.a.ctx, session.SnapshotOptions{Label: label})
		if err != nil {
			return sc.fail(err)
		}
		return sc.out(snap, func() {
			fmt.Fprintf(sc.a.stdout, "snapshot %s (%s): %d files, %d changed\n", snap.ID, snap.Ref, snap.Files, snap.FilesChanged)
			printSkipped(sc.a.stdout, snap.Skipped)
		})
	})
	create.Flags().StringVar(&label, "label", "", "a `LABEL` for the snapshot")

	var run string
	list, _ := sub("list", "list snapshots, newest first", noArgs, func(sc *snapCmd, sess *session.Session, _ []string) int {
		list, err := sess.Snapshots(sc.a.ctx, run)
		if err != nil {
			return sc.fail(err)
		}
		if list == nil {
			list = []*session.Snapshot{}
		}
		return sc.out(list, func() {
			if len(list) == 0 {
				fmt.Fprintf(sc.a.stderr, "no snapshots yet; take one with: %s\n", hintCommand(sc.root, sc.w.stateDir, "snapshot", "create"))
				return
			}
			tw := tabwriter.NewWriter(sc.a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tCREATED\tREF\tKIND\tSTEP\tFILES\tCHANGED\tSKIPPED\tLABEL")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", s.ID[:12], s.CreatedAt.Local().Format("2006-01-02 15:04:05"),
					strings.TrimPrefix(s.Ref, "refs/agentd/"), s.Kind, s.StepID, s.Files, s.FilesChanged, len(s.Skipped), s.Label)
			}
			tw.Flush()
		})
	})
	list.Flags().StringVar(&run, "run", "", "only the snapshots of run `RUN`")

	var files bool
	show, _ := sub("show ID", "one snapshot (--files: its files, one per line)", argsBetween(1, 1, "the snapshot ID"), func(sc *snapCmd, sess *session.Session, args []string) int {
		snap, err := sess.SnapshotByID(sc.a.ctx, args[0])
		if err != nil {
			return sc.fail(err)
		}
		stdout := sc.a.stdout
		if files {
			list, err := sess.SnapshotFiles(sc.a.ctx, snap.ID)
			if err != nil {
				return sc.fail(err)
			}
			return sc.out(list, func() {
				for _, f := range list {
					fmt.Fprintln(stdout, f)
				}
			})
		}
		return sc.out(snap, func() {
			fmt.Fprintf(stdout, "id:       %s\nref:      %s\ncreated:  %s\n", snap.ID, snap.Ref, snap.CreatedAt.Local().Format("2006-01-02 15:04:05 MST"))
			if snap.RunID != "" {
				fmt.Fprintf(stdout, "run:      %s\nstep:     %s\n", snap.RunID, snap.StepID)
			}
			fmt.Fprintf(stdout, "kind:     %s\nlabel:    %s\nfiles:    %d (%d changed since the previous snapshot)\n", snap.Kind, snap.Label, snap.Files, snap.FilesChanged)
			printChanges(stdout, snap)
			printSkipped(stdout, snap.Skipped)
		})
	})
	show.Flags().BoolVar(&files, "files", false, "list the snapshot's files")

	var binary bool
	diffCmd, _ := sub("diff A [B]", "unified diff from snapshot A to B (default: the workspace now)", argsBetween(1, 2, "snapshot A and optionally B"), func(sc *snapCmd, sess *session.Session, args []string) int {
		to := ""
		if len(args) == 2 {
			to = args[1]
		}
		fds, err := sess.SnapshotDiff(sc.a.ctx, args[0], to)
		if err != nil {
			return sc.fail(err)
		}
		return sc.out(fds, func() {
			for _, fd := range fds {
				if binary {
					io.WriteString(sc.a.stdout, diff.UnifiedBinary(fd))
				} else {
					io.WriteString(sc.a.stdout, diff.Unified(fd))
				}
			}
		})
	})
	diffCmd.Flags().BoolVar(&binary, "binary", false, "write binary files' content into the diff, as git diff --binary does (for git apply)")

	var ro session.RestoreOptions
	var paths stringList
	restore, _ := sub("restore ID", "make the workspace match snapshot ID", argsBetween(1, 1, "the snapshot ID to restore"), func(sc *snapCmd, sess *session.Session, args []string) int {
		ro.Paths = paths
		sc.restoreArgs = []string{args[0]}
		for _, p := range paths {
			sc.restoreArgs = append(sc.restoreArgs, "--path", p)
		}
		return sc.restore(args[0], ro)
	})
	restore.Long = `Makes the workspace match snapshot ID. A safety snapshot is taken first, so the restore
can be undone (the command to do it is printed). Files changed since the agent's last
snapshot are someone else's: they are left alone as conflicts, unless --overwrite. A file
the safety snapshot cannot hold (over the size limit, unreadable) is never replaced, even
with --overwrite: it is listed as left alone, so the undo always restores everything the
restore changed.`
	restore.Flags().Var(&paths, "path", "restore only this `PATH` (file or directory; repeatable)")
	restore.Flags().BoolVar(&ro.DryRun, "dry-run", false, "list what restore would do and change nothing")
	restore.Flags().BoolVar(&ro.Overwrite, "overwrite", false, "restore files changed by someone else too")

	sub("gc", "prune old runs and unreferenced objects", noArgs, func(sc *snapCmd, sess *session.Session, _ []string) int {
		res, err := sess.CollectGarbage(sc.a.ctx)
		if err != nil {
			return sc.fail(err)
		}
		return sc.out(res, func() {
			fmt.Fprintf(sc.a.stdout, "pruned %d runs and %d objects; store %d -> %d bytes\n", res.RunsPruned, res.ObjectsPruned, res.BytesBefore, res.BytesAfter)
		})
	})
	sub("doctor", "finish or roll back an interrupted restore, or say what is wrong and which snapshot holds your state", noArgs, func(sc *snapCmd, sess *session.Session, _ []string) int {
		rep, err := sess.Doctor(sc.a.ctx)
		if rep == nil {
			return sc.fail(err)
		}
		code := sc.out(rep, func() {
			for _, r := range rep.Repaired {
				fmt.Fprintf(sc.a.stdout, "repaired: %s\n", r)
			}
			if len(rep.Repaired) == 0 && err == nil {
				fmt.Fprintln(sc.a.stdout, "the snapshot store is in order")
			}
		})
		if err != nil {
			fmt.Fprintf(sc.a.stderr, "agentd snapshot doctor: %s\n", pasteable(err.Error(), sc.root, sc.w.stateDir))
			return exitFailed
		}
		return code
	})
	return group
}

// open opens the workspace's session and waits for its snapshot store,
// or prints why not.
func (sc *snapCmd) open() (*session.Session, int) {
	if !checkPlaces(sc.name, sc.w.dir, sc.w.stateDir, sc.w.allowBroad, sc.a.stderr) {
		return nil, exitUsage
	}
	sess, err := session.Open(sc.a.ctx, session.Options{Root: sc.w.dir, StateDir: sc.w.stateDir, JournalOptional: true, AllowBroadWorkspace: sc.w.allowBroad})
	if err != nil {
		fmt.Fprintf(sc.a.stderr, "agentd %s: %v\n", sc.name, err)
		return nil, exitFailed
	}
	if err := sess.StoreReady(); err != nil {
		fmt.Fprintf(sc.a.stderr, "agentd %s: %v\n", sc.name, err)
		return nil, exitFailed
	}
	sc.sess = sess
	sc.root = sess.WS.Root()
	rec, err := sess.Recovered(sc.a.ctx)
	sayRecovery(sc.a.stderr, sc.name, rec, err, sc.root, sc.w.stateDir)
	if prob := sess.StoreProblem(); prob != nil && sc.name != "snapshot doctor" {
		fmt.Fprintf(sc.a.stderr, "agentd %s: warning: %s\n", sc.name, pasteable(prob.Error(), sc.root, sc.w.stateDir))
	}
	return sess, exitOK
}

// out prints v as JSON with --json, else runs text.
func (sc *snapCmd) out(v any, text func()) int {
	if sc.asJSON {
		enc := newJSONEncoder(sc.a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			fmt.Fprintf(sc.a.stderr, "agentd %s: %v\n", sc.name, err)
			return exitFailed
		}
		return exitOK
	}
	text()
	return exitOK
}

func (sc *snapCmd) fail(err error) int {
	if sc.a.ctx.Err() != nil {
		fmt.Fprintf(sc.a.stderr, "agentd %s: cancelled\n", sc.name)
		return exitCancelled
	}
	fmt.Fprintf(sc.a.stderr, "agentd %s: %s\n", sc.name, pasteable(err.Error(), sc.root, sc.w.stateDir))
	return exitFailed
}

// restore restores snapshot id and reports it; agentd snapshot restore and
// agentd undo share it. Protection (which files count as someone else's)
// is the store's rule: the same for the editor, agentd run and the CLI.
func (sc *snapCmd) restore(id string, ro session.RestoreOptions) int {
	res, err := sc.sess.Restore(sc.a.ctx, id, ro)
	return sc.report(res, err, ro, nil)
}

// report prints what a restore did (or why it did not); before, if set,
// prints first (agentd undo's line about the run).
func (sc *snapCmd) report(res *session.RestoreResult, err error, ro session.RestoreOptions, before func()) int {
	cmd := sc.name
	stdout := sc.a.stdout
	if errors.Is(err, session.ErrNoProtectionBase) {
		again := append(strings.Fields(cmd), sc.restoreArgs...)
		again = append(again, "--overwrite")
		fmt.Fprintf(sc.a.stderr, "agentd %s: %v\nto restore anyway: %s\n", cmd, err, hintCommand(sc.root, sc.w.stateDir, again...))
		return exitFailed
	}
	if errors.Is(err, session.ErrInterruptedRestore) {
		fmt.Fprintf(sc.a.stderr, "agentd %s: %v\nrestore it with --overwrite, or see the store's state with: %s\n", cmd, err, hintCommand(sc.root, sc.w.stateDir, "snapshot", "doctor"))
		return exitFailed
	}
	if err != nil {
		return sc.fail(err)
	}
	code := sc.out(res, func() {
		if before != nil {
			before()
		}
		verb := ""
		if ro.DryRun {
			verb = "would be "
		}
		for _, g := range []struct {
			what  string
			paths []string
		}{{"restored", res.Restored}, {"created", res.Created}, {"deleted", res.Deleted}} {
			for _, p := range g.paths {
				fmt.Fprintf(stdout, "%s%s: %s\n", verb, g.what, p)
			}
		}
		for _, c := range res.Conflicts {
			fmt.Fprintf(stdout, "conflict: %s: %s\n", c.Path, c.Message)
		}
		for _, c := range res.LeftAlone {
			fmt.Fprintf(stdout, "left alone: %s: %s\n", c.Path, c.Message)
		}
		changed := len(res.Restored) + len(res.Created) + len(res.Deleted)
		if changed == 0 && len(res.Conflicts) == 0 {
			if len(res.LeftAlone) > 0 {
				fmt.Fprintln(stdout, "nothing restored: the files above differ from the snapshot but were left alone")
			} else {
				fmt.Fprintln(stdout, "nothing to restore: the workspace already matches")
			}
		}
		if len(res.Conflicts) > 0 && !ro.Overwrite {
			again := append(strings.Fields(cmd), sc.restoreArgs...)
			fmt.Fprintf(stdout, "to restore the conflicting files too: %s\n", hintCommand(sc.root, sc.w.stateDir, append(again, "--overwrite")...))
		}
		if res.UndoSnapshot != "" && !ro.DryRun && changed > 0 { // nothing done: nothing to undo
			fmt.Fprintf(stdout, "undo with: %s\n", hintCommand(sc.root, sc.w.stateDir, "snapshot", "restore", res.UndoSnapshot[:12]))
		}
	})
	if code == exitOK && len(res.Conflicts) > 0 {
		return exitPartial
	}
	return code
}

// printChanges says which files the snapshot changed against the previous
// one (for a run's snapshot: what its step changed).
func printChanges(w io.Writer, snap *session.Snapshot) {
	for _, c := range snap.Changes {
		who := ""
		if snap.StepID != "" {
			who = " by step " + snap.StepID
		}
		fmt.Fprintf(w, "%-9s %s%s\n", string(c.Kind)+":", c.Path, who)
	}
	if snap.ChangesOmitted > 0 {
		fmt.Fprintf(w, "... and %d more changed files\n", snap.ChangesOmitted)
	}
}

func printSkipped(w io.Writer, skipped []session.SkippedFile) {
	for _, s := range skipped {
		fmt.Fprintf(w, "skipped: %s (%d bytes): %s\n", s.Path, s.Size, s.Reason)
	}
}

// completeSnapshots completes a snapshot ID from the workspace's store,
// newest first, each with its label.
func (sc *snapCmd) completeSnapshots(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	quiet := &snapCmd{a: &app{ctx: cmd.Context(), stdout: io.Discard, stderr: io.Discard}, w: sc.w, name: "snapshot"}
	if quiet.a.ctx == nil {
		quiet.a.ctx = context.Background()
	}
	defer session.OneShot()()
	sess, _ := quiet.open()
	if sess == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer sess.Close()
	list, err := sess.Snapshots(quiet.a.ctx, "")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var ids []string
	for _, snap := range list {
		id := short12(snap.ID)
		if strings.HasPrefix(snap.ID, toComplete) {
			if len(toComplete) > 12 {
				id = snap.ID
			}
			ids = append(ids, id+"\t"+snap.Label)
		}
	}
	return ids, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}
