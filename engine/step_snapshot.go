package engine

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"

	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

// What undo takes back is the ledger, not the snapshots (ledger.go,
// docs/undo.md): every write of a run is recorded as the agent's edit,
// with the file's state just before and after it, when it is made (a
// line the user typed into the file meanwhile is in the edit's before
// state, so an undo, a three-way revert, keeps it). A command's effect is
// recorded from the snapshots around it: from the run's snapshot taken
// before the step's first command to the snapshot after the step
// (recordCommands), its before states read from the disk as that first
// snapshot scanned it (gitops keeps a limited snapshot's disk tree), so a
// line the user typed earlier in the run, which the limited snapshot
// leaves out, is not counted as the command's. The snapshots themselves say what the workspace held
// at each moment: restore-to-snapshot (a reset) and the step's diff use
// them, and they are limited as follows.
//
// Each snapshot after a step is limited (gitops.SnapshotLimit) to what the
// step changed; every other path keeps its version in the run's previous
// snapshot. So a file the user edits while a step runs or waits (in the
// editor or on disk) is never recorded as the agent's, and restoring the
// run's start keeps it, reported as a conflict.
//
//   - File tools, change sets and the file tools of agent steps: the
//     engine knows the paths (both paths of a move).
//   - Commands (run_command) and git's write actions may write anything.
//     A snapshot is taken when the first of them starts (recording nothing
//     new from the disk unless another command ran since the previous
//     snapshot), and while any runs, every path that changes on disk is
//     the run's. So the user's edits made before a command started stay
//     the user's. A file the user saves in the editor while a command
//     runs (didSave: workspace.SavedSince) is the user's too: the
//     command's effect on it is recorded from what was saved. An edit
//     another program makes on disk meanwhile cannot be told from the
//     command's and counts as the agent's (the restore's undo snapshot
//     still holds it).

// stepSnapshots serialises a run's snapshots (so the list is in time
// order) and keeps what decides their limits.
type stepSnapshots struct {
	mu       sync.Mutex
	commands int  // commands running now
	dirty    bool // a command ran since the run's last snapshot
}

// snapshot takes the snapshot after the worker's step.
func (w *worker) snapshot(ctx context.Context) {
	s := w.s
	s.snapOrder.mu.Lock()
	defer s.snapOrder.mu.Unlock()
	info, ok := w.snapshotLocked(ctx, "after "+w.j.step.ID)
	if s.snapOrder.commands == 0 {
		s.snapOrder.dirty = false
	}
	from := w.cmdFrom
	w.cmdFrom = ""
	if !ok {
		if from != "" {
			w.output("log", fmt.Sprintf("agentd: what the commands of step %s changed is not recorded for undo: no snapshot after the step\n", w.j.step.ID))
		}
		return
	}
	if from != "" {
		w.recordCommands(ctx, from, info.ID)
		w.offerUnchecked(ctx, from, info.ID, w.nameUnchecked(ctx, from, info.ID))
	}
	w.recordIgnored(ctx)
	w.res.snapshotID = info.ID
	w.emit(Event{Type: EventSnapshotTaken, SnapshotID: info.ID, Reason: "after step"})
}

// commandStarted is called before a tool that may write anything runs
// (a command, a git write); the returned func when it has ended.
func (w *worker) commandStarted(ctx context.Context) func() {
	s := w.s
	if s.cfg.Snapshots == nil || s.opts.DryRun {
		return func() {}
	}
	s.snapOrder.mu.Lock()
	if s.snapOrder.commands == 0 {
		// What changed before the command started is not the command's
		// (unless an earlier command of the run wrote it).
		w.snapshotLocked(ctx, "before a command of "+w.j.step.ID)
	}
	if snaps := s.r.snapshots(); w.cmdFrom == "" && len(snaps) > 0 {
		// The command's effect is what changed from here to the
		// snapshot after the step (recordCommands).
		w.cmdFrom = snaps[len(snaps)-1]
		if s.cfg.WS != nil {
			w.cmdSaves = s.cfg.WS.SaveSeq()
		}
		w.ignoredBefore(ctx)
	}
	s.snapOrder.commands++
	s.snapOrder.dirty = true
	s.snapOrder.mu.Unlock()
	return func() {
		s.snapOrder.mu.Lock()
		s.snapOrder.commands--
		s.snapOrder.mu.Unlock()
	}
}

// recordCommands records in the ledger, as the step's edits, what changed
// between the snapshot from before the step's first command and the one
// after the step: the commands' effect (and the step's own writes, which
// are recorded already: taking an edit back twice changes nothing more).
// The command has run: a failure is said, it cannot stop the write.
func (w *worker) recordCommands(ctx context.Context, from, to string) {
	s := w.s
	if s.recorder() == nil {
		return
	}
	var saved map[string][]byte
	if s.cfg.WS != nil {
		saved = s.cfg.WS.SavedSince(w.cmdSaves)
	}
	var err error
	if sl, ok := s.cfg.Ledger.(SavesLedger); ok && len(saved) > 0 {
		// The files the user saved in the editor while the commands ran:
		// their effect starts from what was saved.
		states := make(map[string]*gitops.FileState, len(saved))
		for p, data := range saved {
			states[p] = &gitops.FileState{Data: data}
		}
		err = sl.RecordSnapshotEditsOver(context.WithoutCancel(ctx), RunOwner(s.r.id), w.j.step.ID, from, to, states)
	} else {
		err = s.cfg.Ledger.RecordSnapshotEdits(context.WithoutCancel(ctx), RunOwner(s.r.id), w.j.step.ID, from, to, nil)
	}
	if err != nil {
		s.log.Warn("recording a command's effect failed", "step", w.j.step.ID, "from", from, "to", to, "err", err)
		w.output("log", fmt.Sprintf("agentd: what the commands of step %s changed is not recorded for undo (%v); agentd snapshot restore %s brings back the state before them\n", w.j.step.ID, err, from))
	}
}

// SnapshotDiffer is implemented by a Snapshotter that can say which paths
// differ between two snapshots (session.Snapshotter: gitops.Store.Diff).
type SnapshotDiffer interface {
	ChangedPaths(ctx context.Context, from, to string) ([]string, error)
}

// nameUnchecked names what the step's commands and calls of tools that
// run outside agentd (MCP tools: tools.UncheckedWriter) changed in the
// workspace, between the snapshot before the step's first such call or
// command and the one after the step: the files are the step's changed
// files (the summary's "Files changed", the snapshot limits), and for an
// MCP call the step's output says them. recordCommands has recorded them
// for undo. It returns the paths an MCP call may have changed (none when
// the step called no MCP tool).
func (w *worker) nameUnchecked(ctx context.Context, from, to string) []string {
	w.mu.Lock()
	names := slices.Clone(w.unchecked)
	w.mu.Unlock()
	d, ok := w.s.cfg.Snapshots.(SnapshotDiffer)
	if !ok {
		return nil
	}
	paths, err := d.ChangedPaths(context.WithoutCancel(ctx), from, to)
	if err != nil {
		w.s.log.Warn("listing what an MCP call changed failed", "step", w.j.step.ID, "err", err)
		what := strings.Join(names, ", ")
		if what == "" {
			what = "the commands of step " + w.j.step.ID
		}
		w.output("log", fmt.Sprintf("agentd: what %s changed in the workspace cannot be listed (%v); agentd snapshot diff %s %s shows it\n",
			what, err, from, to))
		return nil
	}
	w.mu.Lock()
	var extra []string // not written by the step's own change sets
	for _, p := range paths {
		if !slices.Contains(w.res.files, p) {
			extra = append(extra, p)
		}
	}
	w.res.files = append(w.res.files, extra...)
	w.mu.Unlock()
	if len(names) == 0 {
		return nil // a command's files: named in the summary, not offered
	}
	if len(extra) > 0 {
		w.output("log", fmt.Sprintf("agentd: step %s (%s, outside agentd's own tools) changed in the workspace: %s; recorded as the run's, undo takes it back\n",
			w.j.step.ID, strings.Join(names, ", "), strings.Join(extra, ", ")))
	}
	return extra
}

// SnapshotReader is implemented by a Snapshotter that can read one file
// of a snapshot (session.Snapshotter: gitops.Store.FileAt): found is
// false when the snapshot does not hold the file.
type SnapshotReader interface {
	FileAt(ctx context.Context, id, path string) (data []byte, mode fs.FileMode, found bool, err error)
}

// offerUnchecked makes what the step's MCP calls changed in the
// workspace (paths, named by nameUnchecked; from the snapshot before the
// first such call to the one after the step) a change set of the step,
// announced (changeProposed: ACP shows its diffs on the step's tool call)
// and, unless the run reviews nothing, offered for review as an applied
// one (review mode after, whatever the run's mode: it is written already),
// so the editors show it as pending hunks the user can reject (a
// take-out, recorded in the ledger like any other). Undo takes it back
// either way (recordCommands).
func (w *worker) offerUnchecked(ctx context.Context, from, to string, paths []string) {
	s := w.s
	rd, ok := s.cfg.Snapshots.(SnapshotReader)
	if len(paths) == 0 || !ok {
		return
	}
	ctx = context.WithoutCancel(ctx)
	cs := &workspace.ChangeSet{ID: newChangeID(s.r.id, w.j.step.ID), RunID: s.r.id, StepID: w.j.step.ID}
	for _, p := range paths {
		old, oldMode, oldOK, err := rd.FileAt(ctx, from, p)
		var cur []byte
		var curMode fs.FileMode
		var curOK bool
		if err == nil {
			cur, curMode, curOK, err = rd.FileAt(ctx, to, p)
		}
		if err != nil {
			s.log.Warn("reading what an MCP call changed failed", "step", w.j.step.ID, "path", p, "err", err)
			w.output("log", fmt.Sprintf("agentd: %s is not offered for review (%v); undo still takes it back\n", p, err))
			continue
		}
		if oldMode&fs.ModeSymlink != 0 || curMode&fs.ModeSymlink != 0 {
			continue // a link is not reviewed as text; undo takes it back
		}
		if fc := workspace.ChangeBetween(p, old, oldMode, oldOK, cur, curMode, curOK); fc != nil {
			cs.Files = append(cs.Files, fc)
		}
	}
	if len(cs.Files) == 0 {
		return
	}
	s.r.addChange(cs)
	w.mu.Lock()
	w.res.changeIDs = append(w.res.changeIDs, cs.ID)
	w.mu.Unlock()
	w.emit(Event{Type: EventChangeProposed, ChangeID: cs.ID, Reason: fmt.Sprintf("%d file(s) changed by an MCP tool", len(cs.Files))})
	if s.cfg.Reviewer == nil || s.review == ReviewNone {
		return // shown, not reviewed (ACP shows its diffs)
	}
	if err := s.cfg.Reviewer.OfferAfter(ctx, cs); err != nil {
		s.log.Warn("offering an MCP call's change for review failed", "step", w.j.step.ID, "change", cs.ID, "err", err)
	}
}

// snapshotLocked takes one snapshot of the run, limited as the rule above
// says, and adds it to the run's list. The caller holds s.snapOrder.mu.
func (w *worker) snapshotLocked(ctx context.Context, label string) (SnapshotInfo, bool) {
	s := w.s
	req := SnapshotRequest{RunID: s.r.id, StepID: w.j.step.ID, Label: label}
	if snaps := s.r.snapshots(); len(snaps) > 0 {
		req.Limit = &gitops.SnapshotLimit{Base: snaps[len(snaps)-1], Paths: w.stepPaths(), ChangedOnDisk: s.snapOrder.dirty}
	}
	info, err := s.cfg.Snapshots.Snapshot(context.WithoutCancel(ctx), req)
	if err != nil {
		s.log.Warn("snapshot failed", "step", w.j.step.ID, "label", label, "err", err)
		w.output("log", fmt.Sprintf("agentd: snapshot (%s) failed: %v\n", label, err))
		return SnapshotInfo{}, false
	}
	s.r.addSnapshot(info, label)
	return info, true
}

// stepPaths are the paths the step's applied change sets touched, with
// the old path of each move.
func (w *worker) stepPaths() []string {
	w.mu.Lock()
	paths := slices.Clone(w.res.files)
	ids := slices.Clone(w.res.changeIDs)
	w.mu.Unlock()
	touched := map[string]bool{}
	for _, p := range paths {
		touched[p] = true
	}
	for _, id := range ids {
		cs, ok := w.s.r.Change(id)
		if !ok {
			continue
		}
		for _, f := range cs.Files {
			if touched[f.Path] && f.OldPath != "" && f.OldPath != f.Path && !touched[f.OldPath] {
				touched[f.OldPath] = true
				paths = append(paths, f.OldPath)
			}
		}
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// PreImageKeeper is implemented by a Snapshotter that keeps, before a
// step's file tool changes them, the pre-images of files snapshots do not
// hold (ignored files: gitops.Store.Keep), so that every file the agent's
// own tools change can be undone. An error means a file cannot be saved
// for undo: the change is not made.
type PreImageKeeper interface {
	KeepPreImages(ctx context.Context, paths []string) error
}

// keepPreImages keeps the pre-images of the change set's paths (both
// paths of a move) before anything writes them.
func (w *worker) keepPreImages(ctx context.Context, cs *workspace.ChangeSet) error {
	k, ok := w.s.cfg.Snapshots.(PreImageKeeper)
	if !ok || w.s.opts.DryRun {
		return nil
	}
	var paths []string
	for _, f := range cs.Files {
		paths = append(paths, f.Path)
		if f.OldPath != "" && f.OldPath != f.Path {
			paths = append(paths, f.OldPath)
		}
	}
	if err := k.KeepPreImages(ctx, paths); err != nil {
		return fmt.Errorf("step %q: change %s not made: %w", w.j.step.ID, cs.ID, err)
	}
	return nil
}
