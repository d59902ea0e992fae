package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/journal"
	"github.com/agentd/agentd/workspace"
)

// Undo is a revert, restore is a reset (docs/protocol.md "Undo"). Undo of
// a run takes back what the run wrote, recorded in the store's ledger
// under "run/<runID>", with a three-way merge onto what the files hold
// now (gitops.Store.Revert), so the user's lines stay; its own writes are
// recorded under "undo/<undoID>", so undoing the undo is a revert too. A
// restore to a snapshot resets files; its writes are recorded under
// "restore/<restoreID>" right after it ran, so undoing it is a revert
// too. The same rule for every front end: they only word the result.

// ErrNoJournal: the workspace's journal could not be opened (logged at
// start), so nothing about runs, restores or rules is known.
var ErrNoJournal = errors.New("the workspace's journal could not be opened (see the log); runs, undo and rules are unavailable")

// UndoOptions say how to undo.
type UndoOptions struct {
	// DryRun computes everything (conflicts and their diffs included)
	// and changes nothing.
	DryRun bool
	// OnConflict is what to do where the user changed the agent's own
	// lines: refuse (the default: nothing changes, the conflicts are
	// named), keep those files as they are and undo the rest, or
	// overwrite them behind a safety snapshot.
	OnConflict gitops.ConflictChoice
	// ShowLater keeps the undo recorded as under way after it is done,
	// until the front end has shown its result and calls Shown(Unshown):
	// a process killed in between (the undo done, its result never
	// printed) leaves it to the next open, which says what it did and
	// its way back (settle.go), so what it overwrote is never named
	// nowhere. A front end that shows the result as it returns (the
	// editor server's answer) leaves it false.
	ShowLater bool
}

// UndoResult is what an undo did (or would do, DryRun; or refused to do:
// Applied false, Conflicts say why), in one shape for every front end.
type UndoResult struct {
	// Applied: the undo was done (or would be, DryRun). False when a
	// conflict and no choice stopped it: then nothing changed.
	Applied bool
	DryRun  bool
	// UndoID is the undo's own record (journal.Restore.ID), set when it
	// was applied: undoing it (UndoRestore(UndoID)) is the way back.
	UndoID string
	// Unshown (UndoOptions.ShowLater) is what to pass to Shown once the
	// result is shown ("" when nothing waits for it).
	Unshown string
	// Owner is what was taken back: "run/<id>", "undo/<id>",
	// "restore/<id>" (empty when a snapshot was restored instead).
	Owner       string
	Reverted    []string
	Created     []string
	Deleted     []string
	Conflicts   []gitops.RevertConflict
	Overwritten []string
	LeftAlone   []gitops.RestoreConflict
	// Kept are the conflicting files left as they are (KeepConflicts).
	Kept []string
	// Diffs (DryRun) are the files the undo would write, each with its
	// unified diff from what it holds now.
	Diffs []gitops.RevertDiff
	// UndoSnapshot is the safety snapshot taken before anything was
	// written.
	UndoSnapshot string
	// BySnapshot, when set, says why this undo restored a snapshot
	// instead of reverting (what it undoes was recorded before undo
	// became a revert); Restore is then that restore's result.
	BySnapshot string
	Restore    *gitops.RestoreResult
}

// restore is the one restore of every front end, unrecorded, around the
// editor's buffers.
func (s *Session) restore(ctx context.Context, id string, opts gitops.RestoreOptions) (*gitops.RestoreResult, error) {
	store, err := s.Store()
	if err != nil {
		return nil, err
	}
	if s.Buffers != nil && !opts.DryRun {
		dry := opts
		dry.DryRun = true
		if plan, err := store.Restore(ctx, id, dry); err == nil {
			s.Buffers.ReadBuffers(ctx, append(append([]string(nil), plan.Restored...), plan.Deleted...))
		}
	}
	res, extra, err := RestoreAroundBuffers(ctx, store, s.WS, id, opts)
	if res != nil {
		res.Conflicts = append(res.Conflicts, extra...)
	}
	if err != nil || opts.DryRun || s.Buffers == nil {
		return res, err
	}
	failed := s.Buffers.WriteBuffers(ctx, BufferWrite{Reason: "restoring snapshot " + short(id) + " put the restored text into the buffer",
		Written: append(append([]string(nil), res.Restored...), res.Created...), Deleted: res.Deleted,
		Refresh: BuffersToRefresh(s.WS, res, opts.Paths)})
	res.Conflicts = append(res.Conflicts, failed...)
	return res, nil
}

// Restore restores the workspace to snapshot id (protected: what someone
// else changed is a conflict unless opts.Overwrite) and records it in the
// journal, with its writes in the ledger under "restore/<ID>", so that
// "undo restore" from any front end reverts exactly what it wrote.
func (s *Session) Restore(ctx context.Context, id string, opts gitops.RestoreOptions) (*gitops.RestoreResult, error) {
	res, _, err := s.recordedRestore(ctx, id, opts, journal.Restore{}, "restore/")
	return res, err
}

// recordedRestore restores id and records it (unless a dry run): its
// journal record rec, its writes in the ledger under ownerPrefix+ID. The
// record is kept as under way (journal.Pending) while the restore
// writes: if the process is killed, the next open settles it with what
// the store's recovery did (settle.go).
func (s *Session) recordedRestore(ctx context.Context, id string, opts gitops.RestoreOptions, rec journal.Restore, ownerPrefix string) (*gitops.RestoreResult, journal.Restore, error) {
	if opts.DryRun || s.Journal == nil {
		res, err := s.restore(ctx, id, opts)
		return res, rec, err
	}
	rec.At = time.Now().UTC()
	rec.ID = journal.NewRestoreID(rec.At)
	rec.SnapshotID = id
	owner := ownerPrefix + rec.ID
	opts.Owner = owner
	pending := journal.Pending{Restore: rec, Reset: true}
	pending.Restore.Owner = owner
	if _, err := s.Journal.BeginPending(pending); err != nil {
		return nil, rec, fmt.Errorf("recording the restore as under way in the journal: %w; nothing was changed", err)
	}
	res, err := s.restore(ctx, id, opts)
	if err != nil {
		if store, serr := s.Store(); serr == nil {
			s.failedPending(store, rec.ID)
		}
		return res, rec, err
	}
	rec.Before = res.UndoSnapshot
	written := slices.Concat(res.Restored, res.Created, res.Deleted)
	if len(written) > 0 && res.UndoSnapshot != "" && res.ResultSnapshot != "" {
		store, _ := s.Store()
		if err := store.RecordSnapshotEdits(ctx, owner, "", res.UndoSnapshot, res.ResultSnapshot, written); err == nil {
			rec.Owner = owner
		} else {
			// Undoing it restores the safety snapshot instead (protected).
			s.log.Error("the restore's writes are not in the ledger; undoing it will restore its safety snapshot instead", "snapshot", id, "err", err)
		}
	}
	rec, jerr := s.Journal.RecordRestore(rec)
	if jerr != nil {
		// The restore happened; only its undo record is missing.
		s.log.Error("the restore is done but not recorded; undo restore will not find it", "snapshot", id, "err", jerr)
	}
	s.endPending(rec.ID)
	return res, rec, nil
}

// beginUndo records the undo rec (a revert of what something wrote, its
// own writes under rec.Owner) as under way before it writes anything.
func (s *Session) beginUndo(rec journal.Restore) error {
	if _, err := s.Journal.BeginPending(journal.Pending{Restore: rec}); err != nil {
		return fmt.Errorf("recording the undo as under way in the journal: %w; nothing was changed", err)
	}
	return nil
}

// failedPending settles the pending record id of an operation that
// failed: forgotten, unless the store could not roll it back (Problem):
// then its recovery at the next open finishes it or rolls it back and
// settles the record with it.
func (s *Session) failedPending(store *gitops.Store, id string) {
	if store.Problem() == nil {
		s.endPending(id)
	}
}

// Shown says the front end has shown the result of an undo made with
// UndoOptions.ShowLater (its UndoResult.Unshown): it is no longer under
// way. An empty id does nothing.
func (s *Session) Shown(id string) {
	if id != "" && s.Journal != nil {
		s.endPending(id)
	}
}

// endUnlessShownLater ends the pending record id of a revert when it
// returns, unless the revert was applied and opts.ShowLater asks the
// front end to end it once shown (then res.Unshown names it).
func (s *Session) endUnlessShownLater(id string, opts UndoOptions, res *UndoResult) {
	if opts.ShowLater && res != nil && res.Applied && !res.DryRun {
		res.Unshown = id
		return
	}
	s.endPending(id)
}

// endPending forgets the pending record id: the operation is recorded as
// done, or did not happen.
func (s *Session) endPending(id string) {
	if err := s.Journal.EndPending(id); err != nil {
		// The next open settles it (the process is gone by then).
		s.log.Error("the journal's record of an undo or restore under way cannot be removed", "id", id, "err", err)
	}
}

// UndoRunResult is what undoing a run did (protocol agentd/undo/run).
type UndoRunResult struct {
	UndoResult
	RunID string
	// SnapshotID is the run's start snapshot.
	SnapshotID string
	Run        *engine.RunState
	// Leftovers is what the undo could not take back (nil: nothing).
	Leftovers *Leftovers
}

// UndoRun undoes a run: with runID "" the newest run not yet undone (so a
// second undo undoes the run before), else the run whose ID is runID or
// starts with it, alone: newer runs stay as they are. What the run wrote
// is reverted (gitops.Store.Revert of "run/<runID>"); a conflict the user
// has not chosen how to handle changes nothing and comes back in
// Conflicts, each naming the newer runs that changed the same file. The
// journal records the undo and marks the run undone only when it was
// applied (with the files kept, KeepConflicts). A run recorded before
// undo became a revert (no ledger, only snapshots) is undone by the
// protected restore of its start snapshot, said in BySnapshot. A run that
// took no snapshots is a *journal.NoSnapshotsError naming it.
func (s *Session) UndoRun(ctx context.Context, runID string, opts UndoOptions) (*UndoRunResult, error) {
	if s.Journal == nil {
		return nil, ErrNoJournal
	}
	defer s.Journal.LockUndo()()
	st, err := s.Journal.RunToUndo(runID)
	if err != nil {
		return nil, err
	}
	store, err := s.Store()
	if err != nil {
		return nil, err
	}
	out := &UndoRunResult{RunID: st.RunID, SnapshotID: st.Snapshots[0], Run: st}
	owner := "run/" + st.RunID
	entries, err := store.Ledger(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("undoing run %s: reading what it wrote: %w", st.RunID, err)
	}
	var res *UndoResult
	id := journal.NewRestoreID(time.Now())
	rec := journal.Restore{ID: id, SnapshotID: st.Snapshots[0], Owner: "undo/" + id, RunID: st.RunID}
	if len(entries) > 0 || !s.changedWithoutLedger(ctx, store, st) {
		if !opts.DryRun {
			if err := s.beginUndo(rec); err != nil {
				return nil, fmt.Errorf("undoing run %s: %w", st.RunID, err)
			}
		}
		res, err = s.revert(ctx, store, []string{owner}, id, opts, "undoing run "+st.RunID, nil)
		if err != nil {
			s.failedPending(store, id)
			return nil, fmt.Errorf("undoing run %s: %w", st.RunID, err)
		}
		if !opts.DryRun {
			defer func() {
				s.endUnlessShownLater(id, opts, &out.UndoResult)
			}()
		}
	}
	if res == nil {
		res, err := s.undoBySnapshot(ctx, st.Snapshots[0], s.runPaths(ctx, store, st), opts, journal.Restore{RunID: st.RunID},
			fmt.Sprintf("run %s was recorded before undo became a revert (it has no ledger): it is undone by restoring its files from its start snapshot %s instead (protected)", st.RunID, short(st.Snapshots[0])))
		if err != nil {
			return nil, fmt.Errorf("undoing run %s: %w", st.RunID, err)
		}
		out.UndoResult = *res
	} else {
		if err := s.nameNewerRuns(ctx, store, st, res.Conflicts); err != nil {
			return nil, err
		}
		out.UndoResult = *res
		if res.Applied && !opts.DryRun {
			rec.Before, rec.Kept = res.UndoSnapshot, res.Kept
			if _, err := s.Journal.RecordRestore(rec); err != nil {
				s.log.Error("the undo is done but not recorded; undo restore will not find it", "run", st.RunID, "err", err)
			}
			out.UndoID = id
		}
	}
	if out.Applied && !opts.DryRun {
		if err := s.Journal.MarkUndoneBy(st.RunID, journal.Undone{How: journal.HowUndo, UndoID: out.UndoID, Kept: out.Kept}); err != nil {
			return nil, fmt.Errorf("run %s is undone but that is not recorded (the next undo would pick it again): %w", st.RunID, err)
		}
		// Its change sets still open (review after: on disk, not yet
		// reviewed) are closed with it: the undo took their writes back.
		if s.Book != nil {
			if _, err := s.Book.Withdraw(context.WithoutCancel(ctx), st.RunID, "the run was undone"); err != nil {
				s.log.Warn("the undone run's open change sets are still listed as pending", "run", st.RunID, "err", err)
			}
		}
		s.chats.Undid(ctx, st.RunID) // the chat turn that ran it, if any
	}
	out.Leftovers = s.Leftovers(ctx, st.RunID, st.SkippedFiles)
	return out, nil
}

// changedWithoutLedger says whether run st, which has no ledger, changed
// the workspace by its snapshots: then it was recorded before undo became
// a revert. A run whose snapshots all agree wrote nothing to revert. Nor
// did a run that applied no change and ran no command: every write is in
// the ledger before it is made, so its snapshots can differ only by the
// user's edits (a step that failed or was rejected is snapshotted with
// the file the user typed into while it waited), and restoring its start
// snapshot would take those edits.
func (s *Session) changedWithoutLedger(ctx context.Context, store *gitops.Store, st *engine.RunState) bool {
	if len(st.FilesChanged) == 0 && !ranCommand(st) {
		return false
	}
	if len(st.Snapshots) < 2 {
		return true
	}
	fds, err := store.Diff(ctx, st.Snapshots[0], st.Snapshots[len(st.Snapshots)-1])
	return err != nil || len(fds) > 0
}

// ranCommand says whether run st ran a command (its snapshot before one).
func ranCommand(st *engine.RunState) bool {
	for _, l := range st.SnapshotLabels {
		if strings.HasPrefix(l, "before a command") {
			return true
		}
	}
	return false
}

// revert takes back owner's edits around the editor's buffers, its own
// writes recorded under "undo/<id>". A file the revert would write whose
// buffer holds the user's unsaved edits is a conflict (UnsavedUndoReason)
// and is never written, whatever opts.OnConflict says; the clean open
// buffers of the files it wrote get the new text (EditorBuffers). The
// files in exclude are left out (an undo's files it kept as the user
// left them: it never wrote them, whatever its ledger says).
func (s *Session) revert(ctx context.Context, store *gitops.Store, owners []string, id string, opts UndoOptions, why string, exclude []string) (*UndoResult, error) {
	var entries []gitops.LedgerEntry
	for _, owner := range owners {
		es, err := store.Ledger(ctx, owner)
		if err != nil {
			return nil, fmt.Errorf("reading the ledger of %s: %w", owner, err)
		}
		entries = append(entries, es...)
	}
	var paths []string
	limited := false // some file is excluded
	for _, e := range entries {
		switch {
		case slices.Contains(exclude, e.Path):
			limited = true
		case !slices.Contains(paths, e.Path):
			paths = append(paths, e.Path)
		}
	}
	if s.Buffers != nil && !opts.DryRun && len(paths) > 0 {
		s.Buffers.ReadBuffers(ctx, paths)
	}
	var unsaved, rest []string
	for _, p := range paths {
		if b, ok := s.WS.Buffer(p); ok && b.UserUnsaved {
			unsaved = append(unsaved, p)
		} else {
			rest = append(rest, p)
		}
	}
	ro := gitops.RevertOptions{DryRun: opts.DryRun, OnConflict: opts.OnConflict, RecordAs: "undo/" + id}
	refuse := opts.OnConflict == gitops.RefuseOnConflict
	if len(unsaved) > 0 || limited {
		// The unsaved (and excluded) files are taken out; with no choice
		// made, nothing is written at all (a conflict changes nothing).
		ro.Paths = rest
		if refuse && len(unsaved) > 0 {
			ro.DryRun = true
		}
	}
	res := &gitops.RevertResult{Applied: true}
	if (len(unsaved) == 0 && !limited) || len(rest) > 0 {
		var err error
		if res, err = store.Revert(ctx, owners, ro); err != nil {
			return nil, err
		}
	}
	for _, p := range unsaved {
		var by []string
		for _, e := range entries {
			if e.Path == p && !slices.Contains(by, e.Owner) {
				by = append(by, e.Owner)
			}
		}
		res.Conflicts = append(res.Conflicts, gitops.RevertConflict{Path: p, Reason: UnsavedUndoReason, Owners: by})
	}
	if opts.DryRun {
		// Whether it would apply (the store's dry run writes nothing and
		// says nothing of it): no conflict, or a choice made.
		res.Applied = len(res.Conflicts) == 0 && len(unsaved) == 0 || !refuse
	}
	if len(unsaved) > 0 && refuse {
		res.Applied = false
	}
	slices.SortFunc(res.Conflicts, func(a, b gitops.RevertConflict) int { return strings.Compare(a.Path, b.Path) })
	out := &UndoResult{Applied: res.Applied, DryRun: opts.DryRun, Owner: strings.Join(owners, " "), Diffs: res.Diffs, Reverted: res.Reverted, Created: res.Created,
		Deleted: res.Deleted, Conflicts: res.Conflicts, Overwritten: res.Overwritten, LeftAlone: res.LeftAlone, UndoSnapshot: res.UndoSnapshot}
	if res.Applied {
		for _, c := range res.Conflicts {
			if !slices.Contains(res.Overwritten, c.Path) {
				out.Kept = append(out.Kept, c.Path)
			}
		}
	}
	if res.Applied && !opts.DryRun && s.Buffers != nil {
		written := slices.Concat(res.Reverted, res.Created, res.Overwritten)
		var skip []string
		for _, c := range res.Conflicts {
			skip = append(skip, c.Path)
		}
		for _, c := range res.LeftAlone {
			skip = append(skip, c.Path)
		}
		// The buffers to refresh are those of the files this revert
		// covers: not the excluded ones (it never wrote them), and none
		// at all when it covers no file (an empty scope is not "all").
		skip = append(skip, exclude...)
		var refresh []workspace.BufferState
		if len(paths) > 0 {
			refresh = buffersToRefresh(s.WS, written, skip, paths)
		}
		failed := s.Buffers.WriteBuffers(ctx, BufferWrite{Reason: why + " put the undone text into the buffer", Written: written,
			Deleted: res.Deleted, Refresh: refresh})
		out.LeftAlone = append(out.LeftAlone, failed...)
	}
	return out, nil
}

// nameNewerRuns adds to each conflict the newer runs, not undone, that
// wrote the same file: undoing an older run reverses that run alone, and
// a conflict with a newer run's lines says which run it is.
func (s *Session) nameNewerRuns(ctx context.Context, store *gitops.Store, st *engine.RunState, conflicts []gitops.RevertConflict) error {
	if len(conflicts) == 0 {
		return nil
	}
	runs, err := s.Journal.Runs()
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r.RunID == st.RunID || r.Undone != nil || !r.StartTime.After(st.StartTime) {
			continue
		}
		owner := "run/" + r.RunID
		entries, err := store.Ledger(ctx, owner)
		if err != nil {
			return fmt.Errorf("reading the ledger of run %s: %w", r.RunID, err)
		}
		for i := range conflicts {
			c := &conflicts[i]
			if slices.Contains(c.Owners, owner) || !slices.ContainsFunc(entries, func(e gitops.LedgerEntry) bool { return e.Path == c.Path }) {
				continue
			}
			c.Owners = append(c.Owners, owner)
			c.Reason += fmt.Sprintf(" (run %s, newer, changed this file too)", r.RunID)
		}
	}
	return nil
}

// runPaths are the files run st changed by its snapshots (nil: it took
// only its start snapshot, so every file is in question).
func (s *Session) runPaths(ctx context.Context, store *gitops.Store, st *engine.RunState) []string {
	if len(st.Snapshots) < 2 {
		return nil
	}
	fds, err := store.Diff(ctx, st.Snapshots[0], st.Snapshots[len(st.Snapshots)-1])
	if err != nil {
		return nil
	}
	var paths []string
	for _, fd := range fds {
		for _, p := range []string{fd.OldPath, fd.NewPath} {
			if p != "" && !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	return paths
}

// undoBySnapshot is the undo of something recorded before undo became a
// revert: the protected restore of snapshot snap (limited to paths, when
// given: the files a run changed, so a file it never touched is neither
// restored nor a conflict), with the same choices (a conflict and no
// choice changes nothing). why is said in BySnapshot.
func (s *Session) undoBySnapshot(ctx context.Context, snap string, paths []string, opts UndoOptions, rec journal.Restore, why string) (*UndoResult, error) {
	ro := gitops.RestoreOptions{Paths: paths, DryRun: opts.DryRun, Overwrite: opts.OnConflict == gitops.OverwriteConflicts}
	if opts.OnConflict == gitops.RefuseOnConflict && !opts.DryRun {
		dry := ro
		dry.DryRun = true
		plan, err := s.restore(ctx, snap, dry)
		if err != nil {
			return nil, err
		}
		if len(plan.Conflicts) > 0 {
			out := fromRestore(plan, opts, why)
			out.Applied = false
			return out, nil
		}
	}
	res, rec, err := s.recordedRestore(ctx, snap, ro, rec, "undo/")
	if err != nil {
		return nil, err
	}
	out := fromRestore(res, opts, why)
	if opts.DryRun {
		out.Applied = len(res.Conflicts) == 0 || opts.OnConflict != gitops.RefuseOnConflict
	} else {
		out.UndoID = rec.ID
		for _, c := range res.Conflicts {
			out.Kept = append(out.Kept, c.Path)
		}
	}
	return out, nil
}

// fromRestore is a restore's result as an undo's.
func fromRestore(res *gitops.RestoreResult, opts UndoOptions, why string) *UndoResult {
	out := &UndoResult{Applied: true, DryRun: opts.DryRun, Reverted: res.Restored, Created: res.Created, Deleted: res.Deleted,
		LeftAlone: res.LeftAlone, UndoSnapshot: res.UndoSnapshot, BySnapshot: why, Restore: res}
	for _, c := range res.Conflicts {
		out.Conflicts = append(out.Conflicts, gitops.RevertConflict{Path: c.Path, Reason: c.Message})
	}
	return out
}

// UndoRestoreResult is what undoing a restore or an undo did.
type UndoRestoreResult struct {
	UndoResult
	Undid journal.Restore
}

// UndoRestore undoes a restore or an undo (from any front end): with id
// "" the newest not yet undone, else the one whose ID is id or starts
// with it. What it wrote is reverted (its ledger owner), so what the user
// wrote after it stays; one recorded before undo became a revert restores
// its safety snapshot instead (protected, said in BySnapshot). Undoing the
// undo of a run makes that run the one "undo" means again. Conflicts and
// choices as for UndoRun. journal.ErrNoRestoreToUndo when there is none.
func (s *Session) UndoRestore(ctx context.Context, id string, opts UndoOptions) (*UndoRestoreResult, error) {
	if s.Journal == nil {
		return nil, ErrNoJournal
	}
	defer s.Journal.LockUndo()()
	r, err := s.Journal.RestoreToUndo(id)
	if err != nil {
		return nil, err
	}
	what := "the restore to " + short(r.SnapshotID)
	if r.RunID != "" {
		what = "the undo of run " + r.RunID
	} else if len(r.RunIDs) > 0 {
		what = "the undo of runs " + strings.Join(r.RunIDs, ", ")
	}
	out := &UndoRestoreResult{Undid: *r}
	var res *UndoResult
	nid := journal.NewRestoreID(time.Now())
	rec := journal.Restore{ID: nid, Owner: "undo/" + nid, Undo: r.ID}
	if r.Owner != "" {
		store, err := s.Store()
		if err != nil {
			return nil, err
		}
		if !opts.DryRun {
			if err := s.beginUndo(rec); err != nil {
				return nil, fmt.Errorf("undoing %s: %w", what, err)
			}
		}
		res, err = s.revert(ctx, store, []string{r.Owner}, nid, opts, "undoing "+what, r.Kept)
		if err != nil {
			s.failedPending(store, nid)
			return nil, fmt.Errorf("undoing %s: %w", what, err)
		}
		if !opts.DryRun {
			defer func() {
				s.endUnlessShownLater(nid, opts, &out.UndoResult)
			}()
		}
	}
	if res == nil {
		res, err := s.undoBySnapshot(ctx, r.Before, nil, opts, journal.Restore{Undo: r.ID},
			what+" was recorded before undo became a revert: it is undone by restoring its safety snapshot "+short(r.Before)+" instead (protected)")
		if err != nil {
			return nil, fmt.Errorf("undoing %s: %w", what, err)
		}
		out.UndoResult = *res
	} else {
		out.UndoResult = *res
		if res.Applied && !opts.DryRun {
			rec.Before, rec.Kept = res.UndoSnapshot, res.Kept
			if _, err := s.Journal.RecordRestore(rec); err != nil {
				s.log.Error("the undo is done but not recorded", "undid", r.ID, "err", err)
			}
		}
	}
	// An undo of an undo is not itself offered to UndoRestore: its way
	// back is undoing the run again (or restoring the snapshot again).
	out.UndoID = ""
	if out.Applied && !opts.DryRun {
		if err := s.Journal.MarkRestoreUndone(*r); err != nil {
			return nil, fmt.Errorf("the restore is undone but that is not recorded: %w", err)
		}
		if r.RunID != "" {
			if err := s.Journal.Unmark(r.RunID); err != nil {
				return nil, fmt.Errorf("run %s is back but still recorded as undone: %w", r.RunID, err)
			}
			s.chats.Redone(ctx, r.RunID) // its chat turn is not undone any more
		}
		for _, id := range r.RunIDs { // one undo of several runs (a chat's restore)
			if err := s.Journal.Unmark(id); err != nil {
				return nil, fmt.Errorf("run %s is back but still recorded as undone: %w", id, err)
			}
			s.chats.Redone(ctx, id)
		}
	}
	return out, nil
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// sessionLedger is the engine's ledger with its revert (a run's rollback
// on failure) going through the session's, around the editor's buffers:
// a file with unsaved user edits is never written under them, and the
// clean open buffers of the files it wrote get the new text, as an undo
// from any front end does.
type sessionLedger struct {
	engine.Ledger
	s *Session
}

// RecordSnapshotEditsOver records a command's effect from the user's
// saves made while it ran (engine.SavesLedger), when the ledger can.
func (l sessionLedger) RecordSnapshotEditsOver(ctx context.Context, owner, step, from, to string, saved map[string]*gitops.FileState) error {
	if sl, ok := l.Ledger.(engine.SavesLedger); ok {
		return sl.RecordSnapshotEditsOver(ctx, owner, step, from, to, saved)
	}
	return l.Ledger.RecordSnapshotEdits(ctx, owner, step, from, to, nil)
}

func (l sessionLedger) Revert(ctx context.Context, owners []string, opts gitops.RevertOptions) (*gitops.RevertResult, error) {
	id, ok := strings.CutPrefix(opts.RecordAs, "undo/")
	if len(owners) != 1 || !ok || len(opts.Paths) > 0 {
		return l.Ledger.Revert(ctx, owners, opts)
	}
	store, err := l.s.Store()
	if err != nil {
		return nil, err
	}
	u, err := l.s.revert(ctx, store, owners, id, UndoOptions{DryRun: opts.DryRun, OnConflict: opts.OnConflict}, "the rollback", nil)
	if err != nil {
		return nil, err
	}
	res := &gitops.RevertResult{Applied: u.Applied, Reverted: u.Reverted, Created: u.Created, Deleted: u.Deleted,
		Conflicts: u.Conflicts, LeftAlone: u.LeftAlone, Overwritten: u.Overwritten, UndoSnapshot: u.UndoSnapshot}
	if u.Applied && !opts.DryRun {
		res.RecordedAs = opts.RecordAs
	}
	return res, nil
}
