package gitops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/sync/errgroup"

	"github.com/agentd/agentd/workspace"
)

// restoreOp is one change a restore makes to the workspace.
type restoreOp struct {
	Path string `json:"path"`
	Op   string `json:"op"` // "write", "chmod" or "delete"
	Mode uint32 `json:"mode,omitempty"`
	Hash string `json:"hash,omitempty"`
}

// restoreJournal is written (fsync'd) before a restore touches the
// workspace and removed when it is done, so that the next Open can finish a
// restore a crash interrupted: every op is idempotent and names content
// that is in the store.
type restoreJournal struct {
	Target string      `json:"target"`
	Undo   string      `json:"undo"`
	Ops    []restoreOp `json:"ops"`
}

// tmpSuffix names the temporary files a restore writes beside their target.
const tmpSuffix = ".agentd-restore"

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
// safety snapshot, writing only what differs.
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

	// What is there now: the safety snapshot's scan (or, for a dry run, a
	// scan that writes nothing).
	var cur *scanResult
	result := &RestoreResult{Restored: []string{}, Created: []string{}, Deleted: []string{}, Conflicts: []RestoreConflict{}, LeftAlone: []RestoreConflict{}}
	var want map[string]treeFile
	var candidates []string
	if opts.DryRun {
		if cur, _, err = s.scan(ctx, nil); err != nil {
			return nil, fmt.Errorf("gitops: restore (dry run): %w", err)
		}
		if want, err = s.snapshotFiles(target.ID); err != nil {
			return nil, err
		}
		for p := range want {
			candidates = append(candidates, p)
		}
		for p := range cur.byPath {
			if _, ok := want[p]; !ok {
				candidates = append(candidates, p)
			}
		}
	} else {
		undo, res, err := s.snapshotLocked(ctx, SnapshotOptions{Label: "before restore to " + short(target.ID), kind: KindSafety}, manRefPrefix)
		if err != nil {
			return nil, fmt.Errorf("gitops: restore: safety snapshot failed, nothing was changed: %w", err)
		}
		cur = res
		result.UndoSnapshot = undo.ID
		// The cache is now the workspace's state, trees included: only the
		// directories whose trees differ need looking at.
		c, err := s.readCommit(plumbing.NewHash(target.ID))
		if err != nil {
			return nil, fmt.Errorf("gitops: restore: read snapshot %s: %w", target.ID, err)
		}
		if want, candidates, err = s.differingFiles(c.TreeHash, s.cache); err != nil {
			return nil, fmt.Errorf("gitops: restore: read snapshot %s: %w", target.ID, err)
		}
	}
	tooBig := make(map[string]bool, len(cur.skipped))
	for _, sk := range cur.skipped {
		tooBig[sk.Path] = true
	}
	paths := make([]string, 0, len(candidates))
	for _, p := range candidates {
		if inPaths(p, prefixes) {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var since map[string]treeFile
	if sinceID != "" {
		c, err := s.readCommit(plumbing.NewHash(sinceID))
		if err == nil {
			since, err = s.lookupFiles(c.TreeHash, paths)
		}
		if err != nil {
			return nil, fmt.Errorf("gitops: restore to snapshot %s: the protection base, snapshot %s, cannot be read (%v): %w; restore with overwrite to restore anyway",
				short(target.ID), short(sinceID), err, ErrNoProtectionBase)
		}
		result.ProtectionBase = sinceID
	}
	var ops []restoreOp
	for _, p := range paths {
		t, inT := want[p]
		c, inC := cur.byPath[p]
		if inT && inC && t.hash == c.hash && t.mode == c.mode {
			continue
		}
		if since != nil && !opts.Overwrite {
			sv, inS := since[p]
			if inS != inC || (inS && (sv.hash != c.hash || sv.mode != c.mode)) {
				result.Conflicts = append(result.Conflicts, RestoreConflict{Path: p,
					Message: fmt.Sprintf("changed since snapshot %s, not by the agent; left alone (restore with overwrite to replace it)", short(sinceID))})
				continue
			}
		}
		if tooBig[p] && !opts.Overwrite {
			result.Conflicts = append(result.Conflicts, RestoreConflict{Path: p,
				Message: "too large for the safety snapshot, so the restore could not be undone; left alone (restore with overwrite to replace it)"})
			continue
		}
		switch {
		case inT && inC:
			if t.hash == c.hash && t.mode != filemode.Symlink && c.mode != filemode.Symlink {
				ops = append(ops, restoreOp{Path: p, Op: "chmod", Mode: uint32(t.mode), Hash: t.hash.String()})
			} else {
				ops = append(ops, restoreOp{Path: p, Op: "write", Mode: uint32(t.mode), Hash: t.hash.String()})
			}
			result.Restored = append(result.Restored, p)
		case inT:
			ops = append(ops, restoreOp{Path: p, Op: "write", Mode: uint32(t.mode), Hash: t.hash.String()})
			if _, err := os.Lstat(s.abs(p)); err == nil || tooBig[p] {
				result.Restored = append(result.Restored, p)
			} else {
				result.Created = append(result.Created, p)
			}
		default:
			ops = append(ops, restoreOp{Path: p, Op: "delete"})
			result.Deleted = append(result.Deleted, p)
		}
	}
	if opts.DryRun {
		return result, nil
	}
	if len(ops) == 0 {
		s.recordResult(ctx, target, result, since)
		return result, nil
	}
	// Deletions first: they may clear the way (a file where a directory
	// must go, or the reverse).
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Op == "delete" && ops[j].Op != "delete" })

	s.changed = true
	j := &restoreJournal{Target: target.ID, Undo: result.UndoSnapshot, Ops: ops}
	data, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(s.dir, journalName), data, 0o644, true); err != nil {
		return nil, fmt.Errorf("gitops: restore: write the journal: %w; nothing was changed", err)
	}
	if done, err := s.applyOps(ctx, ops); err != nil {
		return nil, s.rollback(done, cur, result.UndoSnapshot, err)
	}
	dirs := make(map[string]struct{})
	for _, op := range ops {
		dirs[filepath.Dir(s.abs(op.Path))] = struct{}{}
	}
	if err := s.finishOps(dirs); err != nil {
		return nil, fmt.Errorf("gitops: restore to %s: %w", short(target.ID), err)
	}
	s.recordResult(ctx, target, result, since)
	return result, nil
}

// recordResult takes the KindRestored snapshot of what a restore left:
// the next restore's protection base. Conflicts are recorded as they were
// in this restore's base (since), because they are not the agent's. If it
// fails the restore stands; the next restore then compares with an older
// base, which can only report more conflicts, never overwrite more.
func (s *Store) recordResult(ctx context.Context, target *Snapshot, result *RestoreResult, since map[string]treeFile) {
	var ov map[string]*treeFile
	if since != nil && len(result.Conflicts) > 0 {
		ov = make(map[string]*treeFile, len(result.Conflicts))
		for _, c := range result.Conflicts {
			if f, ok := since[c.Path]; ok {
				ov[c.Path] = &f
			} else {
				ov[c.Path] = nil
			}
		}
	}
	snap, _, err := s.snapshotLocked(ctx, SnapshotOptions{Label: "after restore to " + short(target.ID), kind: KindRestored, overrides: ov}, manRefPrefix)
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
	var walk func(dir string, h plumbing.Hash) error
	walk = func(dir string, h plumbing.Hash) error {
		lo, hi := 0, len(sorted)
		if dir != "" {
			lo = sort.SearchStrings(sorted, dir)
			hi = rangeEnd(sorted, lo, dir)
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
				if err := walk(dir+e.Name+"/", e.Hash); err != nil {
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
	if err := walk("", root); err != nil {
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

// restoreWorkers bounds the files a restore writes (and fsyncs) at once.
var restoreWorkers = 8

// applyOps applies ops: deletions in order, then writes and mode changes in
// parallel (each fsync'd before it is renamed into place). It returns the
// ops it started, for a rollback.
func (s *Store) applyOps(ctx context.Context, ops []restoreOp) ([]restoreOp, error) {
	dirs := make(map[string]struct{})
	i := 0
	for ; i < len(ops) && ops[i].Op == "delete"; i++ {
		if err := ctx.Err(); err != nil {
			return ops[:i], fmt.Errorf("cancelled: %w", err)
		}
		if err := s.applyOp(ops[i], dirs); err != nil {
			return ops[:i+1], err
		}
	}
	rest := ops[i:]
	if len(rest) == 0 {
		return ops, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan restoreOp)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range min(restoreWorkers, len(rest)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make(map[string]struct{})
			for op := range next {
				if err := s.applyOp(op, local); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
				}
			}
		}()
	}
	started := i
feed:
	for _, op := range rest {
		select {
		case next <- op:
			started++
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return ops[:started], firstErr
	}
	if started < len(ops) {
		return ops[:started], fmt.Errorf("cancelled: %w", context.Cause(ctx))
	}
	return ops, nil
}

// finishOps syncs the touched directories and removes the journal.
func (s *Store) finishOps(dirs map[string]struct{}) error {
	// In parallel: a restore spread over the tree touches a directory per
	// file, and one fsync after another added up to a tenth of it.
	var g errgroup.Group
	g.SetLimit(restoreWorkers)
	for d := range dirs {
		g.Go(func() error {
			if err := syncDir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(s.dir, journalName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return syncDir(filepath.Join(s.dir, agentdDir))
}

// rollback puts the files of done back as the safety snapshot has them.
func (s *Store) rollback(done []restoreOp, cur *scanResult, undo string, cause error) error {
	dirs := make(map[string]struct{})
	var errs []error
	for i := len(done) - 1; i >= 0; i-- {
		p := done[i].Path
		var op restoreOp
		if c, ok := cur.byPath[p]; ok {
			op = restoreOp{Path: p, Op: "write", Mode: uint32(c.mode), Hash: c.hash.String()}
		} else {
			op = restoreOp{Path: p, Op: "delete"}
		}
		if err := s.applyOp(op, dirs); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if err := s.finishOps(dirs); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("gitops: restore failed (%w) and rolling back failed too (%v); restore snapshot %s to get the state before the restore back", cause, errors.Join(errs...), short(undo))
	}
	return fmt.Errorf("gitops: restore failed and was rolled back, the workspace is as before: %w", cause)
}

func (s *Store) abs(rel string) string { return filepath.Join(s.root, filepath.FromSlash(rel)) }

// applyOp makes one path as op says. It is idempotent.
func (s *Store) applyOp(op restoreOp, dirs map[string]struct{}) error {
	abs := s.abs(op.Path)
	dirs[filepath.Dir(abs)] = struct{}{}
	if op.Op != "write" {
		// Never act through a symlinked or replaced parent directory.
		if err := s.checkParents(op.Path); err != nil {
			if (errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir)) && op.Op == "delete" {
				return nil // nothing of that name can be there
			}
			return err
		}
	}
	switch op.Op {
	case "delete":
		fi, err := os.Lstat(abs)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return fmt.Errorf("delete %s: it is a directory now", op.Path)
		}
		if err := os.Remove(abs); err != nil {
			return fmt.Errorf("delete %s: %w", op.Path, err)
		}
		// Remove directories the deletion left empty.
		for d := filepath.Dir(abs); d != s.root && isInside(s.root, d); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break
			}
			dirs[filepath.Dir(d)] = struct{}{}
		}
		return nil
	case "chmod":
		fi, err := os.Lstat(abs)
		if err != nil {
			return fmt.Errorf("set mode of %s: %w", op.Path, err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("set mode of %s: not a regular file", op.Path)
		}
		if err := os.Chmod(abs, permFor(filemode.FileMode(op.Mode), fi)); err != nil {
			return fmt.Errorf("set mode of %s: %w", op.Path, err)
		}
		return nil
	case "write":
		return s.writeOp(op, abs)
	}
	return fmt.Errorf("restore: unknown operation %q for %s", op.Op, op.Path)
}

// permFor is the permission for a file of git mode m, keeping an existing
// file's read/write bits.
func permFor(m filemode.FileMode, old fs.FileInfo) fs.FileMode {
	perm := fs.FileMode(0o644)
	if old != nil && old.Mode().IsRegular() {
		perm = old.Mode().Perm() &^ 0o111
	}
	if m == filemode.Executable {
		perm |= (perm & 0o444) >> 2
		perm |= 0o100
	}
	return perm
}

func (s *Store) writeOp(op restoreOp, abs string) error {
	if err := s.makeParents(op.Path); err != nil {
		return err
	}
	data, err := s.readBlob(plumbing.NewHash(op.Hash))
	if err != nil {
		return fmt.Errorf("restore %s: %w", op.Path, err)
	}
	old, err := os.Lstat(abs)
	if err == nil && old.IsDir() {
		// A directory where the file goes: only if nothing is left in it.
		if err := os.Remove(abs); err != nil {
			return fmt.Errorf("restore %s: a directory with other (ignored) files is in the way; move it away first", op.Path)
		}
		old = nil
	} else if err != nil {
		old = nil
	}
	tmp := filepath.Join(filepath.Dir(abs), "."+filepath.Base(abs)+tmpSuffix)
	_ = os.Remove(tmp)
	mode := filemode.FileMode(op.Mode)
	if mode == filemode.Symlink {
		if err := os.Symlink(filepath.FromSlash(string(data)), tmp); err != nil {
			return fmt.Errorf("restore %s: %w", op.Path, err)
		}
	} else {
		perm := permFor(mode, old)
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, perm)
		if err != nil {
			return fmt.Errorf("restore %s: %w", op.Path, err)
		}
		_, err = f.Write(data)
		if err == nil && syncWrites {
			err = f.Sync()
		}
		if err == nil {
			err = f.Chmod(perm)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("restore %s: %w", op.Path, err)
		}
	}
	if err := os.Rename(tmp, abs); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("restore %s: %w", op.Path, err)
	}
	return nil
}

// makeParents creates rel's parent directories, refusing to go through a
// symlink or a file (which would write outside the workspace or over a
// file nobody asked to restore).
func (s *Store) makeParents(rel string) error {
	dir := path.Dir(rel)
	if dir == "." {
		return nil
	}
	cur := s.root
	for _, part := range strings.Split(dir, "/") {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(cur, 0o755); err == nil {
				continue
			} else if !errors.Is(err, fs.ErrExist) { // another worker may have made it
				return fmt.Errorf("restore %s: %w", rel, err)
			}
			fi, err = os.Lstat(cur)
		}
		if err != nil {
			return fmt.Errorf("restore %s: %w", rel, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("restore %s: %s is not a directory (a file or symlink is in the way)", rel, cur)
		}
	}
	return nil
}

// checkParents verifies that rel's parent directories are directories (not
// symlinks) inside the workspace.
func (s *Store) checkParents(rel string) error {
	dir := path.Dir(rel)
	if dir == "." {
		return nil
	}
	cur := s.root
	for _, part := range strings.Split(dir, "/") {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s: %s: %w", rel, cur, errNotDir)
		}
	}
	return nil
}

var errNotDir = errors.New("not a directory (a file or symlink is in the way)")

// recoverRestore finishes a restore a crash interrupted (the caller holds
// the store lock).
func (s *Store) recoverRestore(ctx context.Context) error {
	name := filepath.Join(s.dir, journalName)
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("gitops: read the restore journal %s: %w", name, err)
	}
	var j restoreJournal
	if err := json.Unmarshal(data, &j); err != nil {
		// Written atomically: a damaged journal was never acted on.
		s.log.Warn("gitops: ignoring a damaged restore journal", "path", name, "err", err)
		return os.Remove(name)
	}
	s.log.Info("gitops: finishing a restore that was interrupted", "target", j.Target, "undo", j.Undo, "files", len(j.Ops))
	dirs := make(map[string]struct{})
	for _, op := range j.Ops {
		if err := ctx.Err(); err != nil {
			return err
		}
		abs := s.abs(op.Path)
		_ = os.Remove(filepath.Join(filepath.Dir(abs), "."+filepath.Base(abs)+tmpSuffix))
		if err := s.applyOp(op, dirs); err != nil {
			return fmt.Errorf("gitops: finishing an interrupted restore to %s failed: %w; restore snapshot %s to get the state before it back", short(j.Target), err, short(j.Undo))
		}
	}
	return s.finishOps(dirs)
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
