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
//
// It runs as phases, each a method of restoreJob that reads what the
// phases before it decided: what to restore and against what
// (newRestoreJob), what is there now and the safety snapshot (takeStock),
// the paths the target's records add (addRecordedPaths, choosePaths),
// what the user changed (readProtectionBase), the plan, path by path
// (plan, restore_plan.go), the safety snapshot made to hold all the plan
// changes (completeSafety), and the writes (write). The report, a
// RestoreResult, is filled in as the phases decide.
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
	job, err := s.newRestoreJob(id, opts, prefixes)
	if err != nil {
		return nil, err
	}
	if err := job.takeStock(ctx); err != nil {
		return nil, err
	}
	if err := job.addRecordedPaths(); err != nil {
		return nil, err
	}
	job.choosePaths()
	if err := job.readProtectionBase(); err != nil {
		return nil, err
	}
	job.plan()
	if opts.DryRun {
		return job.result, nil
	}
	if err := job.completeSafety(ctx); err != nil {
		return nil, err
	}
	return job.write(ctx)
}

// restoreJob is one restore as its phases share it. Each group of fields
// is set by the phase named beside it and only read after that.
type restoreJob struct {
	s        *Store
	opts     RestoreOptions
	prefixes []string // opts.Paths as workspace prefixes (none: everything)

	// What to restore, and against what (newRestoreJob).
	target  *Snapshot
	tree    plumbing.Hash // the target's root tree
	tmeta   *snapMeta     // the target's metadata (empty if unreadable)
	sinceID string        // the protection base; "" with Overwrite

	// What is there now (takeStock).
	cur        *scanResult
	undo       *Snapshot           // the safety snapshot; nil for a dry run
	unsaved    bool                // the safety snapshot left the stat cache to save
	want       map[string]treeFile // the target's files, of the paths that may differ
	candidates []string            // the paths that may have to change (repeats allowed)

	// What the target's records add (addRecordedPaths, choosePaths).
	absentT       map[string]bool // paths the target had not: deleted even if ignored
	kept          keptSet
	skippedNow    map[string]SkippedFile // what the scan left out, by path
	targetSkipped map[string]SkippedFile // what the target left out, by path
	paths         []string               // the candidates in prefixes, sorted, each once

	// What the user changed (readProtectionBase).
	since     map[string]treeFile // the protection base's files of paths; nil without one
	sinceMeta *snapMeta

	// The plan (plan).
	pl           *planner
	targetIgnore func(string) []byte
	ops          []restoreOp
	extra        map[string]*fileRec // files the scan does not hold (ignored now) that the restore changes: kept in the safety snapshot
	absent       []string            // ignored paths the restore creates: the safety snapshot records them as absent

	result *RestoreResult // the report, filled in by every phase
}

// newRestoreJob decides what to restore and against what: the target
// snapshot, and the protection base, the snapshot whose files count as
// the agent's (opts.Since if given, else ProtectionBase's answer). With
// Overwrite there is none: whatever is there is replaced. A store with an
// unresolved problem (Store.Problem) restores only with Overwrite, since
// what it last recorded may not be the workspace's history.
func (s *Store) newRestoreJob(id string, opts RestoreOptions, prefixes []string) (*restoreJob, error) {
	target, err := s.getLocked(id)
	if err != nil {
		return nil, err
	}
	if s.problem != nil && !opts.Overwrite {
		return nil, fmt.Errorf("gitops: restore to %s: %w", short(target.ID), s.problem)
	}
	job := &restoreJob{s: s, opts: opts, prefixes: prefixes, target: target,
		result: &RestoreResult{Restored: []string{}, Created: []string{}, Deleted: []string{}, Conflicts: []RestoreConflict{}, LeftAlone: []RestoreConflict{}}}
	switch {
	case opts.Overwrite:
	case opts.Since != "":
		sn, err := s.getLocked(opts.Since)
		if err != nil {
			return nil, fmt.Errorf("gitops: restore: the snapshot the agent left (since): %w", err)
		}
		job.sinceID = sn.ID
	default:
		if job.sinceID, err = s.protectionBaseLocked(target); err != nil {
			return nil, err
		}
	}
	tc, err := s.readCommit(plumbing.NewHash(target.ID))
	if err != nil {
		return nil, fmt.Errorf("gitops: restore: read snapshot %s: %w", target.ID, err)
	}
	job.tree = tc.TreeHash
	if job.tmeta, err = parseCommitMessage(tc.Message); err != nil {
		job.tmeta = &snapMeta{}
	}
	return job, nil
}

// takeStock finds what is there now and which paths may differ from the
// target. A restore takes the safety snapshot first (if that fails,
// nothing was changed): its scan is the state the plan compares with, and
// the cache it leaves holds the workspace's trees, so only directories
// whose tree differs from the target's are read, plus the files whose
// permission bits differ (bits are not in trees). A dry run scans without
// writing anything and takes every path of either side.
func (job *restoreJob) takeStock(ctx context.Context) error {
	s := job.s
	if job.opts.DryRun {
		var err error
		if job.cur, _, err = s.scan(ctx, nil); err != nil {
			return fmt.Errorf("gitops: restore (dry run): %w", err)
		}
		if job.want, err = s.flatten(job.tree); err != nil {
			return fmt.Errorf("gitops: restore: read snapshot %s: %w", job.target.ID, err)
		}
		for p := range job.want {
			job.candidates = append(job.candidates, p)
		}
		for p := range job.cur.byPath() {
			if _, ok := job.want[p]; !ok {
				job.candidates = append(job.candidates, p)
			}
		}
		return nil
	}
	undo, res, err := s.snapshotLocked(ctx, SnapshotOptions{Label: "before restore to " + short(job.target.ID), kind: KindSafety, unsavedCache: &job.unsaved}, manRefPrefix)
	if err != nil {
		return fmt.Errorf("gitops: restore: safety snapshot failed, nothing was changed: %w", err)
	}
	job.undo, job.cur = undo, res
	job.result.UndoSnapshot = undo.ID
	if job.want, job.candidates, err = s.differingFiles(job.tree, s.cache); err != nil {
		return fmt.Errorf("gitops: restore: read snapshot %s: %w", job.target.ID, err)
	}
	inCand := make(map[string]bool, len(job.candidates))
	for _, p := range job.candidates {
		inCand[p] = true
	}
	var same []string // same tree entry, other permission bits
	for _, r := range job.cur.files {
		if r.mode != filemode.Symlink && r.perm != 0 && r.perm != job.tmeta.perm(r.path, r.mode) && !inCand[r.path] {
			same = append(same, r.path)
		}
	}
	if len(same) > 0 {
		found, err := s.lookupFiles(job.tree, same)
		if err != nil {
			return fmt.Errorf("gitops: restore: read snapshot %s: %w", job.target.ID, err)
		}
		for p, f := range found {
			job.want[p] = f
			job.candidates = append(job.candidates, p)
		}
	}
	return nil
}

// addRecordedPaths adds the paths the target's metadata speaks for, which
// no comparison of trees finds: paths its safety record says were absent
// (deleted again even if ignored, and protected like any other file),
// kept paths (ignored files the agent changed, kept.go: the target records
// them, or stands for their pre-images), and files it left out as too
// large (no version of them can be restored, so a restore names them,
// changed since or not: it cannot tell).
func (job *restoreJob) addRecordedPaths() error {
	s, tmeta := job.s, job.tmeta
	job.absentT = map[string]bool{}
	for _, p := range tmeta.Absent {
		job.absentT[p] = true
		if _, ok := job.cur.lookup(p); !ok {
			job.candidates = append(job.candidates, p)
		}
	}
	kept, err := s.loadKept()
	if err != nil {
		return fmt.Errorf("gitops: restore: %w", err)
	}
	job.kept = kept
	if len(kept) > 0 || len(tmeta.Kept) > 0 {
		kp := slices.Concat(kept.paths(), tmeta.Kept)
		inTree, err := s.lookupFiles(job.tree, kp)
		if err != nil {
			return fmt.Errorf("gitops: restore: read snapshot %s: %w", job.target.ID, err)
		}
		for p, f := range inTree {
			if _, ok := job.want[p]; !ok {
				job.want[p] = f
			}
		}
		for _, p := range tmeta.Kept {
			if _, ok := inTree[p]; !ok {
				job.absentT[p] = true
			}
		}
		for _, p := range keptTargets(kept, tmeta, inTree, job.want) {
			job.absentT[p] = true
		}
		job.candidates = append(job.candidates, kp...)
	}
	job.skippedNow = make(map[string]SkippedFile, len(job.cur.skipped))
	for _, sk := range job.cur.skipped {
		job.skippedNow[sk.Path] = sk
	}
	job.targetSkipped = make(map[string]SkippedFile, len(tmeta.Skipped))
	for _, sk := range tmeta.Skipped {
		job.targetSkipped[sk.Path] = sk
		if sk.Size > s.opts.MaxFileSize && !strings.HasSuffix(sk.Path, "/") {
			job.candidates = append(job.candidates, sk.Path)
		}
	}
	return nil
}

// choosePaths keeps the candidates within opts.Paths, each once, sorted:
// the paths the plan decides on.
func (job *restoreJob) choosePaths() {
	job.paths = make([]string, 0, len(job.candidates))
	seen := make(map[string]bool, len(job.candidates))
	for _, p := range job.candidates {
		if inPaths(p, job.prefixes) && !seen[p] {
			seen[p] = true
			job.paths = append(job.paths, p)
		}
	}
	sort.Strings(job.paths)
}

// readProtectionBase reads the protection base's files of the chosen
// paths: what the agent left. A file that differs from them now was
// changed by someone else, and the plan makes it a conflict rather than
// replace it (changedByUser). A base older than the keeping of a path
// stands for the path's pre-image. A base that cannot be read stops the
// restore before anything is written: without it, no file can be told to
// be the agent's.
func (job *restoreJob) readProtectionBase() error {
	if job.sinceID == "" {
		return nil
	}
	s := job.s
	c, err := s.readCommit(plumbing.NewHash(job.sinceID))
	if err == nil {
		job.since, err = s.lookupFiles(c.TreeHash, job.paths)
	}
	if err != nil {
		return fmt.Errorf("gitops: restore to snapshot %s: the protection base, snapshot %s, cannot be read (%v): %w; restore with --overwrite to restore anyway",
			short(job.target.ID), short(job.sinceID), err, ErrNoProtectionBase)
	}
	if job.sinceMeta, err = parseCommitMessage(c.Message); err != nil {
		job.sinceMeta = &snapMeta{}
	}
	if len(job.kept) > 0 {
		keptTargets(job.kept, job.sinceMeta, maps.Clone(job.since), job.since)
	}
	job.result.ProtectionBase = job.sinceID
	return nil
}

// completeSafety makes the safety snapshot hold everything the plan
// changes, so that undoing the restore brings all of it back: files the
// scan left out as ignored (with their data), the ignored paths the
// restore creates (recorded as absent), and the directories on the way of
// the ops that exist now but that its tree does not imply (ignored, or
// holding only ignored files), recorded like empty directories so that
// undoing the restore keeps or re-creates them. If that fails, nothing
// was changed.
func (job *restoreJob) completeSafety(ctx context.Context) error {
	s := job.s
	var keepDirs []string
	seenDir := map[string]bool{}
	for _, op := range job.ops {
		for d, _ := splitRel(op.Path); d != "" && !seenDir[d]; d, _ = splitRel(d) {
			seenDir[d] = true
			if _, implied := s.cache.trees[d]; implied || job.cur.emptyDirs[d] {
				continue
			}
			if fi, err := os.Lstat(s.abs(d)); err == nil && fi.IsDir() {
				keepDirs = append(keepDirs, d)
			}
		}
	}
	if len(job.extra) == 0 && len(job.absent) == 0 && len(keepDirs) == 0 {
		return nil
	}
	amended, err := s.amendSafety(ctx, job.undo, job.extra, job.pl.data, job.absent, keepDirs)
	if err != nil {
		return fmt.Errorf("gitops: restore: saving ignored files for undo failed, nothing was changed: %w", err)
	}
	job.result.UndoSnapshot = amended.ID
	return nil
}

// undoState is the state a rollback returns to: the scan's files and the
// extra ones (never added to the scan's map, which may be the cache's own).
func (job *restoreJob) undoState() map[string]*fileRec {
	if len(job.extra) == 0 {
		return job.cur.byPath()
	}
	st := maps.Clone(job.cur.byPath())
	for p, r := range job.extra {
		st[p] = r
	}
	return st
}

// write carries out the plan. It journals the ops before it touches the
// workspace (Open finishes or rolls back what a crash leaves), applies
// them through directory handles, and rolls back what it applied if one
// fails. The result snapshot, the next restore's protection base, needs
// only the ops, not the disk: its trees and pack are written while the
// ops are applied (both read objects under stMu), and its reference only
// once the restore stands.
func (job *restoreJob) write(ctx context.Context) (*RestoreResult, error) {
	s, target, result, ops := job.s, job.target, job.result, job.ops
	if job.unsaved {
		s.saveCacheUnlessRewritten(job.cur, ops)
	}
	if len(ops) == 0 {
		s.recordResult(ctx, target, result, job.since, nil, job.cur, nil)
		return result, nil
	}
	sortOps(ops)

	s.changed = true
	j := &restoreJournal{Owner: job.opts.Owner, Target: target.ID, Undo: result.UndoSnapshot, Nonce: newNonce(), Phase: phaseApply, Ops: ops}
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
	// The goroutine touches the store's state only before beforeRef
	// returns nil, and this one only after <-recorded, or after beforeRef
	// returned an error.
	applied := make(chan bool, 1)
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		s.recordResult(ctx, target, result, job.since, ops, job.cur, func() error {
			if !<-applied {
				return errRestoreFailed
			}
			return nil
		})
	}()
	if done, err := a.applyOps(ctx, ops); err != nil {
		applied <- false
		<-recorded
		return nil, s.rollback(ctx, j, done, job.undoState(), err, nil)
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
