package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

const snapshotUsage = `usage: agentd snapshot SUBCOMMAND [flags]

subcommands:
  create [--label L]                          record the workspace now
  list [--run R]                              list snapshots, newest first
  show ID [--files]                           one snapshot (--files: its files, one per line)
  diff A [B] [--binary]                       unified diff from A to B (default: the workspace now);
                                              --binary: binary files' content too, for git apply
  restore ID [--path P]... [--dry-run] [--overwrite]
                                              make the workspace match snapshot ID; files
                                              changed since the agent's last snapshot are
                                              conflicts, left alone unless --overwrite
  gc                                          prune old runs and unreferenced objects
  doctor                                      finish or roll back an interrupted restore, or
                                              say what is wrong and which snapshot holds your state

flags of every subcommand:
  --workspace DIR   the workspace (default: the current directory)
  --state-dir DIR   agentd's state dir (default $AGENTD_STATE_DIR, else $XDG_STATE_HOME/agentd)
  --json            machine-readable output
`

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func cmdSnapshot(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		io.WriteString(stderr, snapshotUsage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	sub := args[0]
	fs := newFlagSet("snapshot "+sub, "[flags]", stderr)
	fs.Usage = func() { io.WriteString(stderr, snapshotUsage) }
	wsDir := fs.String("workspace", ".", "the workspace `dir`")
	stateDir := fs.String("state-dir", "", "agentd's state `dir`")
	asJSON := fs.Bool("json", false, "machine-readable output")
	label := fs.String("label", "", "label of the snapshot (create)")
	run := fs.String("run", "", "only this run's snapshots (list)")
	files := fs.Bool("files", false, "list the snapshot's files (show)")
	var paths stringList
	fs.Var(&paths, "path", "restore only this `path` (file or directory; repeatable)")
	dryRun := fs.Bool("dry-run", false, "list what restore would do and change nothing")
	overwrite := fs.Bool("overwrite", false, "restore files changed by someone else too")
	binary := fs.Bool("binary", false, "write binary files' content into the diff, as git diff --binary does")
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	want := map[string][2]int{"create": {0, 0}, "list": {0, 0}, "show": {1, 1}, "diff": {1, 2}, "restore": {1, 1}, "gc": {0, 0}, "doctor": {0, 0}}
	n, ok := want[sub]
	if !ok {
		fmt.Fprintf(stderr, "agentd snapshot: unknown subcommand %q\n\n%s", sub, snapshotUsage)
		return exitUsage
	}
	if len(pos) < n[0] || len(pos) > n[1] {
		fmt.Fprintf(stderr, "agentd snapshot %s: wrong number of arguments\n\n%s", sub, snapshotUsage)
		return exitUsage
	}

	defer gitops.OneShot()()
	ws, err := workspace.Open(*wsDir, workspace.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "agentd snapshot: open workspace %s: %v\n", *wsDir, err)
		return exitFailed
	}
	store, err := gitops.Open(ctx, ws, gitops.Options{StateDir: *stateDir})
	if err != nil {
		fmt.Fprintf(stderr, "agentd snapshot: %v\n", err)
		return exitFailed
	}
	defer store.Close()
	if prob := store.Problem(); prob != nil && sub != "doctor" {
		fmt.Fprintf(stderr, "agentd snapshot: warning: %v\n", prob)
	}

	out := func(v any, text func()) int {
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(v); err != nil {
				fmt.Fprintf(stderr, "agentd snapshot: %v\n", err)
				return exitFailed
			}
			return exitOK
		}
		text()
		return exitOK
	}
	fail := func(err error) int {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "agentd snapshot %s: cancelled\n", sub)
			return exitCancelled
		}
		fmt.Fprintf(stderr, "agentd snapshot %s: %v\n", sub, err)
		return exitFailed
	}

	switch sub {
	case "create":
		snap, err := store.Snapshot(ctx, gitops.SnapshotOptions{Label: *label})
		if err != nil {
			return fail(err)
		}
		return out(snap, func() {
			fmt.Fprintf(stdout, "snapshot %s (%s): %d files, %d changed\n", snap.ID, snap.Ref, snap.Files, snap.FilesChanged)
			printSkipped(stdout, snap.Skipped)
		})
	case "list":
		list, err := store.List(ctx, *run)
		if err != nil {
			return fail(err)
		}
		if list == nil {
			list = []*gitops.Snapshot{}
		}
		return out(list, func() {
			if len(list) == 0 {
				fmt.Fprintln(stderr, "no snapshots yet; take one with 'agentd snapshot create'")
				return
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tCREATED\tREF\tKIND\tSTEP\tFILES\tCHANGED\tSKIPPED\tLABEL")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", s.ID[:12], s.CreatedAt.Local().Format("2006-01-02 15:04:05"),
					strings.TrimPrefix(s.Ref, "refs/agentd/"), s.Kind, s.StepID, s.Files, s.FilesChanged, len(s.Skipped), s.Label)
			}
			tw.Flush()
		})
	case "show":
		snap, err := store.Get(ctx, pos[0])
		if err != nil {
			return fail(err)
		}
		if *files {
			list, err := store.Files(ctx, snap.ID)
			if err != nil {
				return fail(err)
			}
			return out(list, func() {
				for _, f := range list {
					fmt.Fprintln(stdout, f)
				}
			})
		}
		return out(snap, func() {
			fmt.Fprintf(stdout, "id:       %s\nref:      %s\ncreated:  %s\n", snap.ID, snap.Ref, snap.CreatedAt.Local().Format("2006-01-02 15:04:05 MST"))
			if snap.RunID != "" {
				fmt.Fprintf(stdout, "run:      %s\nstep:     %s\n", snap.RunID, snap.StepID)
			}
			fmt.Fprintf(stdout, "kind:     %s\nlabel:    %s\nfiles:    %d (%d changed since the previous snapshot)\n", snap.Kind, snap.Label, snap.Files, snap.FilesChanged)
			printChanges(stdout, snap)
			printSkipped(stdout, snap.Skipped)
		})
	case "diff":
		to := ""
		if len(pos) == 2 {
			to = pos[1]
		}
		fds, err := store.Diff(ctx, pos[0], to)
		if err != nil {
			return fail(err)
		}
		return out(fds, func() {
			for _, fd := range fds {
				if *binary {
					io.WriteString(stdout, diff.UnifiedBinary(fd))
				} else {
					io.WriteString(stdout, diff.Unified(fd))
				}
			}
		})
	case "restore":
		// Protection (which files count as someone else's) is the store's
		// rule: the same for the editor, agentd run and this command.
		res, err := store.Restore(ctx, pos[0], gitops.RestoreOptions{Paths: paths, DryRun: *dryRun, Overwrite: *overwrite})
		if errors.Is(err, gitops.ErrNoProtectionBase) {
			fmt.Fprintf(stderr, "agentd snapshot restore: %v\nto restore anyway: agentd snapshot restore %s --overwrite\n", err, pos[0])
			return exitFailed
		}
		if err != nil {
			return fail(err)
		}
		code := out(res, func() {
			verb := ""
			if *dryRun {
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
			if n := len(res.Restored) + len(res.Created) + len(res.Deleted); n == 0 && len(res.Conflicts) == 0 {
				fmt.Fprintln(stdout, "nothing to restore: the workspace already matches")
			}
			if res.UndoSnapshot != "" {
				fmt.Fprintf(stdout, "undo with: agentd snapshot restore %s\n", res.UndoSnapshot[:12])
			}
		})
		if code == exitOK && len(res.Conflicts) > 0 {
			return exitPartial
		}
		return code
	case "doctor":
		rep, err := store.Doctor(ctx)
		if rep != nil {
			code := out(rep, func() {
				for _, r := range rep.Repaired {
					fmt.Fprintf(stdout, "repaired: %s\n", r)
				}
				if len(rep.Repaired) == 0 && err == nil {
					fmt.Fprintln(stdout, "the snapshot store is in order")
				}
			})
			if err != nil {
				fmt.Fprintf(stderr, "agentd snapshot doctor: %v\n", err)
				return exitFailed
			}
			return code
		}
		return fail(err)
	case "gc":
		res, err := store.GC(ctx)
		if err != nil {
			return fail(err)
		}
		return out(res, func() {
			fmt.Fprintf(stdout, "pruned %d runs and %d objects; store %d -> %d bytes\n", res.RunsPruned, res.ObjectsPruned, res.BytesBefore, res.BytesAfter)
		})
	}
	return exitUsage
}

// printChanges says which files the snapshot changed against the previous
// one (for a run's snapshot: what its step changed).
func printChanges(w io.Writer, snap *gitops.Snapshot) {
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

func printSkipped(w io.Writer, skipped []gitops.SkippedFile) {
	for _, s := range skipped {
		fmt.Fprintf(w, "skipped: %s (%d bytes): %s\n", s.Path, s.Size, s.Reason)
	}
}
