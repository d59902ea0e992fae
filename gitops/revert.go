package gitops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/agentd/agentd/diff"
)

// The revert (Store.Revert): per file, the edits of the owners being
// reverted are folded newest first onto what the file holds now. Each
// step takes one edit back: a file exactly as the agent left it gets the
// agent's Before; a file the user changed too is merged (base the agent's
// After, ours the file now, theirs the agent's Before), so the user's
// lines stay. Merging uses diff.Merge3Revert, review's rule: a line the
// user typed next to the agent's lines is not a change of them; only an
// overlap (or an insertion at the very point of the agent's) conflicts.

// revEdit is one ledger edit in a fold, its contents loaded.
type revEdit struct {
	owner         string
	entry         LedgerEntry
	before, after *FileState
}

// revFile is one path's revert plan.
type revFile struct {
	path    string
	edits   []revEdit  // newest first
	cur     *FileState // on disk now (nil: absent)
	curPerm uint32
	target  *FileState // what the revert writes
	// conflict is set when an edit cannot be taken back cleanly.
	conflict *RevertConflict
	// gone: a file an edit created is not there any more (taken back
	// already, or moved or deleted since: by the user, or a newer run).
	gone  bool
	leave string // why the file is left alone (not a conflict)
}

// isExec reports a FileState's executable bit.
func isExec(st *FileState) bool {
	return st != nil && st.Mode&fs.ModeSymlink == 0 && st.Mode&0o111 != 0
}

func isLink(st *FileState) bool { return st != nil && st.Mode&fs.ModeSymlink != 0 }

// sameState compares two file states (content, kind, executable bit).
func sameState(a, b *FileState) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return isLink(a) == isLink(b) && (isLink(a) || isExec(a) == isExec(b)) && bytes.Equal(a.Data, b.Data)
}

// isText reports whether data can be merged line by line.
func isText(data []byte) bool { return !diff.IsBinary(data) && utf8.Valid(data) }

// revertStep takes back one edit (before -> after) from cur. It returns
// the new state, or why it cannot (then cur is returned). With
// overwrite, a conflict is settled for the agent's earlier state instead:
// in text, only the lines where the user's edit clashes with the agent's
// take the state before the edit (the user's other lines stay); anything
// else that clashes (binary, links, created or deleted files) takes the
// state before the edit whole. why is still said.
func revertStep(cur, before, after *FileState, overwrite bool) (*FileState, string) {
	next, why := revertOne(cur, before, after, overwrite)
	if why != "" && overwrite && next == cur {
		return before, why
	}
	return next, why
}

func revertOne(cur, before, after *FileState, overwrite bool) (*FileState, string) {
	switch {
	case sameState(cur, after):
		return before, ""
	case sameState(cur, before):
		return cur, "" // already taken back
	case after == nil:
		return cur, "a file now stands where the agent deleted one"
	case before == nil && cur == nil:
		return nil, "" // the agent's new file is gone already
	case before == nil && !isLink(cur) && !isLink(after) && diff.FinalNewlineOnly(cur.Data, after.Data):
		return nil, "" // only the final line break differs (diff.Merge3Revert's rule)
	case before == nil:
		return cur, "you changed the file the agent created"
	case cur == nil:
		return cur, "you deleted the file the agent changed"
	case isLink(cur) || isLink(before) || isLink(after):
		return cur, "the symlink was changed since the agent changed it"
	}
	var data []byte
	switch {
	case bytes.Equal(cur.Data, after.Data):
		data = before.Data
	case bytes.Equal(cur.Data, before.Data):
		data = cur.Data
	case !isText(cur.Data) || !isText(before.Data) || !isText(after.Data):
		return cur, "a binary file changed since the agent wrote it cannot be merged"
	default:
		merge := diff.Merge3Revert
		if overwrite {
			merge = diff.Merge3RevertTheirs
		}
		merged, conflicts := merge(after.Data, cur.Data, before.Data)
		if len(conflicts) > 0 && !overwrite {
			return cur, "you changed lines the agent wrote"
		}
		data = merged
		if len(conflicts) > 0 {
			why := "you changed lines the agent wrote"
			return revertMode(cur, before, after, data), why
		}
	}
	return revertMode(cur, before, after, data), ""
}

// revertMode is data with the executable bit taken back as the content
// was: the agent's change of the bit is reverted, the user's kept.
func revertMode(cur, before, after *FileState, data []byte) *FileState {
	exec := isExec(cur)
	if isExec(cur) == isExec(after) {
		exec = isExec(before)
	}
	mode := fs.FileMode(0o644)
	if exec {
		mode = 0o755
	}
	return &FileState{Data: data, Mode: mode}
}

// fold takes every edit of f back from f.cur: f.target, or f.conflict
// naming the owners whose edits conflict.
func (f *revFile) fold() {
	cur := f.cur
	var bad []string
	reason := ""
	for _, e := range f.edits {
		if cur == nil && e.before == nil && e.after != nil {
			f.gone = true
		}
		next, why := revertStep(cur, e.before, e.after, false)
		if why != "" {
			if reason == "" {
				reason = why
			}
			if !slices.Contains(bad, e.owner) {
				bad = append(bad, e.owner)
			}
			continue
		}
		cur = next
	}
	f.target = cur
	if reason != "" {
		f.conflict = &RevertConflict{Path: f.path, Reason: reason, Owners: bad}
	}
}

// overwriteState is what OverwriteConflicts writes: every edit of the
// fold taken back with its conflicts settled for the agent's earlier state
// (revertStep with overwrite): the user's lines that clash with the
// agent's give way, the user's other lines stay.
func (f *revFile) overwriteState() *FileState {
	cur := f.cur
	for _, e := range f.edits {
		cur, _ = revertStep(cur, e.before, e.after, true)
	}
	return cur
}

// readCur reads what f's path holds now, through directory handles.
func (s *Store) readCur(root *wsRoot, f *revFile) {
	dir, name := splitRel(f.path)
	dfd, err := root.openDir(dir, false)
	if errors.Is(err, errNotDir) {
		f.leave = "a file or symlink is where its directory goes; left as it is"
		return
	}
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		f.leave = fmt.Sprintf("its directory cannot be opened (%v); left as it is", err)
		return
	}
	defer closeDir(dfd)
	data, mode, size, err := readAt(dfd, name, s.opts.MaxFileSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case errors.Is(err, errTooLarge):
		f.leave = fmt.Sprintf("too large (%d bytes, over the snapshot size limit) to be kept for undo; left as it is", size)
	case err != nil:
		f.leave = fmt.Sprintf("cannot be read (%v) to be kept for undo; left as it is", err)
	case mode == fs.ModeDir:
		f.leave = "a directory is where the file goes; left as it is"
	case mode == fs.ModeIrregular:
		f.leave = "a special file (FIFO, socket or device) is there; left as it is"
	case mode == fs.ModeSymlink:
		f.cur = &FileState{Data: data, Mode: fs.ModeSymlink}
	default:
		f.cur = &FileState{Data: data, Mode: normMode(mode)}
		f.curPerm = uint32(mode.Perm())
	}
}

// gatherRevert loads owners' edits (each owner's newest first) under
// prefixes, by path.
func (s *Store) gatherRevert(owners []string, prefixes []string) ([]*revFile, []RestoreConflict, error) {
	byPath := map[string]*revFile{}
	var order []*revFile
	var bad []RestoreConflict
	for _, o := range owners {
		es, err := s.readLedger(o)
		if err != nil {
			return nil, nil, err
		}
		for i := len(es) - 1; i >= 0; i-- {
			e := es[i]
			if !inPaths(e.Path, prefixes) {
				continue
			}
			if err := checkRel(e.Path); err != nil {
				bad = append(bad, RestoreConflict{Path: e.Path, Message: fmt.Sprintf("the ledger of %s names it, but %v; left alone", o, err)})
				continue
			}
			before, err := s.loadState(e.Before)
			if err == nil {
				var after *FileState
				if after, err = s.loadState(e.After); err == nil {
					f := byPath[e.Path]
					if f == nil {
						f = &revFile{path: e.Path}
						byPath[e.Path] = f
						order = append(order, f)
					}
					f.edits = append(f.edits, revEdit{owner: o, entry: e, before: before, after: after})
					continue
				}
			}
			return nil, nil, fmt.Errorf("gitops: undo %s: the content of its edit of %s is missing from the snapshot store (%v); run 'agentd snapshot doctor'", o, e.Path, err)
		}
	}
	sort.Slice(order, func(i, j int) bool { return order[i].path < order[j].path })
	return order, bad, nil
}

// blameNewer looks, for a conflicting file, for edits of other owners
// recorded after the conflicting ones: if taking those back first would
// make the file revert cleanly, they are what conflicts (a newer run
// changed the same lines), and the conflict names them.
func (s *Store) blameNewer(f *revFile, reverting []string) {
	owners, err := s.ledgerOwners()
	if err != nil {
		return
	}
	earliest := f.edits[len(f.edits)-1].entry.At
	var newer []revEdit
	for _, o := range owners {
		if slices.Contains(reverting, o) {
			continue
		}
		es, err := s.readLedger(o)
		if err != nil {
			continue
		}
		for _, e := range es {
			if e.Path != f.path || !e.At.After(earliest) {
				continue
			}
			b, err1 := s.loadState(e.Before)
			a, err2 := s.loadState(e.After)
			if err1 != nil || err2 != nil {
				continue
			}
			newer = append(newer, revEdit{owner: o, entry: e, before: b, after: a})
		}
	}
	if len(newer) == 0 {
		return
	}
	sort.SliceStable(newer, func(i, j int) bool { return newer[i].entry.At.After(newer[j].entry.At) })
	trial := &revFile{path: f.path, cur: f.cur, edits: append(newer, f.edits...)}
	trial.fold()
	if trial.conflict != nil {
		return // still a conflict: the user's own change is in the way
	}
	var names []string
	for _, e := range newer {
		if !slices.Contains(names, e.owner) {
			names = append(names, e.owner)
		}
	}
	f.conflict.Owners = names
	f.conflict.Reason = fmt.Sprintf("%s changed the same lines later; undo %s first", strings.Join(names, ", "), strings.Join(names, ", "))
}

// revertOp is the journal op that puts f's target in place (ok false: the
// file already is as the target says).
func (s *Store) revertOp(f *revFile, target *FileState, sink objSink) (restoreOp, bool, error) {
	was := &opState{Absent: true}
	if f.cur != nil {
		gm := gitModeOf(f.cur.Mode)
		was = &opState{Hash: hashObject(plumbing.BlobObject, f.cur.Data).String(), Mode: uint32(gm)}
		if gm != filemode.Symlink {
			was.Perm = f.curPerm
		}
	}
	if target == nil {
		if f.cur == nil {
			return restoreOp{}, false, nil
		}
		return restoreOp{Path: f.path, Op: "delete", Was: was}, true, nil
	}
	if sameState(f.cur, target) {
		return restoreOp{}, false, nil
	}
	gm := gitModeOf(target.Mode)
	perm := uint32(0)
	if gm != filemode.Symlink && f.cur != nil && !isLink(f.cur) {
		perm = f.curPerm &^ 0o111
		if gm == filemode.Executable {
			perm |= (perm & 0o444) >> 2 // x where r
			if perm&0o100 == 0 {
				perm |= 0o100
			}
		}
	}
	h := hashObject(plumbing.BlobObject, target.Data)
	if err := sink.put(plumbing.BlobObject, h, target.Data); err != nil {
		return restoreOp{}, false, err
	}
	if f.cur != nil && !isLink(f.cur) && gm != filemode.Symlink && bytes.Equal(f.cur.Data, target.Data) {
		return restoreOp{Path: f.path, Op: "chmod", Mode: uint32(gm), Perm: perm, Hash: h.String(), Was: was}, true, nil
	}
	return restoreOp{Path: f.path, Op: "write", Mode: uint32(gm), Perm: perm, Hash: h.String(), Was: was}, true, nil
}

// unifiedDiff is the diff from a to b at p (for "see the conflicts").
func unifiedDiff(p string, a, b *FileState) string {
	var ad, bd []byte
	ap, bp := p, p
	if a == nil {
		ap = ""
	} else {
		ad = a.Data
	}
	if b == nil {
		bp = ""
	} else {
		bd = b.Data
	}
	fd := diff.Compute(ap, bp, ad, bd)
	if a != nil {
		fd.OldMode = uint32(gitModeOf(a.Mode))
	}
	if b != nil {
		fd.NewMode = uint32(gitModeOf(b.Mode))
	}
	return diff.Unified(fd)
}

// revert is Store.Revert under its checks: it finds what each file
// becomes, stops there on a dry run or a refused conflict, else takes the
// safety snapshot and applies the writes, journaled, all or nothing.
func (s *Store) revert(ctx context.Context, owners []string, opts RevertOptions) (*RevertResult, error) {
	if err := checkRevertOptions(owners, opts); err != nil {
		return nil, err
	}
	prefixes, err := s.relPaths(opts.Paths)
	if err != nil {
		return nil, fmt.Errorf("gitops: undo: %w", err)
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if s.problem != nil && !opts.DryRun {
		return nil, fmt.Errorf("gitops: undo: %w", s.problem)
	}
	res := &RevertResult{Reverted: []string{}, Created: []string{}, Deleted: []string{}, Conflicts: []RevertConflict{}, LeftAlone: []RestoreConflict{}}
	files, bad, err := s.gatherRevert(owners, prefixes)
	if err != nil {
		return nil, err
	}
	res.LeftAlone = append(res.LeftAlone, bad...)
	root, err := openWSRoot(s.root)
	if err != nil {
		return nil, fmt.Errorf("gitops: undo: %w", err)
	}
	defer root.close()

	todo, err := s.foldRevert(ctx, root, files, owners, res)
	if err != nil {
		return nil, err
	}

	// The ops, and the lists.
	var pw *packWriter
	sink := &lazyPackSink{s: s, pw: &pw}
	abort := func() {
		if pw != nil {
			pw.abort()
			pw = nil
		}
	}
	defer abort()
	ops, edits, byPath, err := s.revertOps(root, todo, opts, sink, res)
	if err != nil {
		return nil, err
	}
	if opts.DryRun || (len(res.Conflicts) > 0 && opts.OnConflict == RefuseOnConflict) {
		return res, nil
	}
	if len(ops) == 0 {
		// Nothing left to write: the edits are taken back already (a
		// review rejected them, the user undid them by hand) or every
		// conflicting file is kept. The undo is done; reporting it as
		// refused would leave the run "not undone" forever, with no
		// conflict to resolve.
		res.Applied = true
		return res, nil
	}

	undo, state, err := s.revertSafety(ctx, owners, ops, byPath)
	if err != nil {
		return nil, err
	}
	res.UndoSnapshot = undo.ID
	if pw != nil {
		idx, err := pw.finish()
		pw = nil
		if err != nil {
			return nil, fmt.Errorf("gitops: undo: store the reverted contents: %w; nothing was changed", err)
		}
		s.packWritten(idx)
	}
	if opts.RecordAs != "" {
		if err := s.recordEditsLocked(opts.RecordAs, "", edits); err != nil {
			return nil, fmt.Errorf("gitops: undo: %w; nothing was changed", err)
		}
		res.RecordedAs = opts.RecordAs
	}
	if err := s.applyRevert(ctx, owners, opts, undo, ops, state, res); err != nil {
		return nil, err
	}
	return res, nil
}

// checkRevertOptions refuses owners and options a revert cannot use,
// naming the one at fault.
func checkRevertOptions(owners []string, opts RevertOptions) error {
	for _, o := range owners {
		if err := checkOwner(o); err != nil {
			return fmt.Errorf("gitops: undo: %w", err)
		}
	}
	if opts.RecordAs != "" {
		if err := checkOwner(opts.RecordAs); err != nil {
			return fmt.Errorf("gitops: undo: record as: %w", err)
		}
	}
	switch opts.OnConflict {
	case RefuseOnConflict, KeepConflicts, OverwriteConflicts:
	default:
		return fmt.Errorf("gitops: undo: unknown conflict choice %q (use \"\", %q or %q)", opts.OnConflict, KeepConflicts, OverwriteConflicts)
	}
	return nil
}

// foldRevert finds what each file becomes: it reads the file now and
// folds the owners' edits onto it. A file it cannot touch goes to
// res.LeftAlone; a conflict goes to res.Conflicts (with the newer owners
// to undo first, and its diff) and stays in the files it returns, for
// OverwriteConflicts.
func (s *Store) foldRevert(ctx context.Context, root *wsRoot, files []*revFile, owners []string, res *RevertResult) ([]*revFile, error) {
	var todo []*revFile
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s.readCur(root, f)
		if f.leave != "" {
			res.LeftAlone = append(res.LeftAlone, RestoreConflict{Path: f.path, Message: f.leave})
			continue
		}
		f.fold()
		if f.conflict == nil && f.gone {
			// A newer run that moved or deleted the created file carries
			// its lines on: undoing this one alone would say they are
			// taken back while they are still there. The newer run is
			// named, to be undone first; a file the user deleted is
			// simply gone.
			f.conflict = &RevertConflict{Path: f.path}
			s.blameNewer(f, owners)
			if len(f.conflict.Owners) == 0 {
				f.conflict = nil
			}
		}
		if f.conflict != nil {
			s.blameNewer(f, owners)
			f.conflict.Diff = unifiedDiff(f.path, f.cur, f.overwriteState())
			res.Conflicts = append(res.Conflicts, *f.conflict)
		}
		todo = append(todo, f)
	}
	return todo, nil
}

// revertOps are the journal ops that put each file as the revert leaves
// it (their contents stored through sink), the edits they make (for
// RecordAs) and the files by path; it fills res's lists of what is
// reverted, created, deleted, overwritten or left alone.
func (s *Store) revertOps(root *wsRoot, todo []*revFile, opts RevertOptions, sink objSink, res *RevertResult) ([]restoreOp, []Edit, map[string]*revFile, error) {
	var ops []restoreOp
	var edits []Edit
	byPath := map[string]*revFile{}
	for _, f := range todo {
		target := f.target
		if f.conflict != nil {
			if opts.OnConflict != OverwriteConflicts {
				continue
			}
			target = f.overwriteState()
		}
		if target != nil {
			if why := s.blockedForRevert(root, f.path); why != "" {
				res.LeftAlone = append(res.LeftAlone, RestoreConflict{Path: f.path, Message: why})
				continue
			}
		}
		op, ok, err := s.revertOp(f, target, sink)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("gitops: undo: store the reverted content of %s: %w; nothing was changed", f.path, err)
		}
		if !ok {
			continue
		}
		byPath[f.path] = f
		ops = append(ops, op)
		edits = append(edits, Edit{Path: f.path, Before: f.cur, After: target})
		if opts.DryRun {
			res.Diffs = append(res.Diffs, RevertDiff{Path: f.path, Diff: unifiedDiff(f.path, f.cur, target)})
		}
		switch {
		case f.conflict != nil:
			res.Overwritten = append(res.Overwritten, f.path)
		case target == nil:
			res.Deleted = append(res.Deleted, f.path)
		case f.cur == nil:
			res.Created = append(res.Created, f.path)
		default:
			res.Reverted = append(res.Reverted, f.path)
		}
	}
	return ops, edits, byPath, nil
}

// revertSafety takes the safety snapshot: everything the revert touches,
// as it is now (ignored files and those the scan skipped amended in). It
// refuses a file created or changed since it was read, and returns the
// snapshot and the files' states a rollback puts back.
func (s *Store) revertSafety(ctx context.Context, owners []string, ops []restoreOp, byPath map[string]*revFile) (*Snapshot, map[string]*fileRec, error) {
	s.changed = true
	unsaved := false
	undo, scan, err := s.snapshotLocked(ctx, SnapshotOptions{Label: "before undo of " + strings.Join(owners, ", "), kind: KindSafety, unsavedCache: &unsaved}, manRefPrefix)
	if err != nil {
		return nil, nil, fmt.Errorf("gitops: undo: safety snapshot failed, nothing was changed: %w", err)
	}
	if unsaved {
		s.saveCacheAsync()
	}
	extra := map[string]*fileRec{}
	data := map[string][]byte{}
	var absent []string
	state := map[string]*fileRec{}
	for _, op := range ops {
		f := byPath[op.Path]
		var rec *fileRec
		if f.cur != nil {
			rec = &fileRec{path: f.path, mode: gitModeOf(f.cur.Mode), hash: plumbing.NewHash(op.Was.Hash), perm: f.curPerm}
			state[f.path] = rec
		}
		sc, inScan := scan.lookup(f.path)
		switch {
		case rec == nil && inScan:
			return nil, nil, fmt.Errorf("gitops: undo: %s was created while the undo was being prepared; nothing was changed, try again", f.path)
		case rec == nil:
			if s.files.Ignored(f.path, false) {
				absent = append(absent, f.path)
			}
		case inScan && (sc.hash != rec.hash || sc.mode != rec.mode):
			return nil, nil, fmt.Errorf("gitops: undo: %s changed while the undo was being prepared; nothing was changed, try again", f.path)
		case !inScan:
			extra[f.path] = rec
			data[f.path] = f.cur.Data
		}
	}
	if len(extra) > 0 || len(absent) > 0 {
		// Ignored files (and those the scan skipped) the revert touches.
		if undo, err = s.amendSafety(ctx, undo, extra, data, absent, nil); err != nil {
			return nil, nil, fmt.Errorf("gitops: undo: saving ignored files for undo failed, nothing was changed: %w", err)
		}
	}
	return undo, state, nil
}

// applyRevert makes the revert's writes: journaled, all or nothing (a
// failed write rolls back to state). It marks the revert finished for
// its RecordAs owner before the journal goes, then records what it
// wrote, and sets res.Applied.
func (s *Store) applyRevert(ctx context.Context, owners []string, opts RevertOptions, undo *Snapshot, ops []restoreOp, state map[string]*fileRec, res *RevertResult) error {
	sortOps(ops)
	j := &restoreJournal{Kind: "revert", Owner: opts.RecordAs, Undo: undo.ID, Nonce: newNonce(), Phase: phaseApply, Ops: ops, Kept: revertKept(res)}
	if err := s.writeJournal(j); err != nil {
		return fmt.Errorf("gitops: undo: write the journal %s: %w; nothing was changed", filepath.Join(s.dir, journalName), err)
	}
	a, err := s.newApplier(j.Nonce, nil)
	if err != nil {
		return fmt.Errorf("gitops: undo: %w; nothing was changed", err)
	}
	defer a.close()
	a.own = true
	a.verify = verifyStrict
	if done, err := a.applyOps(ctx, ops); err != nil {
		return s.rollback(ctx, j, done, state, err, nil)
	}
	if opts.RecordAs != "" {
		// Said before the journal goes: a process killed after this
		// leaves no journal to recover, and its caller's record of the
		// undo (still under way) is settled by RevertFinished, which
		// must not guess from the files (the user may have changed
		// every one of them since).
		if err := s.markReverted(opts.RecordAs, &FinishedRevert{Kept: j.Kept}); err != nil {
			s.log.Warn("gitops: could not mark the undo as finished; if this process dies before its caller records it, the next open guesses from the files", "owner", opts.RecordAs, "err", err)
		}
	}
	if err := s.finishJournal(a, ops); err != nil {
		return fmt.Errorf("gitops: undo: %w", err)
	}
	res.Applied = true
	s.recordRevertResult(ctx, owners, ops)
	return nil
}

// recordRevertResult records the KindRestored snapshot of what a revert
// wrote, as a restore records its result: the next restore's protection
// base then counts the files the revert wrote as agentd's (a restore
// after an undo puts them back instead of calling them the user's), and
// every other file keeps its state in the previous base, so the user's
// edits elsewhere, and the conflicts the revert kept, stay the user's.
// Its tree is the base's patched with the revert's own ops (what they
// left each path as): no second walk of the workspace, which on a large
// tree cost as much as the rest of the undo. If it fails the revert
// stands; the next restore compares with an older base, which can only
// report more conflicts, never overwrite more. The caller holds the
// store lock.
func (s *Store) recordRevertResult(ctx context.Context, owners []string, ops []restoreOp) {
	all, err := s.snapshots("")
	if err != nil {
		return
	}
	var base *Snapshot
	for _, sn := range all { // newest first
		if sn.Kind == KindRun || sn.Kind == KindRestored {
			base = sn
			break
		}
	}
	if base == nil {
		return // nothing counts as the agent's yet: a restore asks for overwrite anyway
	}
	if _, err := s.commitPatched(ctx, base, "after undo of "+strings.Join(owners, ", "), ops); err != nil {
		s.log.Warn("gitops: could not record what the undo wrote; the next restore compares with an older snapshot and may report more conflicts", "dir", s.dir, "err", err)
	}
}

// commitPatched commits a KindRestored snapshot labelled label: base's
// tree and metadata with each op's path as the op left it (an ignored
// path only if it is kept, as a scan would record it). Its recorded
// changes are against base.
func (s *Store) commitPatched(ctx context.Context, base *Snapshot, label string, ops []restoreOp) (*Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := s.readCommit(plumbing.NewHash(base.ID))
	if err != nil {
		return nil, fmt.Errorf("read the base snapshot %s: %w", short(base.ID), err)
	}
	bm, err := parseCommitMessage(c.Message)
	if err != nil {
		bm = &snapMeta{}
	}
	kept, err := s.loadKept()
	if err != nil {
		return nil, err
	}
	meta := &snapMeta{Label: label, CreatedAt: time.Now().UTC(), Kind: KindRestored, Files: bm.Files, Skipped: bm.Skipped,
		DefaultPerm: bm.DefaultPerm, DefaultExecPerm: bm.DefaultExecPerm, Perms: maps.Clone(bm.Perms), EmptyDirs: bm.EmptyDirs, Kept: slices.Clone(bm.Kept)}
	ov := make(map[string]*treeFile, len(ops))
	var paths []string
	for _, op := range ops {
		_, isKept := kept[op.Path]
		if op.Op == "mkdir" || (!isKept && s.files.Ignored(op.Path, false)) {
			continue
		}
		if isKept && !slices.Contains(meta.Kept, op.Path) {
			meta.Kept = append(meta.Kept, op.Path)
		}
		paths = append(paths, op.Path)
		switch op.Op {
		case "write", "chmod":
			f := &treeFile{mode: filemode.FileMode(op.Mode), hash: plumbing.NewHash(op.Hash)}
			if f.mode != filemode.Symlink {
				f.perm = permOf(op)
			}
			ov[op.Path] = f
		case "delete":
			ov[op.Path] = nil
		}
	}
	sort.Strings(meta.Kept)
	old, err := s.lookupFiles(c.TreeHash, paths)
	if err != nil {
		return nil, fmt.Errorf("read the base snapshot %s: %w", short(base.ID), err)
	}
	var changes []FileChange
	for p, f := range ov {
		o, inBase := old[p]
		switch {
		case f == nil && inBase:
			changes = append(changes, FileChange{Path: p, Kind: ChangeDeleted})
			meta.Files--
		case f != nil && !inBase:
			changes = append(changes, FileChange{Path: p, Kind: ChangeAdded})
			meta.Files++
		case f != nil && (o.hash != f.hash || o.mode != f.mode && (o.mode == filemode.Symlink || f.mode == filemode.Symlink)):
			changes = append(changes, FileChange{Path: p, Kind: ChangeModified})
		case f != nil && o.mode != f.mode:
			changes = append(changes, FileChange{Path: p, Kind: ChangeMode})
		}
		delete(meta.Perms, p)
		if f != nil && f.perm != 0 && f.perm != meta.perm(p, f.mode) {
			if meta.Perms == nil {
				meta.Perms = map[string]uint32{}
			}
			meta.Perms[p] = f.perm
		}
	}
	slices.SortFunc(changes, func(a, b FileChange) int { return treeOrder(a.Path, b.Path) })
	meta.FilesChanged = len(changes)
	if len(changes) > MaxRecordedChanges {
		meta.ChangesOmitted = len(changes) - MaxRecordedChanges
		changes = changes[:MaxRecordedChanges]
	}
	meta.Changes = changes

	var pw *packWriter
	sink := &lazyPackSink{s: s, pw: &pw}
	defer func() {
		if pw != nil {
			pw.abort()
		}
	}()
	s.changed = true
	root, err := s.patchTree(c.TreeHash, ov, sink)
	if err != nil {
		return nil, fmt.Errorf("patch the base snapshot's tree: %w", err)
	}
	msg, err := commitMessage(meta)
	if err != nil {
		return nil, err
	}
	sig := agentdSig
	sig.When = meta.CreatedAt
	ch, data, err := encodeObject(&object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: root})
	if err != nil {
		return nil, err
	}
	if err := sink.put(plumbing.CommitObject, ch, data); err != nil {
		return nil, err
	}
	if pw != nil {
		idx, err := pw.finish()
		pw = nil
		if err != nil {
			return nil, err
		}
		s.packWritten(idx)
	}
	return s.setSnapshotRef(ch, manRefPrefix, meta)
}

// blockedForRevert says why a file cannot be written at p (a file or
// symlink where one of its directories goes); "" if it can.
func (s *Store) blockedForRevert(root *wsRoot, p string) string {
	dir, _ := splitRel(p)
	if dir == "" {
		return ""
	}
	dfd, err := root.openDir(dir, false)
	switch {
	case err == nil:
		closeDir(dfd)
		return ""
	case errors.Is(err, fs.ErrNotExist):
		return ""
	case errors.Is(err, errNotDir):
		return "a file or symlink is where its directory goes; left as it is"
	}
	return fmt.Sprintf("its directory cannot be opened (%v); left as it is", err)
}

// revertKept are the files the revert res leaves as they are on purpose:
// its conflicts not overwritten, and the files it left alone, with why.
func revertKept(res *RevertResult) []RestoreConflict {
	var kept []RestoreConflict
	for _, c := range res.Conflicts {
		if !slices.Contains(res.Overwritten, c.Path) {
			kept = append(kept, RestoreConflict{Path: c.Path, Message: "a conflict with the undo (" + c.Reason + "); kept as it is"})
		}
	}
	return append(kept, res.LeftAlone...)
}

// FinishedRevert is what the store keeps of a revert that made all its
// writes (RevertFinished).
type FinishedRevert struct {
	// Kept are the files it left as they are on purpose: its conflicts
	// (KeepConflicts) and the files it left alone, with why.
	Kept []RestoreConflict `json:"kept,omitempty"`
}

// revertedPath is the mark a revert whose writes are recorded under owner
// (RevertOptions.RecordAs) leaves once they are all made: beside owner's
// ledger, agentd/ledger/<owner>.reverted.
func (s *Store) revertedPath(owner string) string {
	return strings.TrimSuffix(s.ledgerPath(owner), ".jsonl") + ".reverted"
}

// markReverted durably marks the revert recorded under owner as having
// made all its writes, with what it kept.
func (s *Store) markReverted(owner string, fin *FinishedRevert) error {
	data, err := json.Marshal(fin)
	if err != nil {
		return err
	}
	return writeFileAtomic(s.revertedPath(owner), data, 0o644, syncWrites)
}

// RevertFinished says whether the revert whose writes are recorded under
// owner (RevertOptions.RecordAs) made all of them (nil: it did not), and
// what it kept: it is marked so in the store before its journal is
// removed (or when the recovery of its journal completes it). A caller
// that recorded the revert as under way and died before recording it as
// done (so that no journal was left to recover, or the recovery's report
// was read) asks this: nil means it made no write (it stopped before its
// journal, or failed and was rolled back), whatever the files hold now.
func (s *Store) RevertFinished(ctx context.Context, owner string) (*FinishedRevert, error) {
	if err := checkOwner(owner); err != nil {
		return nil, fmt.Errorf("gitops: undo finished: %w", err)
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	name := s.revertedPath(owner)
	data, err := os.ReadFile(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("gitops: undo finished: read %s: %w", name, err)
	}
	var fin FinishedRevert
	if err := json.Unmarshal(data, &fin); err != nil {
		// Written atomically: damaged only by hand. It was finished.
		return &FinishedRevert{}, fmt.Errorf("gitops: undo finished: %s is damaged (%v); what it kept is not known", name, err)
	}
	return &fin, nil
}
