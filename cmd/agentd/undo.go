package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentd/agentd/session"
)

// undoFlags are agentd undo's choices.
type undoFlags struct {
	restore, dryRun, diff, keep, overwrite bool
}

// newUndoCmd is "agentd undo [RUN]" and "agentd undo --restore [ID]": the
// daemon's two undos (package session), with the meaning they have in the
// editors and ACP, recorded in the workspace's journal. Undo is a revert:
// what the agent wrote is taken back on top of what the files hold now,
// so the user's own lines stay. A conflict (the user changed the agent's
// own lines) changes nothing until the user chooses: asked on a TTY, else
// --keep-conflicts or --overwrite.
func newUndoCmd(a *app) *cobra.Command {
	var jc journalCmd
	var f undoFlags
	cmd := &cobra.Command{
		Use:   "undo [RUN]",
		Short: "undo the last run (a second undo, the run before), or with --restore the last restore or undo",
		Long: `Takes back what the newest run not yet undone wrote (or RUN alone: newer runs stay
as they are; 'agentd runs' lists them, from the terminal and the editors alike), on top
of what the files hold now, as 'git revert' does: lines you wrote, before, during or
after the run, stay. Run again, it undoes the run before. A run that took no snapshots
(--dry-run, --no-snapshots) is named, not skipped over.

Where you changed lines the run wrote, the undo conflicts and changes nothing until you
choose: on a terminal it asks; otherwise (or with --json) it names the conflicts and exits
1. --keep-conflicts undoes the rest and keeps those files as they are; --overwrite
overwrites them (a safety snapshot keeps your version); --diff shows the conflicts as a
diff and changes nothing.

With --restore [ID], undoes a restore or an undo (the newest not yet undone, or ID as
the undo printed it), whichever front end did it (agentd snapshot restore, agentd undo,
the editors, ACP): what it wrote is taken back, your edits since stay.`,
		Args:              argsBetween(0, 1, "one run ID (or with --restore, one restore or undo ID)"),
		ValidArgsFunction: jc.completeRuns,
		RunE: a.action(func(cmd *cobra.Command, args []string) int {
			if f.keep && f.overwrite {
				fmt.Fprintln(a.stderr, "agentd undo: --keep-conflicts and --overwrite contradict each other; give one")
				return exitUsage
			}
			return cmdUndo(a, &jc, args, f)
		}),
	}
	jc.flags(cmd)
	cmd.Flags().BoolVar(&f.restore, "restore", false, "undo the last restore or undo (or the one whose ID is given) instead of a run")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "list what the undo would do and change nothing")
	cmd.Flags().BoolVar(&f.diff, "diff", false, "show the conflicts as a diff and change nothing")
	cmd.Flags().BoolVar(&f.keep, "keep-conflicts", false, "undo the rest and keep the conflicting files as they are")
	cmd.Flags().BoolVar(&f.overwrite, "overwrite", false, "overwrite the conflicting files too (a safety snapshot keeps your version)")
	return cmd
}

func (f undoFlags) options() session.UndoOptions {
	o := session.UndoOptions{DryRun: f.dryRun || f.diff}
	switch {
	case f.keep:
		o.OnConflict = session.KeepConflicts
	case f.overwrite:
		o.OnConflict = session.OverwriteConflicts
	}
	return o
}

// undoJSON is agentd undo --json's output.
type undoJSON struct {
	RunID       string                    `json:"runId,omitempty"`
	Undid       string                    `json:"undid,omitempty"` // with --restore: the restore or undo taken back
	Applied     bool                      `json:"applied"`
	DryRun      bool                      `json:"dryRun,omitempty"`
	UndoID      string                    `json:"undoId,omitempty"`
	Reverted    []string                  `json:"reverted"`
	Created     []string                  `json:"created"`
	Deleted     []string                  `json:"deleted"`
	Conflicts   []session.RevertConflict  `json:"conflicts"`
	Overwritten []string                  `json:"overwritten"`
	LeftAlone   []session.RestoreConflict `json:"leftAlone"`
	Kept        []string                  `json:"kept"`
	BySnapshot  string                    `json:"bySnapshot,omitempty"`
	// Hints are the commands that decide the conflicts (keep,
	// overwrite, diff) and the way back (undo).
	Hints     map[string]string  `json:"hints,omitempty"`
	Leftovers *session.Leftovers `json:"leftovers,omitempty"`
}

func cmdUndo(a *app, jc *journalCmd, args []string, f undoFlags) int {
	name := "undo"
	if f.restore {
		name = "undo --restore"
	}
	sc := &snapCmd{a: a, name: name, w: jc.w, asJSON: jc.jsonOut, restoreArgs: args}
	sess, code := sc.open()
	if sess == nil {
		return code
	}
	defer sess.Close()
	jc.root = sc.root
	u := &undoer{a: a, jc: jc, sc: sc, f: f, target: firstArg(args)}
	opts := f.options()
	// The undo stays recorded as under way until its result is printed:
	// killed in between, the next command that opens the store says what
	// it did, with its way back.
	opts.ShowLater = true
	for {
		res, err := u.do(opts)
		if err != nil {
			return u.fail(err)
		}
		if res.Applied || len(res.Conflicts) == 0 || opts.DryRun || jc.jsonOut || !isTerminal(a.stdin) {
			return u.print(res)
		}
		// On a terminal, a conflicting undo asks.
		u.print(res)
		con := newConsole(a.stdout, a.stdin)
		for {
			ans, err := con.Choose(a.ctx, "", "[k]eep those files as they are and undo the rest, [o]verwrite them, see the [d]iff, or [c]ancel?", "kodc", 0)
			if err != nil || ans == 'c' {
				fmt.Fprintln(a.stdout, "nothing undone")
				return exitFailed
			}
			if ans == 'd' {
				for _, c := range res.Conflicts {
					io.WriteString(a.stdout, c.Diff)
				}
				continue
			}
			opts.OnConflict = session.KeepConflicts
			if ans == 'o' {
				opts.OnConflict = session.OverwriteConflicts
			}
			u.f.keep, u.f.overwrite = ans == 'k', ans == 'o'
			break
		}
	}
}

// undoer is one agentd undo: what it undoes and how it says so.
type undoer struct {
	a      *app
	jc     *journalCmd
	sc     *snapCmd
	f      undoFlags
	target string // the run, or with --restore the restore or undo; "" the newest
	run    *session.UndoRunResult
	undid  *session.UndoRestoreResult
}

// do undoes, once; the target is then pinned, so that a choice made
// after a conflict (or a printed hint) undoes the same thing.
func (u *undoer) do(opts session.UndoOptions) (*session.UndoResult, error) {
	if u.f.restore {
		res, err := u.sc.sess.UndoRestore(u.a.ctx, u.target, opts)
		if err != nil {
			return nil, err
		}
		u.undid, u.target = res, res.Undid.ID
		return &res.UndoResult, nil
	}
	res, err := u.sc.sess.UndoRun(u.a.ctx, u.target, opts)
	if err != nil {
		return nil, err
	}
	u.run, u.target = res, res.RunID
	return &res.UndoResult, nil
}

func (u *undoer) hint(args ...string) string {
	return hintCommand(u.sc.root, u.jc.w.stateDir, args...)
}

// again is the command that undoes the same thing, with flags.
func (u *undoer) again(flags ...string) string {
	args := []string{"undo"}
	if u.f.restore {
		args = append(args, "--restore")
	}
	return u.hint(append(append(args, u.target), flags...)...)
}

func (u *undoer) fail(err error) int {
	a, jc, sc := u.a, u.jc, u.sc
	if u.f.restore {
		if errors.Is(err, session.ErrNoRestoreToUndo) {
			fmt.Fprintf(a.stderr, "agentd undo --restore: %v in %s (restores and undos by agentd snapshot restore, agentd undo, the editors and ACP are recorded)\n", err, sc.root)
			return exitFailed
		}
		return sc.report(nil, err, session.RestoreOptions{}, nil)
	}
	var ns *session.NoSnapshotsError
	var au *session.AlreadyUndoneError
	how := "list the runs with: " + jc.hint("runs")
	switch {
	case errors.As(err, &au) && au.Undone.UndoID != "":
		how = "undo its undo with: " + jc.hint("undo", "--restore", au.Undone.UndoID)
	case errors.As(err, &ns):
		how = "undo an older run by its ID: " + jc.hint("undo", "RUN") + " (" + jc.hint("runs") + " lists them)"
	case errors.Is(err, session.ErrRunStillActive):
		how = "cancel it, then undo it"
	case errors.Is(err, session.ErrNothingToUndo), errors.Is(err, session.ErrNoSuchRun), errors.Is(err, session.ErrAmbiguousRun):
	default:
		return sc.report(nil, err, session.RestoreOptions{}, nil)
	}
	fmt.Fprintf(a.stderr, "agentd undo: %v (journal of %s); %s\n", err, sc.root, how)
	return exitFailed
}

// hints are the commands printed after an undo: the choices after a
// conflict, each naming what it undoes, and the way back.
func (u *undoer) hints(res *session.UndoResult) map[string]string {
	h := map[string]string{}
	if len(res.Conflicts) > 0 && (!res.Applied || res.DryRun) {
		h["keep"] = u.again("--keep-conflicts")
		h["overwrite"] = u.again("--overwrite")
		h["diff"] = u.again("--diff")
	}
	if res.DryRun || !res.Applied {
		return h
	}
	switch {
	case u.undid != nil && u.undid.Undid.RunID != "":
		h["undo"] = u.hint("undo", u.undid.Undid.RunID)
	case u.undid != nil && u.undid.Undid.SnapshotID != "":
		h["undo"] = u.hint("snapshot", "restore", short12(u.undid.Undid.SnapshotID))
	case res.UndoID != "":
		h["undo"] = u.hint("undo", "--restore", res.UndoID)
	}
	return h
}

func (u *undoer) print(res *session.UndoResult) int {
	defer u.sc.sess.Shown(res.Unshown)
	a := u.a
	hints := u.hints(res)
	code := exitOK
	if !res.Applied && !res.DryRun {
		code = exitFailed
	}
	if u.jc.jsonOut {
		out := undoJSON{Applied: res.Applied, DryRun: res.DryRun, UndoID: res.UndoID, Reverted: nonNil(res.Reverted), Created: nonNil(res.Created),
			Deleted: nonNil(res.Deleted), Conflicts: res.Conflicts, Overwritten: nonNil(res.Overwritten), LeftAlone: res.LeftAlone,
			Kept: nonNil(res.Kept), BySnapshot: res.BySnapshot, Hints: hints}
		if out.Conflicts == nil {
			out.Conflicts = []session.RevertConflict{}
		}
		if out.LeftAlone == nil {
			out.LeftAlone = []session.RestoreConflict{}
		}
		if u.run != nil {
			out.RunID, out.Leftovers = u.run.RunID, u.run.Leftovers
		}
		if u.undid != nil {
			out.Undid = u.undid.Undid.ID
		}
		if c := u.sc.out(out, func() {}); c != exitOK {
			return c
		}
		return code
	}
	w := a.stdout
	what := ""
	if u.run != nil {
		st := u.run.Run
		what = fmt.Sprintf("run %s (%s, %s)", st.RunID, st.Status, st.StartTime.Local().Format(time.DateTime))
	} else {
		r := u.undid.Undid
		what = fmt.Sprintf("the restore to %s (%s)", short12(r.SnapshotID), r.At.Local().Format(time.DateTime))
		if r.RunID != "" {
			what = fmt.Sprintf("the undo of run %s (%s)", r.RunID, r.At.Local().Format(time.DateTime))
		}
	}
	switch {
	case !res.Applied:
		fmt.Fprintf(w, "nothing undone: undoing %s conflicts with edits made since\n", what)
	case res.DryRun:
		fmt.Fprintf(w, "would undo %s\n", what)
	default:
		fmt.Fprintf(w, "undid %s\n", what)
	}
	if res.BySnapshot != "" {
		fmt.Fprintf(w, "note: %s\n", res.BySnapshot)
	}
	verb := ""
	if res.DryRun || !res.Applied {
		verb = "would be "
	}
	if res.Applied || res.DryRun {
		for _, g := range []struct {
			what  string
			paths []string
		}{{"reverted", res.Reverted}, {"re-created", res.Created}, {"deleted", res.Deleted}, {"overwritten", res.Overwritten}} {
			for _, p := range g.paths {
				fmt.Fprintf(w, "%s%s: %s\n", verb, g.what, p)
			}
		}
	}
	for _, c := range res.Conflicts {
		state := "conflict"
		if res.Applied && !res.DryRun && slices.Contains(res.Kept, c.Path) {
			state = "kept as it is (conflict)"
		}
		fmt.Fprintf(w, "%s: %s: %s\n", state, c.Path, c.Reason)
		if u.f.diff && c.Diff != "" {
			io.WriteString(w, c.Diff)
		}
	}
	for _, c := range res.LeftAlone {
		fmt.Fprintf(w, "left alone: %s: %s\n", c.Path, c.Message)
	}
	if len(res.Overwritten) > 0 && !res.DryRun {
		fmt.Fprintf(w, "your versions of the overwritten files are in safety snapshot %s: %s\n", short12(res.UndoSnapshot),
			u.hint("snapshot", "diff", short12(res.UndoSnapshot)))
	}
	if res.Applied && !res.DryRun && len(res.Reverted)+len(res.Created)+len(res.Deleted)+len(res.Overwritten)+len(res.Conflicts) == 0 {
		fmt.Fprintln(w, "nothing to take back: the files already hold what they held before")
	}
	if h, ok := hints["keep"]; ok {
		fmt.Fprintf(w, "to undo the rest and keep the conflicting files as they are: %s\n", h)
		fmt.Fprintf(w, "to overwrite them too (a safety snapshot keeps your version): %s\n", hints["overwrite"])
		fmt.Fprintf(w, "to see the conflicts as a diff: %s\n", hints["diff"])
	}
	if h, ok := hints["undo"]; ok {
		if u.run != nil {
			fmt.Fprintf(w, "again to undo the run before: %s\n", u.hint("undo"))
		}
		fmt.Fprintf(w, "undo this undo with: %s\n", h)
	}
	if u.run != nil && res.Applied && !res.DryRun {
		printUndoLeftovers(w, u.run.Leftovers) // what a revert cannot take back
	}
	return code
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
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
