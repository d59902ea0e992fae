package gitops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

func (s *Store) abs(rel string) string { return s.root + "/" + rel }

// plan decides, path by path, what the restore does (planPath), then
// which of the target's empty directories it makes (planEmptyDirs). It
// only looks: nothing is written until the safety snapshot holds what
// the plan changes.
func (job *restoreJob) plan() {
	job.targetIgnore = job.s.targetIgnoreReader(job.tree)
	job.pl = &planner{s: job.s, cur: job.cur, data: map[string][]byte{}, skipped: job.skippedNow}
	job.extra = map[string]*fileRec{}
	for _, p := range job.paths {
		job.planPath(p)
	}
	job.planEmptyDirs()
}

// leave names p in the report as left alone, with why.
func (job *restoreJob) leave(p, why string) {
	job.result.LeftAlone = append(job.result.LeftAlone, RestoreConflict{Path: p, Message: why})
}

// planPath decides what the restore does to path p, the first of: nothing
// (neither side has it, or it is already the target's), leave it alone,
// with why (the safety snapshot could not hold it, or it is never
// deleted), a conflict (someone other than the agent changed it since the
// protection base), leave it alone because the target's file cannot be
// written there, or an op that makes it the target's (addOp).
func (job *restoreJob) planPath(p string) {
	t, inT := job.want[p]
	c, inC := job.cur.lookup(p)
	if !inC {
		r, done := job.unscanned(p, inT)
		if done {
			return
		}
		if r != nil {
			c, inC = r, true
		}
	}
	if !inT && !inC {
		return
	}
	tperm := job.tmeta.perm(p, t.mode)
	if t.perm != 0 {
		tperm = t.perm // a kept path's pre-image
	}
	if inT && inC && t.hash == c.hash && t.mode == c.mode && (t.mode == filemode.Symlink || c.perm == 0 || c.perm == tperm) {
		return
	}
	if !inT {
		if why := job.neverDeleted(p); why != "" {
			job.leave(p, why)
			return
		}
	}
	if job.changedByUser(p, c, inC) {
		job.result.Conflicts = append(job.result.Conflicts, RestoreConflict{Path: p,
			Message: fmt.Sprintf("changed since snapshot %s, not by the agent; left alone (restore with --overwrite to replace it)", short(job.sinceID))})
		return
	}
	if inT {
		if why := job.pl.blocked(p, job.want); why != "" {
			job.leave(p, why)
			return
		}
	}
	job.addOp(p, t, inT, c, inC, tperm)
}

// unscanned looks at path p, which the scan does not hold: ignored now,
// too large, unreadable, a special file, or absent. It returns the file
// on disk there if the restore may replace it (ignored now: the safety
// snapshot is amended to hold it), and done if the restore leaves p as it
// is.
func (job *restoreJob) unscanned(p string, inT bool) (r *fileRec, done bool) {
	if sk, ok := job.skippedNow[p]; ok {
		if !inT {
			if tsk, ok := job.targetSkipped[p]; ok && tsk.Size > job.s.opts.MaxFileSize {
				job.leave(p, fmt.Sprintf("too large for snapshots, then (%d bytes) and now (%s): the snapshot holds no version of it, so it is left as it is", tsk.Size, sk.Reason))
			}
			return nil, true // not in the target either: nothing to do
		}
		// The safety snapshot cannot hold it: replacing it could not be
		// undone, so not even overwrite replaces it.
		job.leave(p, sk.Reason+"; it could not be saved for undo, so it is left alone, even with overwrite (move it aside and restore again to put the snapshot's version there)")
		return nil, true
	}
	r, why := job.pl.diskFile(p)
	if why != "" {
		job.leave(p, why)
		return nil, true
	}
	if r != nil {
		job.extra[p] = r
	}
	return r, false
}

// neverDeleted says why p, which the target does not have, is not
// deleted: the target left it out (so it cannot tell), or it is ignored by
// the current or the target's ignore rules and the target does not
// record it as absent; "" if it may be deleted.
func (job *restoreJob) neverDeleted(p string) string {
	if sk, ok := job.targetSkipped[p]; ok {
		return "the target snapshot left it out (" + sk.Reason + "); never deleted"
	}
	if job.absentT[p] {
		return ""
	}
	if job.s.files.Ignored(p, false) {
		return "ignored by the current ignore rules; ignored files are never deleted"
	}
	if job.s.files.IgnoredBy(p, false, job.targetIgnore) {
		return "ignored by the target snapshot's ignore rules; ignored files are never deleted"
	}
	return ""
}

// changedByUser reports whether the file at p now (c if inC, else absent)
// differs from the protection base's in presence, content, type or
// permission bits: someone other than the agent changed it, and the
// restore must not replace it. Never true with Overwrite or without a
// base.
func (job *restoreJob) changedByUser(p string, c *fileRec, inC bool) bool {
	if job.since == nil || job.opts.Overwrite {
		return false
	}
	sv, inS := job.since[p]
	if inS != inC {
		return true
	}
	if !inS {
		return false
	}
	sperm := job.sinceMeta.perm(p, sv.mode)
	if sv.perm != 0 {
		sperm = sv.perm // a kept path's pre-image
	}
	return sv.hash != c.hash || sv.mode != c.mode || (c.perm != 0 && sv.mode != filemode.Symlink && sperm != c.perm)
}

// addOp plans the op that makes p the target's file t (or absent, if not
// inT) where c is now (or nothing, if not inC), and names p in the report
// as restored, created or deleted. The op records what it expects to
// find: recovery after a crash applies it only to a file still in that
// state. An ignored path it creates is recorded in the safety snapshot as
// absent, so that undoing the restore deletes it again.
func (job *restoreJob) addOp(p string, t treeFile, inT bool, c *fileRec, inC bool, tperm uint32) {
	_, skipped := job.skippedNow[p]
	var was *opState
	if inC {
		was = stateOfRec(c)
	} else if !skipped {
		was = stateOfRec(nil)
	}
	res := job.result
	switch {
	case inT && inC:
		op := "write"
		if t.hash == c.hash && t.mode != filemode.Symlink && c.mode != filemode.Symlink {
			op = "chmod"
		}
		job.ops = append(job.ops, restoreOp{Path: p, Op: op, Mode: uint32(t.mode), Perm: tperm, Hash: t.hash.String(), Was: was})
		res.Restored = append(res.Restored, p)
	case inT:
		job.ops = append(job.ops, restoreOp{Path: p, Op: "write", Mode: uint32(t.mode), Perm: tperm, Hash: t.hash.String(), Was: was})
		if skipped {
			res.Restored = append(res.Restored, p)
		} else {
			res.Created = append(res.Created, p)
			if job.s.files.Ignored(p, false) {
				job.absent = append(job.absent, p)
			}
		}
	default:
		job.ops = append(job.ops, restoreOp{Path: p, Op: "delete", Was: was})
		res.Deleted = append(res.Deleted, p)
	}
}

// planEmptyDirs plans the target's empty directories that are missing now.
func (job *restoreJob) planEmptyDirs() {
	for _, d := range job.tmeta.EmptyDirs {
		if !inPaths(d, job.prefixes) {
			continue
		}
		if fi, err := os.Lstat(job.s.abs(d)); err == nil && fi.IsDir() {
			continue
		}
		if why := job.pl.blocked(d+"/.", job.want); why != "" {
			job.leave(d, why)
			continue
		}
		job.ops = append(job.ops, restoreOp{Path: d, Op: "mkdir"})
		job.result.Created = append(job.result.Created, d+"/")
	}
}

// planner looks at the disk for what the scan does not hold.
type planner struct {
	s       *Store
	cur     *scanResult
	data    map[string][]byte // content of the files diskFile read (for the safety snapshot)
	skipped map[string]SkippedFile
	folded  map[string][]string // the scan's paths by their lower case, built when first needed
}

// scannedAs returns the path the scan holds the file at p under when it
// spells it otherwise ("Dir/A.txt" for "dir/a.txt"), found at p only
// because the file system ignores case (Windows, macOS); "" if none.
// Taken for a file of its own, it would look like the target's file
// already in place, and the restore would delete the scan's spelling,
// that same file, and write nothing.
func (pl *planner) scannedAs(p string, fi fs.FileInfo) string {
	if pl.folded == nil {
		pl.folded = map[string][]string{}
		for _, r := range pl.cur.files {
			k := strings.ToLower(r.path)
			pl.folded[k] = append(pl.folded[k], r.path)
		}
	}
	for _, q := range pl.folded[strings.ToLower(p)] {
		if q == p {
			continue
		}
		if qi, err := os.Lstat(pl.s.abs(q)); err == nil && os.SameFile(fi, qi) {
			return q
		}
	}
	return ""
}

// diskFile returns the file at p that the scan does not hold (ignored
// now), read so that the safety snapshot can keep it; nil if nothing (or
// an empty directory, see blocked) is there. why is set when the restore
// must leave p alone.
func (pl *planner) diskFile(p string) (*fileRec, string) {
	abs := pl.s.abs(p)
	fi, err := os.Lstat(abs)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, ""
	}
	if err != nil {
		return nil, fmt.Sprintf("cannot be looked at (%v); left alone", err)
	}
	if pl.scannedAs(p, fi) != "" {
		return nil, "" // not at p: at the scan's spelling of it
	}
	mode, ok := gitMode(fi.Mode())
	switch {
	case fi.IsDir():
		return nil, ""
	case !ok:
		return nil, "a special file (FIFO, socket or device) is where the file goes; left alone"
	case mode != filemode.Symlink && fi.Size() > pl.s.opts.MaxFileSize:
		// Replacing it could not be undone: not even overwrite does.
		return nil, fmt.Sprintf("too large (%d bytes, over the snapshot size limit) to be saved for undo; left alone, even with overwrite (move it aside and restore again to put the snapshot's version there)", fi.Size())
	}
	r := &fileRec{path: p, mode: mode, perm: permBits(fi.Mode()), size: fi.Size(), mtime: fi.ModTime().UnixNano(), ino: inode(fi)}
	data, err := pl.s.readEntry(r)
	if err != nil {
		return nil, fmt.Sprintf("cannot be read to be saved for undo (%v); left alone, even with overwrite (move it aside and restore again to put the snapshot's version there)", err)
	}
	r.hash = hashObject(plumbing.BlobObject, data)
	pl.data[p] = data
	return r, ""
}

// blocked says why the target's file p cannot be written (a file, symlink
// or unreadable directory where one of its directories goes, or a
// directory with files the restore keeps where the file goes); "" if it
// can.
func (pl *planner) blocked(p string, want map[string]treeFile) string {
	for sk := range pl.skipped {
		if strings.HasSuffix(sk, "/") && strings.HasPrefix(p, sk) {
			return "below " + sk + ", a directory that cannot be read; left alone"
		}
	}
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		d := strings.Join(parts[:i], "/")
		fi, err := os.Lstat(pl.s.abs(d))
		if errors.Is(err, fs.ErrNotExist) {
			return ""
		}
		if err != nil {
			return fmt.Sprintf("cannot look at its directory %s (%v); left alone", d, err)
		}
		if fi.IsDir() {
			continue
		}
		if _, ok := pl.cur.lookup(d); ok {
			if _, kept := want[d]; !kept {
				return "" // deleted first
			}
		}
		return fmt.Sprintf("%s, which the restore keeps, is a file or symlink where its directory goes; left alone", d)
	}
	if strings.HasSuffix(p, "/.") {
		return ""
	}
	fi, err := os.Lstat(pl.s.abs(p))
	if err == nil && fi.IsDir() && !pl.clearable(p, want) {
		return "a directory with files the restore keeps (ignored or left alone) is where the file goes; left alone"
	}
	return ""
}

// clearable reports whether everything below directory dir is a file the
// restore deletes (so the directory goes with them).
func (pl *planner) clearable(dir string, want map[string]treeFile) bool {
	ents, err := os.ReadDir(pl.s.abs(dir))
	if err != nil {
		return false
	}
	for _, e := range ents {
		p := dir + "/" + e.Name()
		if e.IsDir() {
			if !pl.clearable(p, want) {
				return false
			}
			continue
		}
		if _, ok := pl.cur.lookup(p); !ok {
			return false
		}
		if _, kept := want[p]; kept {
			return false
		}
	}
	return true
}

// targetIgnoreReader reads the .gitignore files of tree root (for
// fileset's IgnoredBy).
func (s *Store) targetIgnoreReader(root plumbing.Hash) func(string) []byte {
	cache := map[string][]byte{}
	return func(p string) []byte {
		if d, ok := cache[p]; ok {
			return d
		}
		var data []byte
		if files, err := s.lookupFiles(root, []string{p}); err == nil {
			if f, ok := files[p]; ok && f.mode != filemode.Symlink {
				data, _ = s.readBlob(f.hash)
			}
		}
		cache[p] = data
		return data
	}
}

// snapshotPerms returns the permission bits snapshot id records.
func (s *Store) snapshotPerms(id string) func(string, filemode.FileMode) uint32 {
	m := &snapMeta{}
	if c, err := s.readCommit(plumbing.NewHash(id)); err == nil {
		if pm, err := parseCommitMessage(c.Message); err == nil {
			m = pm
		}
	}
	return m.perm
}

// amendSafety replaces the safety snapshot undo (same reference) with one
// that also holds extra (files the walk left out as ignored, with their
// data) and records absent as paths that did not exist.
func (s *Store) amendSafety(ctx context.Context, undo *Snapshot, extra map[string]*fileRec, data map[string][]byte, absent, keepDirs []string) (*Snapshot, error) {
	c, err := s.readCommit(plumbing.NewHash(undo.ID))
	if err != nil {
		return nil, err
	}
	m, err := parseCommitMessage(c.Message)
	if err != nil {
		return nil, err
	}
	var pw *packWriter
	sink := &lazyPackSink{s: s, pw: &pw}
	fail := func(err error) (*Snapshot, error) {
		if pw != nil {
			pw.abort()
		}
		s.stMu.Lock()
		s.pendingTrees = nil
		s.stMu.Unlock()
		return nil, err
	}
	ov := make(map[string]*treeFile, len(extra))
	for p, r := range extra {
		if err := sink.put(plumbing.BlobObject, r.hash, data[p]); err != nil {
			return fail(err)
		}
		ov[p] = &treeFile{mode: r.mode, hash: r.hash}
		if r.mode != filemode.Symlink && r.perm != m.perm(p, r.mode) {
			if m.Perms == nil {
				m.Perms = map[string]uint32{}
			}
			m.Perms[p] = r.perm
		}
	}
	root, err := s.patchTree(c.TreeHash, ov, sink)
	if err != nil {
		return fail(err)
	}
	m.Absent = append(m.Absent, absent...)
	m.EmptyDirs = append(m.EmptyDirs, keepDirs...)
	sort.Strings(m.EmptyDirs)
	m.Files += len(extra)
	msg, err := commitMessage(m)
	if err != nil {
		return fail(err)
	}
	sig := agentdSig
	sig.When = m.CreatedAt
	ch, cdata, err := encodeObject(&object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: root})
	if err != nil {
		return fail(err)
	}
	if err := sink.put(plumbing.CommitObject, ch, cdata); err != nil {
		return fail(err)
	}
	if pw != nil {
		idx, err := pw.finish()
		pw = nil
		if err != nil {
			return fail(err)
		}
		s.packWritten(idx)
	}
	s.stMu.Lock()
	s.pendingTrees = nil
	err = s.st.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(undo.Ref), ch))
	s.stMu.Unlock()
	s.refCache = nil
	if err != nil {
		return nil, fmt.Errorf("write reference %s: %w", undo.Ref, err)
	}
	snap := metaToSnapshot(ch, undo.Ref, m)
	s.metaCache[ch] = snap
	cp := *snap
	return &cp, ctx.Err()
}

var _ = path.Join
