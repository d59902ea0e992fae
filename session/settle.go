package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/internal/platform"
	"github.com/agentd/agentd/journal"
)

// An undo, an undo of a restore and a restore are recorded in the
// workspace's journal as under way (journal.Pending) before they write
// anything, and as done (journal.Restore, the run marked undone) after.
// A process killed in between leaves the pending record; the store's
// recovery at the next open completes or rolls back the operation itself
// (gitops/recovery.go), and settle brings the journal in line with what
// it did, so that `agentd runs`, the next `agentd undo` and
// `agentd undo --restore` tell the truth:
//
//   - completed: the record is written as done (its safety snapshot and
//     the files the recovery kept as the user left them with it), the
//     run it undid marked undone (or the restore it undid marked undone),
//     and it is offered to `undo --restore`;
//   - rolled back, stuck, or never started: the pending record is
//     dropped; the run stays as it was.
//
// A pending record whose process is alive is that process's business and
// left alone. One whose process died with no recovery to report was
// killed before its writes began or after they ended: a revert is taken
// as done when a file holds what its ledger says the revert wrote.

// settle settles the pending records of j with rep (the store's recovery
// report, nil when it had nothing to recover), adding what it did to r.
func settle(ctx context.Context, store *gitops.Store, j *journal.Journal, rep *gitops.RecoveryReport, r *Recovery, log *slog.Logger) {
	defer j.LockUndo()()
	ps, err := j.PendingRestores()
	if err != nil {
		log.Error("the journal's records of interrupted undos cannot be read; runs may be shown not undone though they are", "err", err)
		return
	}
	for _, p := range ps {
		owner := p.Restore.Owner
		var done bool
		var why string
		var kept []gitops.RestoreConflict // what a revert with no recovery to report kept
		switch {
		case rep != nil && owner != "" && rep.Owner == owner:
			done = rep.Outcome == gitops.RecoveryFinished
			why = "it was " + rep.Outcome
			if rep.Outcome == gitops.RecoveryStuck {
				why = "it could be neither completed nor rolled back"
			}
		case p.PID == os.Getpid() || platform.ProcessExists(p.PID):
			continue // under way in a live process
		default:
			if have, err := j.RestoreByID(p.Restore.ID); err == nil && have != nil {
				// Recorded as done (an undo that wrote nothing, keeping
				// every conflict, leaves the store no mark), and stopped
				// before its front end showed it (UndoOptions.ShowLater).
				done = true
				break
			}
			if !p.Reset {
				done, kept = revertFinished(ctx, store, owner, log)
			}
			why = "it stopped before it wrote anything, or was rolled back"
			if done {
				why = "it was stopped after it wrote everything, before it was recorded"
			}
		}
		var line string
		if done {
			line, err = completePending(ctx, store, j, p, rep, kept, r)
		} else {
			line, err = dropPending(j, p, why)
		}
		if err != nil {
			log.Error("an interrupted undo cannot be settled in the journal", "id", p.Restore.ID, "err", err)
			line = fmt.Sprintf("%s was interrupted; what became of it cannot be recorded: %v", whatPending(p), err)
		}
		r.Settled = append(r.Settled, line)
	}
}

// whatPending names the operation p records.
func whatPending(p journal.Pending) string {
	rec := p.Restore
	switch {
	case rec.Undo != "":
		return "the undo of " + rec.Undo
	case rec.RunID != "":
		return "the undo of run " + rec.RunID
	case len(rec.RunIDs) > 0:
		return "the undo of runs " + strings.Join(rec.RunIDs, ", ")
	}
	return "the restore to " + short(rec.SnapshotID)
}

// completePending records p as done (the recovery rep completed it, or
// it had written everything, keeping finKept), with what follows from
// it, and says so.
func completePending(ctx context.Context, store *gitops.Store, j *journal.Journal, p journal.Pending, rep *gitops.RecoveryReport, finKept []gitops.RestoreConflict, r *Recovery) (string, error) {
	rec := p.Restore
	var kept []string
	if rep != nil {
		if rec.Before == "" {
			rec.Before = rep.UndoSnapshot
		}
		finKept = append(rep.Kept, finKept...)
	}
	for _, k := range finKept {
		if !slices.Contains(rec.Kept, k.Path) && !slices.Contains(kept, k.Path) {
			kept = append(kept, k.Path)
		}
	}
	rec.Kept = append(rec.Kept, kept...)
	if p.Reset {
		// A restore's writes are recorded from its snapshots once it ran:
		// what the recovery left, on the files the restore was to write
		// and the user did not change since.
		owner := rec.Owner
		rec.Owner = ""
		if rep != nil && rep.UndoSnapshot != "" && rep.ResultSnapshot != "" {
			var paths []string
			for _, path := range rep.Paths {
				if !slices.Contains(kept, path) {
					paths = append(paths, path)
				}
			}
			if len(paths) > 0 && store.RecordSnapshotEdits(ctx, owner, "", rep.UndoSnapshot, rep.ResultSnapshot, paths) == nil {
				rec.Owner = owner
			}
		}
	}
	have, err := j.RestoreByID(rec.ID)
	if err != nil {
		return "", err
	}
	if have == nil {
		if _, err := j.RecordRestore(rec); err != nil {
			return "", err
		}
	} else {
		// Recorded as done by the process that did it, which was
		// stopped before its front end showed the result
		// (UndoOptions.ShowLater): said here instead.
		rec.Kept = have.Kept
	}
	keptSaid := ""
	if len(rec.Kept) > 0 {
		keptSaid = ", except " + strings.Join(rec.Kept, ", ") + ", kept as you left it"
	}
	var line string
	switch {
	case rec.Undo != "":
		target, err := j.RestoreByID(rec.Undo)
		if err != nil {
			return "", err
		}
		line = fmt.Sprintf("%s is now recorded as undone", rec.Undo)
		if target != nil {
			if target.Undone == nil {
				if err := j.MarkRestoreUndone(*target); err != nil {
					return "", err
				}
			}
			if target.RunID != "" {
				if err := j.Unmark(target.RunID); err != nil {
					return "", err
				}
				line = fmt.Sprintf("the undo of run %s (%s) is now recorded as undone%s: run %s is no longer undone", target.RunID, rec.Undo, keptSaid, target.RunID)
				r.UndoBack = []string{"undo", target.RunID}
			}
			for _, id := range target.RunIDs {
				if err := j.Unmark(id); err != nil {
					return "", err
				}
			}
			if len(target.RunIDs) > 0 {
				line = fmt.Sprintf("the undo of runs %s (%s) is now recorded as undone%s: they are no longer undone", strings.Join(target.RunIDs, ", "), rec.Undo, keptSaid)
			}
		}
	case rec.RunID != "":
		if err := j.MarkUndoneBy(rec.RunID, journal.Undone{How: journal.HowUndo, UndoID: rec.ID, Kept: rec.Kept}); err != nil {
			return "", err
		}
		line = fmt.Sprintf("run %s is now recorded as undone (by undo %s)%s", rec.RunID, rec.ID, keptSaid)
		r.UndoBack = []string{"undo", "--restore", rec.ID}
		if len(rec.Kept) > 0 {
			// The run's change is still in the kept files, and what it
			// replaced there (the user's lines, perhaps) only in its
			// ledger: undoing the run again brings that back.
			r.KeptBack = []string{"undo", rec.RunID}
		}
	case len(rec.RunIDs) > 0:
		for _, id := range rec.RunIDs {
			if err := j.MarkUndoneBy(id, journal.Undone{How: journal.HowUndo, UndoID: rec.ID, Kept: rec.Kept}); err != nil {
				return "", err
			}
		}
		line = fmt.Sprintf("runs %s are now recorded as undone (by undo %s)%s", strings.Join(rec.RunIDs, ", "), rec.ID, keptSaid)
		r.UndoBack = []string{"undo", "--restore", rec.ID}
	default:
		line = fmt.Sprintf("the restore to %s is recorded as %s%s", short(rec.SnapshotID), rec.ID, keptSaid)
		r.UndoBack = []string{"undo", "--restore", rec.ID}
	}
	if have != nil {
		line = "an undo was stopped before its result was shown: " + line
	}
	var wrote, maybe []string
	for _, p := range ledgerPaths(ctx, store, rec.Owner) {
		if !slices.Contains(rec.Kept, p) {
			wrote = append(wrote, p)
		} else {
			// Kept as the user left it, and in its ledger: it was to
			// write it, and may have before it stopped (the user
			// changed it since): what it replaced is in its way back.
			maybe = append(maybe, p)
		}
	}
	if len(wrote) > 0 {
		// Name what it wrote: a user's line it overwrote is then named
		// here, with the way back (UndoBack) beside it.
		line += "; it wrote " + strings.Join(wrote, ", ")
	}
	if len(maybe) > 0 {
		line += "; it may have written " + strings.Join(maybe, ", ") + " before it stopped"
	}
	return line, j.EndPending(rec.ID)
}

// ledgerPaths are the files owner's ledger names, in the order first
// written (none when owner is empty or its ledger cannot be read).
func ledgerPaths(ctx context.Context, store *gitops.Store, owner string) []string {
	if owner == "" {
		return nil
	}
	es, err := store.Ledger(ctx, owner)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range es {
		if !slices.Contains(out, e.Path) {
			out = append(out, e.Path)
		}
	}
	return out
}

// dropPending forgets p, which did not happen (why says so), and says so.
func dropPending(j *journal.Journal, p journal.Pending, why string) (string, error) {
	rec := p.Restore
	var line string
	switch {
	case rec.Undo != "":
		line = fmt.Sprintf("%s was not undone (%s)", rec.Undo, why)
	case rec.RunID != "":
		line = fmt.Sprintf("run %s is not undone: the undo of it is not recorded (%s)", rec.RunID, why)
	case len(rec.RunIDs) > 0:
		line = fmt.Sprintf("runs %s are not undone: the undo of them is not recorded (%s)", strings.Join(rec.RunIDs, ", "), why)
	default:
		line = fmt.Sprintf("the restore to %s is not recorded (%s)", short(rec.SnapshotID), why)
	}
	return line, j.EndPending(rec.ID)
}

// revertFinished says whether the revert whose writes the store recorded
// under owner made them all: the store marks it so before it removes its
// journal (gitops.Store.RevertFinished). The files are not asked: the
// user may have changed every one the revert wrote since it was killed,
// and a revert taken for not done then would name none of them, though
// with overwrite it took lines of the user's there (the safety snapshot
// and the way back hold them). A revert of an older agentd, which left
// no mark, is taken as done when a file holds what it wrote.
// What it kept (its conflicts, the files it left alone) the store says
// too: the settled record names them, as the undo would have.
func revertFinished(ctx context.Context, store *gitops.Store, owner string, log *slog.Logger) (bool, []gitops.RestoreConflict) {
	if owner == "" {
		return false, nil
	}
	fin, err := store.RevertFinished(ctx, owner)
	if err != nil {
		log.Error("whether an interrupted undo finished, or what it kept, cannot be told from the store", "owner", owner, "err", err)
	}
	if fin != nil {
		return true, fin.Kept
	}
	return revertWritten(ctx, store, owner), nil
}

// revertWritten says whether the revert whose writes the store recorded
// under owner wrote them: some file holds what the ledger says the revert
// left in it. (The store records a revert's writes before it makes
// them; an owner with no entries wrote nothing.)
func revertWritten(ctx context.Context, store *gitops.Store, owner string) bool {
	if owner == "" {
		return false
	}
	entries, err := store.Ledger(ctx, owner)
	if err != nil || len(entries) == 0 {
		return false
	}
	newest := map[string]gitops.LedgerEntry{}
	for _, e := range entries {
		if have, ok := newest[e.Path]; !ok || e.Seq > have.Seq {
			newest[e.Path] = e
		}
	}
	for path, e := range newest {
		if fileHolds(filepath.Join(store.Root(), filepath.FromSlash(path)), e.After) {
			return true
		}
	}
	return false
}

// fileHolds says whether the file at abs is ref (nil: absent).
func fileHolds(abs string, ref *gitops.BlobRef) bool {
	fi, err := os.Lstat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return ref == nil
	}
	if err != nil || ref == nil {
		return false
	}
	var data []byte
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(abs)
		if err != nil {
			return false
		}
		data = []byte(filepath.ToSlash(target))
	} else if fi.Mode().IsRegular() {
		if data, err = os.ReadFile(abs); err != nil {
			return false
		}
	} else {
		return false
	}
	return plumbing.ComputeHash(plumbing.BlobObject, data).String() == ref.Hash
}
