package session

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/journal"
)

// Recovery is what the snapshot store did, when it opened, about a
// restore, an undo or an undo of a restore that a crash (or a failure)
// interrupted: every front end says it first, in the words Message
// gives, with the way back (WayBack) as its own command.
type Recovery struct {
	// Report is what the store's recovery did; nil when only the
	// journal's records of interrupted operations were settled
	// (Settled).
	Report *gitops.RecoveryReport
	// Settled says, a line each, what became of the journal's record of
	// an operation a killed process left under way (settle.go): the run
	// an undo completed by the recovery is recorded as undone, one rolled
	// back or never started is not.
	Settled []string
	// UndoBack is the agentd command (as WayBack) that takes a completed
	// interrupted undo or restore back, keeping what the user wrote
	// since ("undo --restore ID"); nil when there is none.
	UndoBack []string
	// KeptBack is the agentd command (as WayBack) that takes the
	// interrupted undo's run out of the files the recovery kept as the
	// user left them ("undo RUN"): there the run's change is still in,
	// and the lines it replaced (the user's, perhaps) are only in the
	// run's ledger; undoing the run again merges, or shows the conflict
	// with the choice to keep or overwrite. nil when nothing was kept.
	KeptBack []string
	// WayBack is the agentd command (its arguments, without the binary,
	// --workspace and --state-dir, which each front end adds as its
	// other hints do) that puts the workspace back as it was before the
	// interrupted operation; nil when the store kept no snapshot of it.
	WayBack []string
}

// Recovered returns, once, what the store's recovery of an interrupted
// operation did when this session opened it (or another process's did,
// unsaid until now); nil when there is nothing to say. It waits for the
// store if it is being opened. Front ends say it before anything else.
func (s *Session) Recovered(ctx context.Context) (*Recovery, error) {
	store, err := s.Store()
	if err != nil {
		return nil, nil // no store, nothing it recovered
	}
	var j *journal.Journal
	if s.Journal != nil {
		j = s.Journal.Journal
	}
	return recoveryOf(ctx, store, j, s.log)
}

// recoveryOf reads the store's recovery report and settles the journal's
// records of interrupted operations with it (j nil: none kept).
func recoveryOf(ctx context.Context, store *gitops.Store, j *journal.Journal, log *slog.Logger) (*Recovery, error) {
	rep, err := store.Recovered(ctx)
	if err != nil {
		return nil, err
	}
	r := &Recovery{Report: rep}
	if j != nil {
		settle(ctx, store, j, rep, r, log)
	}
	if rep == nil {
		if len(r.Settled) == 0 {
			return nil, nil
		}
		return r, nil
	}
	if rep.UndoSnapshot != "" {
		id := rep.UndoSnapshot
		if len(id) > 12 {
			id = id[:12]
		}
		r.WayBack = []string{"snapshot", "restore", id}
		if rep.Outcome == gitops.RecoveryStuck {
			// The store is not in order: only a restore that
			// overwrites goes past the unfinished journal.
			r.WayBack = append(r.WayBack, "--overwrite")
		}
	}
	return r, nil
}

// Message says what was interrupted and what was done about it, file by
// file (the files kept as the user left them named, with why), and ends
// with the way back: command turns WayBack into the command the front end
// prints (the terminal's hint builder, or CommandLine).
func (r *Recovery) Message(command func(args ...string) string) string {
	rep := r.Report
	var b strings.Builder
	if rep == nil {
		b.WriteString(strings.TrimPrefix(strings.Join(r.Settled, "\n  "), "\n"))
		r.sayBack(&b, command)
		return b.String()
	}
	switch rep.Outcome {
	case gitops.RecoveryFinished:
		fmt.Fprintf(&b, "%s was interrupted; it has now been completed", rep.Operation)
	case gitops.RecoveryRolledBack:
		fmt.Fprintf(&b, "%s was interrupted; it has been rolled back", rep.Operation)
	default:
		fmt.Fprintf(&b, "%s was interrupted and could be neither completed nor rolled back: %s", rep.Operation, rep.Problem)
	}
	if len(rep.Finished) > 0 {
		fmt.Fprintf(&b, "\n  written to complete it: %s", strings.Join(rep.Finished, ", "))
	}
	if len(rep.RolledBack) > 0 {
		fmt.Fprintf(&b, "\n  put back as before it: %s", strings.Join(rep.RolledBack, ", "))
	}
	for _, k := range rep.Kept {
		fmt.Fprintf(&b, "\n  kept as you left it: %s (%s)", k.Path, k.Message)
	}
	for _, l := range r.Settled {
		fmt.Fprintf(&b, "\n  %s", l)
	}
	r.sayBack(&b, command)
	if r.WayBack != nil {
		fmt.Fprintf(&b, "\n  snapshot %s holds the workspace as it was before it; to go back to it: %s", r.WayBack[2], command(r.WayBack...))
	}
	return b.String()
}

// CommandLine is "agentd ARGS --workspace ROOT [--state-dir DIR]", quoted
// for a POSIX shell: a command an editor's message hands the user to
// paste into a terminal (the terminal names its own binary instead).
func CommandLine(root, stateDir string, args ...string) string {
	parts := []string{"agentd"}
	for _, a := range args {
		parts = append(parts, ShellQuote(a))
	}
	if root != "" {
		parts = append(parts, "--workspace", ShellQuote(root))
	}
	if stateDir != "" {
		if abs, err := filepath.Abs(stateDir); err == nil {
			stateDir = abs
		}
		parts = append(parts, "--state-dir", ShellQuote(stateDir))
	}
	return strings.Join(parts, " ")
}

// sayBack says the ways back of a settled undo: UndoBack and KeptBack.
func (r *Recovery) sayBack(b *strings.Builder, command func(args ...string) string) {
	if r.UndoBack != nil {
		fmt.Fprintf(b, "\n  to take it back, keeping what you wrote since: %s", command(r.UndoBack...))
	}
	if r.KeptBack != nil {
		fmt.Fprintf(b, "\n  to take the run's change out of the files kept as you left them too (what it replaced there comes back; where you changed its lines, a conflict to keep or overwrite): %s", command(r.KeptBack...))
	}
}
