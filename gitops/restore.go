package gitops

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/agentd/agentd/workspace"
)

// relPaths turns RestoreOptions.Paths into clean slash-separated prefixes
// ("" = everything).
func (s *Store) relPaths(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		rel := p
		if filepath.IsAbs(p) {
			r, err := filepath.Rel(s.root, p)
			if err != nil {
				return nil, &workspace.PathError{Path: p, Err: workspace.ErrOutsideRoot}
			}
			rel = r
		}
		rel = path.Clean(filepath.ToSlash(rel))
		if rel == ".." || strings.HasPrefix(rel, "../") || strings.HasPrefix(rel, "/") {
			return nil, &workspace.PathError{Path: p, Err: workspace.ErrOutsideRoot}
		}
		if rel == "." {
			rel = ""
		}
		out = append(out, rel)
	}
	return out, nil
}

func inPaths(p string, prefixes []string) bool {
	if len(prefixes) == 0 {
		return true
	}
	for _, pre := range prefixes {
		if hasPrefixPath(p, pre) {
			return true
		}
	}
	return false
}

// Restore makes the workspace (or opts.Paths) match snapshot id, after a
// safety snapshot of everything it will touch, writing only what differs,
// through directory handles (wsfs.go). Without Overwrite, files someone
// else changed since the protection base are conflicts (see
// ProtectionBase); files it must not or cannot touch are listed in
// LeftAlone with why. Ignored files, by the current ignore rules or the
// target's, are never deleted.
func (s *Store) Restore(ctx context.Context, id string, opts RestoreOptions) (*RestoreResult, error) {
	prefixes, err := s.relPaths(opts.Paths)
	if err != nil {
		return nil, fmt.Errorf("gitops: restore: %w", err)
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	target, err := s.getLocked(id)
	if err != nil {
		return nil, err
	}
	if s.problem != nil && !opts.Overwrite {
		return nil, fmt.Errorf("gitops: restore to %s: %w", short(target.ID), s.problem)
	}
	var sinceID string
	switch {
	case opts.Overwrite:
	case opts.Since != "":
		sn, err := s.getLocked(opts.Since)
		if err != nil {
			return nil, fmt.Errorf("gitops: restore: the snapshot the agent left (since): %w", err)
		}
		sinceID = sn.ID
	default:
		if sinceID, err = s.protectionBaseLocked(target); err != nil {
			return nil, err
		}
	}
	tc, err := s.readCommit(plumbing.NewHash(target.ID))
	if err != nil {
		return nil, fmt.Errorf("gitops: restore: read snapshot %s: %w", target.ID, err)
	}
	tmeta, err := parseCommitMessage(tc.Message)
	if err != nil {
		tmeta = &snapMeta{}
	}

	// What is there now: the safety snapshot's scan (or, for a dry run, a
	// scan that writes nothing).
	var cur *scanResult
	result := &RestoreResult{Restored: []string{}, Created: []string{}, Deleted: []string{}, Conflicts: []RestoreConflict{}, LeftAlone: []RestoreConflict{}}
	var want map[string]treeFile
	var candidates []string
	var undo *Snapshot
	unsaved := false // the safety snapshot left the stat cache to save
	if opts.DryRun {
		if cur, _, err = s.scan(ctx, nil); err != nil {
			return nil, fmt.Errorf("gitops: restore (dry run): %w", err)
		}
		if want, err = s.flatten(tc.TreeHash); err != nil {
			return nil, fmt.Errorf("gitops: restore: read snapshot %s: %w", target.ID, err)
		}
		for p := range want {
			candidates = append(candidates, p)
		}
		for p := range cur.byPath() {
			if _, ok := want[p]; !ok {
				candidates = append(candidates, p)
			}
		}
	} else {
		var res *scanResult
		undo, res, err = s.snapshotLocked(ctx, SnapshotOptions{Label: "before restore to " + short(target.ID), kind: KindSafety, unsavedCache: &unsaved}, manRefPrefix)
		if err != nil {
			return nil, fmt.Errorf("gitops: restore: safety snapshot failed, nothing was changed: %w", err)
		}
		cur = res
		result.UndoSnapshot = undo.ID
		// The cache is now the workspace's state, trees included: only the
		// directories whose trees differ need looking at.
		if want, candidates, err = s.differingFiles(tc.TreeHash, s.cache); err != nil {
			return nil, fmt.Errorf("gitops: restore: read snapshot %s: %w", target.ID, err)
		}
		// Permission bits are not in the trees: files whose bits differ.
		inCand := make(map[string]bool, len(candidates))
		for _, p := range candidates {
			inCand[p] = true
		}
		var same []string
		for _, r := range cur.files {
			if r.mode != filemode.Symlink && r.perm != 0 && r.perm != tmeta.perm(r.path, r.mode) && !inCand[r.path] {
				same = append(same, r.path)
			}
		}
		if len(same) > 0 {
			found, err := s.lookupFiles(tc.TreeHash, same)
			if err != nil {
				return nil, fmt.Errorf("gitops: restore: read snapshot %s: %w", target.ID, err)
			}
			for p, f := range found {
				want[p] = f
				candidates = append(candidates, p)
			}
		}
	}
	// Paths the target's safety record says were absent: delete them
	// again even if they are ignored (protected like any other file).
	absentT := map[string]bool{}
	for _, p := range tmeta.Absent {
		absentT[p] = true
		if _, ok := cur.lookup(p); !ok {
			candidates = append(candidates, p)
		}
	}
	// Kept paths (ignored files the agent changed, kept.go): the target
	// records them, or stands for their pre-images.
	kept, err := s.loadKept()
	if err != nil {
		return nil, fmt.Errorf("gitops: restore: %w", err)
	}
	if len(kept) > 0 || len(tmeta.Kept) > 0 {
		kp := slices.Concat(kept.paths(), tmeta.Kept)
		inTree, err := s.lookupFiles(tc.TreeHash, kp)
		if err != nil {
			return nil, fmt.Errorf("gitops: restore: read snapshot %s: %w", target.ID, err)
		}
		for p, f := range inTree {
			if _, ok := want[p]; !ok {
				want[p] = f
			}
		}
		for _, p := range tmeta.Kept {
			if _, ok := inTree[p]; !ok {
				absentT[p] = true
			}
		}
		for _, p := range keptTargets(kept, tmeta, inTree, want) {
			absentT[p] = true
		}
		candidates = append(candidates, kp...)
	}
	skippedNow := make(map[string]SkippedFile, len(cur.skipped))
	for _, sk := range cur.skipped {
		skippedNow[sk.Path] = sk
	}
	targetSkipped := make(map[string]SkippedFile, len(tmeta.Skipped))
	for _, sk := range tmeta.Skipped {
		targetSkipped[sk.Path] = sk
	}
	// Files the target left out as too large: no version of them can be
	// restored, and a restore names them (changed since or not: it
	// cannot tell).
	for _, sk := range tmeta.Skipped {
		if sk.Size > s.opts.MaxFileSize && !strings.HasSuffix(sk.Path, "/") {
			candidates = append(candidates, sk.Path)
		}
	}
	paths := make([]string, 0, len(candidates))
	seen := make(map[string]bool, len(candidates))
	for _, p := range candidates {
		if inPaths(p, prefixes) && !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var since map[string]treeFile
	var sinceMeta *snapMeta
	if sinceID != "" {
		c, err := s.readCommit(plumbing.NewHash(sinceID))
		if err == nil {
			since, err = s.lookupFiles(c.TreeHash, paths)
		}
		if err != nil {
			return nil, fmt.Errorf("gitops: restore to snapshot %s: the protection base, snapshot %s, cannot be read (%v): %w; restore with --overwrite to restore anyway",
				short(target.ID), short(sinceID), err, ErrNoProtectionBase)
		}
		if sinceMeta, err = parseCommitMessage(c.Message); err != nil {
			sinceMeta = &snapMeta{}
		}
		// A protection base older than the keeping of a path stands for
		// its pre-image.
		if len(kept) > 0 {
			keptTargets(kept, sinceMeta, maps.Clone(since), since)
		}
		result.ProtectionBase = sinceID
	}
	targetIgnore := s.targetIgnoreReader(tc.TreeHash)
	leave := func(p, why string) {
		result.LeftAlone = append(result.LeftAlone, RestoreConflict{Path: p, Message: why})
	}
	pl := &planner{s: s, cur: cur, data: map[string][]byte{}, skipped: skippedNow}

	var ops []restoreOp
	extra := map[string]*fileRec{} // files the scan does not hold (ignored now) that the restore changes: kept in the safety snapshot
	var absent []string            // ignored paths the restore creates: the safety snapshot records them as absent
	for _, p := range paths {
		t, inT := want[p]
		c, inC := cur.lookup(p)
		if !inC {
			// Not in the scan: ignored now, too large, unreadable, a
			// special file, or absent.
			if sk, ok := skippedNow[p]; ok {
				if !inT {
					if tsk, ok := targetSkipped[p]; ok && tsk.Size > s.opts.MaxFileSize {
						leave(p, fmt.Sprintf("too large for snapshots, then (%d bytes) and now (%s): the snapshot holds no version of it, so it is left as it is", tsk.Size, sk.Reason))
					}
					continue // not in the target either: nothing to do
				}
				// The safety snapshot cannot hold it: replacing it could
				// not be undone, so not even overwrite replaces it.
				leave(p, sk.Reason+"; it could not be saved for undo, so it is left alone, even with overwrite (move it aside and restore again to put the snapshot's version there)")
				continue
			} else if r, why := pl.diskFile(p); why != "" {
				leave(p, why)
				continue
			} else if r != nil {
				c, inC = r, true
				extra[p] = r
			}
		}
		if !inT && !inC {
			continue
		}
		tperm := tmeta.perm(p, t.mode)
		if t.perm != 0 {
			tperm = t.perm // a kept path's pre-image
		}
		if inT && inC && t.hash == c.hash && t.mode == c.mode && (t.mode == filemode.Symlink || c.perm == 0 || c.perm == tperm) {
			continue
		}
		if !inT {
			if sk, ok := targetSkipped[p]; ok {
				leave(p, "the target snapshot left it out ("+sk.Reason+"); never deleted")
				continue
			}
			if !absentT[p] {
				if s.files.Ignored(p, false) {
					leave(p, "ignored by the current ignore rules; ignored files are never deleted")
					continue
				}
				if s.files.IgnoredBy(p, false, targetIgnore) {
					leave(p, "ignored by the target snapshot's ignore rules; ignored files are never deleted")
					continue
				}
			}
		}
		if since != nil && !opts.Overwrite {
			sv, inS := since[p]
			sperm := uint32(0)
			if inS {
				sperm = sinceMeta.perm(p, sv.mode)
				if sv.perm != 0 {
					sperm = sv.perm // a kept path's pre-image
				}
			}
			if inS != inC || (inS && (sv.hash != c.hash || sv.mode != c.mode || (c.perm != 0 && sv.mode != filemode.Symlink && sperm != c.perm))) {
				result.Conflicts = append(result.Conflicts, RestoreConflict{Path: p,
					Message: fmt.Sprintf("changed since snapshot %s, not by the agent; left alone (restore with --overwrite to replace it)", short(sinceID))})
				continue
			}
		}
		if inT {
			if why := pl.blocked(p, want); why != "" {
				leave(p, why)
				continue
			}
		}
		// What the op expects to find: recovery after a crash applies it
		// only to a file still in that state.
		var was *opState
		if inC {
			was = stateOfRec(c)
		} else if _, skipped := skippedNow[p]; !skipped {
			was = stateOfRec(nil)
		}
		switch {
		case inT && inC:
			if t.hash == c.hash && t.mode != filemode.Symlink && c.mode != filemode.Symlink {
				ops = append(ops, restoreOp{Path: p, Op: "chmod", Mode: uint32(t.mode), Perm: tperm, Hash: t.hash.String(), Was: was})
			} else {
				ops = append(ops, restoreOp{Path: p, Op: "write", Mode: uint32(t.mode), Perm: tperm, Hash: t.hash.String(), Was: was})
			}
			result.Restored = append(result.Restored, p)
		case inT:
			ops = append(ops, restoreOp{Path: p, Op: "write", Mode: uint32(t.mode), Perm: tperm, Hash: t.hash.String(), Was: was})
			if _, skipped := skippedNow[p]; skipped {
				result.Restored = append(result.Restored, p)
			} else {
				result.Created = append(result.Created, p)
				if s.files.Ignored(p, false) {
					absent = append(absent, p)
				}
			}
		default:
			ops = append(ops, restoreOp{Path: p, Op: "delete", Was: was})
			result.Deleted = append(result.Deleted, p)
		}
	}
	// Empty directories of the target that are missing now.
	for _, d := range tmeta.EmptyDirs {
		if !inPaths(d, prefixes) {
			continue
		}
		if fi, err := os.Lstat(s.abs(d)); err == nil && fi.IsDir() {
			continue
		}
		if why := pl.blocked(d+"/.", want); why != "" {
			leave(d, why)
			continue
		}
		ops = append(ops, restoreOp{Path: d, Op: "mkdir"})
		result.Created = append(result.Created, d+"/")
	}
	if opts.DryRun {
		return result, nil
	}
	// Directories on the way of the restore's changes that exist now but
	// that the safety snapshot's tree does not imply (ignored, or holding
	// only ignored files): the safety snapshot records them like empty
	// directories, so that undoing the restore keeps or re-creates them.
	var keepDirs []string
	seenDir := map[string]bool{}
	for _, op := range ops {
		for d, _ := splitRel(op.Path); d != "" && !seenDir[d]; d, _ = splitRel(d) {
			seenDir[d] = true
			if _, implied := s.cache.trees[d]; implied || cur.emptyDirs[d] {
				continue
			}
			if fi, err := os.Lstat(s.abs(d)); err == nil && fi.IsDir() {
				keepDirs = append(keepDirs, d)
			}
		}
	}
	if len(extra) > 0 || len(absent) > 0 || len(keepDirs) > 0 {
		// The safety snapshot must hold every file the restore changes,
		// ignored ones included, and the ignored paths it creates.
		amended, err := s.amendSafety(ctx, undo, extra, pl.data, absent, keepDirs)
		if err != nil {
			return nil, fmt.Errorf("gitops: restore: saving ignored files for undo failed, nothing was changed: %w", err)
		}
		result.UndoSnapshot = amended.ID
	}
	// The state a rollback returns to: the scan's files and the extra
	// ones (never added to the scan's map, which may be the cache's own).
	undoState := func() map[string]*fileRec {
		if len(extra) == 0 {
			return cur.byPath()
		}
		st := maps.Clone(cur.byPath())
		for p, r := range extra {
			st[p] = r
		}
		return st
	}
	if unsaved {
		s.saveCacheUnlessRewritten(cur, ops)
	}
	if len(ops) == 0 {
		s.recordResult(ctx, target, result, since, nil, cur, nil)
		return result, nil
	}
	sortOps(ops)

	s.changed = true
	j := &restoreJournal{Target: target.ID, Undo: result.UndoSnapshot, Nonce: newNonce(), Phase: phaseApply, Ops: ops}
	if err := s.writeJournal(j); err != nil {
		return nil, fmt.Errorf("gitops: restore: write the journal %s: %w; nothing was changed", filepath.Join(s.dir, journalName), err)
	}
	a, err := s.newApplier(j.Nonce, s.dirsOfSnapshot(target.ID))
	if err != nil {
		os.Remove(filepath.Join(s.dir, journalName))
		return nil, fmt.Errorf("gitops: restore: %w; nothing was changed", err)
	}
	defer a.close()
	a.own = true
	// The result's snapshot needs only ops, not the disk: its trees and
	// pack are written while the ops are applied (both read objects under
	// stMu), and its reference once the restore stands. The goroutine
	// touches the store's state only before beforeRef returns nil, and
	// this one only after <-recorded, or after beforeRef returned an error.
	applied := make(chan bool, 1)
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		s.recordResult(ctx, target, result, since, ops, cur, func() error {
			if !<-applied {
				return errRestoreFailed
			}
			return nil
		})
	}()
	if done, err := a.applyOps(ctx, ops); err != nil {
		applied <- false
		<-recorded
		return nil, s.rollback(ctx, j, done, undoState(), err, nil)
	}
	if err := s.finishJournal(a, ops); err != nil {
		applied <- false
		<-recorded
		return nil, fmt.Errorf("gitops: restore to %s: %w", short(target.ID), err)
	}
	applied <- true
	<-recorded
	return result, nil
}

// saveCacheUnlessRewritten saves the stat cache the safety snapshot made
// (scan res) unless it differs from the saved one in little besides the
// paths ops write, delete or chmod: their stat changes again, so the next
// process re-hashes them whichever cache it loads. The other paths it
// differs in are re-hashed by the next process if the cache is not saved,
// which costs less than rewriting the cache (about 80 bytes a file: 6 MB
// on a large tree) while they are few (resaveLimits). They add up over
// restores that each leave a few more (the files of the previous restore,
// and whatever else rewrote files unchanged), until one saves it.
func (s *Store) saveCacheUnlessRewritten(res *scanResult, ops []restoreOp) {
	opPaths := make(map[string]bool, len(ops))
	for _, op := range ops {
		opPaths[op.Path] = true
	}
	maxFiles, maxBytes := resaveLimits(len(res.files))
	n, bytes := 0, int64(0)
	for _, p := range res.touched {
		if opPaths[p] {
			continue
		}
		n++
		if r, _ := res.lookup(p); r != nil {
			bytes += r.size
		}
		if n > maxFiles || bytes > maxBytes {
			s.saveCacheAsync()
			return
		}
	}
}

// resaveBytes bounds what saveCacheUnlessRewritten leaves to re-hash on
// a small tree.
const resaveBytes = 4 << 20

// resaveLimits are how many files, and bytes of them, a restore leaves to
// the next process to re-hash rather than save a stat cache of files
// files: at least racyResave files and resaveBytes, and on a large tree
// as many bytes as the cache's own size and a file in 256 (300 files of
// the Linux tree, which cost that process a few milliseconds, where
// saving its 6 MB cache costs every such restore more).
func resaveLimits(files int) (int, int64) {
	return max(racyResave, files/256), max(resaveBytes, int64(files)*80)
}

// errRestoreFailed stops the recording of a restore's result when the
// restore did not stand.
var errRestoreFailed = errors.New("the restore did not complete")

// recordResult takes the KindRestored snapshot of what a restore left:
// the next restore's protection base. Conflicts are recorded as they were
// in this restore's base (since), because they are not the agent's. If it
// fails the restore stands; the next restore then compares with an older
// base, which can only report more conflicts, never overwrite more.
//
// It is built without walking the workspace again: the safety snapshot's
// tree (the cache's) with the restore's ops applied. The cache keeps the
// state before the restore; the next snapshot re-hashes the restored files
// (their stat changed) and compares with this snapshot's tree.
func (s *Store) recordResult(ctx context.Context, target *Snapshot, result *RestoreResult, since map[string]treeFile, ops []restoreOp, cur *scanResult, beforeRef func() error) {
	ov := make(map[string]*treeFile, len(ops)+len(result.Conflicts))
	for _, op := range ops {
		switch op.Op {
		case "write", "chmod":
			ov[op.Path] = &treeFile{mode: filemode.FileMode(op.Mode), hash: plumbing.NewHash(op.Hash), perm: op.Perm}
		case "delete":
			ov[op.Path] = nil
		}
	}
	if since != nil {
		for _, c := range result.Conflicts {
			if f, ok := since[c.Path]; ok {
				ov[c.Path] = &f
			} else {
				ov[c.Path] = nil
			}
		}
	}
	// What ov changes in the disk's tree (cur), as diffTrees would list
	// it: comparing the two trees built maps of the whole directories
	// on the way of every change.
	changes := []FileChange{}
	for p, f := range ov {
		c, inC := cur.lookup(p)
		switch {
		case f == nil && inC:
			changes = append(changes, FileChange{Path: p, Kind: ChangeDeleted})
		case f != nil && !inC:
			changes = append(changes, FileChange{Path: p, Kind: ChangeAdded})
		case f != nil && (c.hash != f.hash || c.mode != f.mode && (c.mode == filemode.Symlink || f.mode == filemode.Symlink)):
			changes = append(changes, FileChange{Path: p, Kind: ChangeModified})
		case f != nil && c.mode != f.mode:
			changes = append(changes, FileChange{Path: p, Kind: ChangeMode})
		}
	}
	slices.SortFunc(changes, func(a, b FileChange) int { return treeOrder(a.Path, b.Path) })
	var pw *packWriter
	sink := &lazyPackSink{s: s, pw: &pw}
	root := s.cache.trees[""]
	emptyDirs := cur.emptyDirs
	if s.cache.emptyDirs != nil {
		emptyDirs = s.cache.emptyDirs
	}
	s.changed = true
	snap, err := s.commitSnapshot(ctx, SnapshotOptions{Label: "after restore to " + short(target.ID), kind: KindRestored, overrides: ov, overrideChanges: &changes, beforeRef: beforeRef},
		manRefPrefix, root, root, 0, cur.m, cur.files, emptyDirs, cur.skipped, sink, &pw, nil)
	if err != nil && pw != nil {
		pw.abort()
	}
	if errors.Is(err, errRestoreFailed) {
		return
	}
	if err != nil {
		s.log.Warn("gitops: could not record the restore's result; the next restore compares with an older snapshot and may report more conflicts", "dir", s.dir, "err", err)
		return
	}
	result.ResultSnapshot = snap.ID
}

// differingFiles compares tree root with the current state (the cache):
// it returns root's files in directories whose tree differs, and the
// current paths there, i.e. every path a restore may have to change.
// Directories with the same tree id on both sides are not even read.
func (s *Store) differingFiles(root plumbing.Hash, cache *statCache) (map[string]treeFile, []string, error) {
	want := make(map[string]treeFile)
	var curPaths []string
	sorted := cache.sortedPaths()
	// A directory's paths are a range of sorted, found within its
	// parent's range (plo, phi): the searches of the many clean
	// sub-directories of a changed one were most of this function's time.
	var walk func(dir string, h plumbing.Hash, plo, phi int) error
	walk = func(dir string, h plumbing.Hash, plo, phi int) error {
		lo, hi := plo, phi
		if dir != "" {
			lo = plo + sort.SearchStrings(sorted[plo:phi], dir)
			hi = rangeEnd(sorted[:phi], lo, dir)
		}
		if ch, ok := cache.trees[dirKey(dir)]; ok && ch == h && hi > lo {
			return nil
		}
		t, err := s.readTree(h)
		if err != nil {
			return err
		}
		subs := make(map[string]bool)
		for _, e := range t.Entries {
			if e.Mode == filemode.Dir {
				subs[e.Name] = true
				if err := walk(dir+e.Name+"/", e.Hash, lo, hi); err != nil {
					return err
				}
				continue
			}
			want[dir+e.Name] = treeFile{mode: e.Mode, hash: e.Hash}
		}
		for i := lo; i < hi; {
			rest := sorted[i][len(dir):]
			k := strings.IndexByte(rest, '/')
			if k < 0 {
				curPaths = append(curPaths, sorted[i])
				i++
				continue
			}
			j := rangeEnd(sorted[:hi], i, dir+rest[:k+1])
			if !subs[rest[:k]] {
				curPaths = append(curPaths, sorted[i:j]...)
			}
			i = j
		}
		return nil
	}
	if err := walk("", root, 0, len(sorted)); err != nil {
		return nil, nil, err
	}
	seen := make(map[string]bool, len(want)+len(curPaths))
	out := make([]string, 0, len(want)+len(curPaths))
	for p := range want {
		seen[p] = true
		out = append(out, p)
	}
	for _, p := range curPaths {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return want, out, nil
}

// lookupFiles returns the entries of the given paths in tree root (absent
// paths are left out), reading only the trees on their way.
func (s *Store) lookupFiles(root plumbing.Hash, paths []string) (map[string]treeFile, error) {
	out := make(map[string]treeFile)
	trees := map[string]*object.Tree{}
	var tree func(dir string) (*object.Tree, error)
	tree = func(dir string) (*object.Tree, error) {
		if t, ok := trees[dir]; ok {
			return t, nil
		}
		var h plumbing.Hash
		if dir == "" {
			h = root
		} else {
			pd := path.Dir(dir)
			if pd == "." {
				pd = ""
			}
			parent, err := tree(pd)
			if err != nil || parent == nil {
				trees[dir] = nil
				return nil, err
			}
			found := false
			for _, e := range parent.Entries {
				if e.Name == path.Base(dir) && e.Mode == filemode.Dir {
					h, found = e.Hash, true
					break
				}
			}
			if !found {
				trees[dir] = nil
				return nil, nil
			}
		}
		t, err := s.readTree(h)
		if err != nil {
			return nil, err
		}
		trees[dir] = t
		return t, nil
	}
	for _, p := range paths {
		d := path.Dir(p)
		if d == "." {
			d = ""
		}
		t, err := tree(d)
		if err != nil {
			return nil, err
		}
		if t == nil {
			continue
		}
		base := path.Base(p)
		for _, e := range t.Entries {
			if e.Name == base && e.Mode != filemode.Dir {
				out[p] = treeFile{mode: e.Mode, hash: e.Hash}
				break
			}
		}
	}
	return out, nil
}
