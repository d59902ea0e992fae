package gitops

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// restoreOp is one change a restore makes to the workspace.
type restoreOp struct {
	Path string `json:"path"`
	Op   string `json:"op"` // "write", "chmod", "delete" or "mkdir"
	Mode uint32 `json:"mode,omitempty"`
	Perm uint32 `json:"perm,omitempty"` // permission bits (0: the default for Mode)
	Hash string `json:"hash,omitempty"`
}

// Journal phases.
const (
	phaseApply    = "apply"    // going to Target
	phaseRollback = "rollback" // going back to Undo after a failure
)

// restoreJournal is written (fsync'd) before a restore touches the
// workspace and removed when it is done, so that the next Open can finish
// (phase apply) or undo (phase rollback) a restore a crash or a failure
// interrupted: every op is idempotent and names content that is in the
// store.
type restoreJournal struct {
	Target string      `json:"target"`
	Undo   string      `json:"undo"`
	Nonce  string      `json:"nonce"` // names the restore's temporary files (tmpName)
	Phase  string      `json:"phase,omitempty"`
	Ops    []restoreOp `json:"ops"`
	// Failed says what could not be done (for a rollback journal: why the
	// restore and its rollback failed), for doctor and the next start.
	Failed string `json:"failed,omitempty"`
}

// testHookApply lets tests fail chosen ops.
var testHookApply func(restoreOp) error

// restoreWorkers bounds the files a restore writes (and fsyncs) at once.
var restoreWorkers = 8

// applier applies restore ops to the workspace through directory handles.
type applier struct {
	s      *Store
	root   *wsRoot
	nonce  string
	hasDir func(dir string) bool // the state being restored has this directory: never removed
	// own: every op this applier's journal holds was applied by it, in
	// this process, so the directories whose entries changed are known
	// (syncDirs). A journal finished or rolled back after a crash or a
	// failure may follow ops another applier began: it syncs every
	// directory on the ops' way.
	own bool
}

func newNonce() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Store) newApplier(nonce string, hasDir func(string) bool) (*applier, error) {
	r, err := openWSRoot(s.root)
	if err != nil {
		return nil, err
	}
	return &applier{s: s, root: r, nonce: nonce, hasDir: hasDir}, nil
}

func (a *applier) close() { a.root.close() }

// applyOps applies ops: deletions in order, then the rest in parallel
// (each file fsync'd before it is renamed into place). It returns the ops
// it started, for a rollback.
func (a *applier) applyOps(ctx context.Context, ops []restoreOp) ([]restoreOp, error) {
	i := 0
	for ; i < len(ops) && ops[i].Op == "delete"; i++ {
		if err := ctx.Err(); err != nil {
			return ops[:i], fmt.Errorf("cancelled: %w", err)
		}
		if err := a.apply(ops[i]); err != nil {
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
			for op := range next {
				if err := a.apply(op); err != nil {
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

// apply makes one path as op says. It is idempotent.
func (a *applier) apply(op restoreOp) error {
	if testHookApply != nil {
		if err := testHookApply(op); err != nil {
			return err
		}
	}
	dir, name := splitRel(op.Path)
	switch op.Op {
	case "delete":
		dfd, err := a.root.openDir(dir, false)
		if err != nil {
			if errors.Is(err, errNotDir) || errors.Is(err, fs.ErrNotExist) {
				return nil // nothing of that name can be there
			}
			return fmt.Errorf("delete %s: %w", op.Path, err)
		}
		gone := false
		err = func() error {
			defer closeDir(dfd)
			st, err := lstatAt(dfd, name)
			if errors.Is(err, fs.ErrNotExist) {
				gone = true
				return nil
			}
			if err != nil {
				return fmt.Errorf("delete %s: %w", op.Path, err)
			}
			if isDirStat(st) {
				return fmt.Errorf("delete %s: it is a directory now", op.Path)
			}
			if err := unlinkAt(dfd, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("delete %s: %w", op.Path, err)
			}
			return nil
		}()
		if err != nil || gone {
			return err
		}
		// dir's handle is closed first: where Windows cannot delete with
		// POSIX semantics (FAT, exFAT, network shares; Wine), a directory
		// removed while a handle to it is open stays until that handle
		// closes, so its parent would not be empty yet.
		a.removeEmptied(dir)
		return nil
	case "mkdir":
		fd, err := a.root.openDir(op.Path, true)
		if err != nil {
			return fmt.Errorf("create directory %s: %w", op.Path, err)
		}
		closeDir(fd)
		return nil
	case "chmod":
		dfd, err := a.root.openDir(dir, false)
		if err != nil {
			return fmt.Errorf("set mode of %s: %w", op.Path, err)
		}
		defer closeDir(dfd)
		if err := chmodAt(dfd, name, permOf(op)); err != nil {
			return fmt.Errorf("set mode of %s: %w", op.Path, err)
		}
		return nil
	case "write":
		data, err := a.s.readBlob(plumbing.NewHash(op.Hash))
		if err != nil {
			return fmt.Errorf("restore %s: %w", op.Path, err)
		}
		dfd, err := a.root.openDir(dir, true)
		if err != nil {
			return fmt.Errorf("restore %s: %w", op.Path, err)
		}
		defer closeDir(dfd)
		tmp := tmpName(a.nonce, op.Path)
		link := filemode.FileMode(op.Mode) == filemode.Symlink
		if err := writeFileAt(dfd, name, tmp, data, link, permOf(op), syncWrites); err != nil {
			return fmt.Errorf("restore %s: %w", op.Path, err)
		}
		return nil
	}
	return fmt.Errorf("restore: unknown operation %q for %s", op.Op, op.Path)
}

// permOf is the permission bits op writes: its own, else git's default
// for its mode.
func permOf(op restoreOp) uint32 {
	if op.Perm != 0 {
		return op.Perm & 0o7777
	}
	if filemode.FileMode(op.Mode) == filemode.Executable {
		return 0o755
	}
	return 0o644
}

// removeEmptied removes dir and its parents while they are empty and the
// state being restored does not have them (a directory that existed
// there, even empty, stays).
func (a *applier) removeEmptied(dir string) {
	for dir != "" {
		if a.hasDir != nil && a.hasDir(dir) {
			return
		}
		parent, base := splitRel(dir)
		pfd, err := a.root.openDir(parent, false)
		if err != nil {
			return
		}
		err = rmdirAt(pfd, base)
		closeDir(pfd)
		if err != nil {
			return
		}
		a.root.noteMade(parent)
		dir = parent
	}
}

// removeTemps removes the temporary files of the journal's restore (a
// crash may have left them): exactly the names tmpName gives its ops.
func (a *applier) removeTemps(ops []restoreOp) {
	for _, op := range ops {
		if op.Op != "write" {
			continue
		}
		dir, _ := splitRel(op.Path)
		dfd, err := a.root.openDir(dir, false)
		if err != nil {
			continue
		}
		_ = unlinkAt(dfd, tmpName(a.nonce, op.Path))
		closeDir(dfd)
	}
}

// dirsToSync are the directories syncDirs syncs.
func (a *applier) dirsToSync(ops []restoreOp) map[string]struct{} {
	dirs := map[string]struct{}{"": {}}
	for _, op := range ops {
		d, _ := splitRel(op.Path)
		for {
			dirs[d] = struct{}{}
			if d == "" || a.own {
				break
			}
			d, _ = splitRel(d)
		}
	}
	a.root.mu.Lock()
	for d := range a.root.made {
		dirs[d] = struct{}{}
	}
	a.root.mu.Unlock()
	return dirs
}

// syncDirs syncs the directories whose entries ops changed: with own,
// each op's directory (a file renamed into it, deleted from it, or a
// directory made in it; a chmod's too, as before) and the parents of the
// directories made or removed on the way (their entries changed too),
// and the root; else
// every directory on the ops' way, since an earlier process may have
// made them without syncing. A directory whose entries did not change has
// nothing to sync: on the Linux tree a restore of 20 files synced some 50
// directories, now about 20.
func (a *applier) syncDirs(ops []restoreOp) error {
	dirs := a.dirsToSync(ops)

	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	sem := make(chan struct{}, restoreWorkers)
	for d := range dirs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			fd, err := a.root.openDir(d, false)
			if err != nil {
				return // gone (removed as emptied) or replaced: nothing to sync
			}
			err = fsyncDir(fd)
			closeDir(fd)
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("sync directory %s: %w", d, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// finishJournal syncs what ops touched and removes the journal.
func (s *Store) finishJournal(a *applier, ops []restoreOp) error {
	if syncWrites {
		if err := a.syncDirs(ops); err != nil {
			return err
		}
	}
	if err := os.Remove(filepath.Join(s.dir, journalName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the restore journal %s: %w", filepath.Join(s.dir, journalName), err)
	}
	s.problem = nil
	return syncDir(filepath.Join(s.dir, agentdDir))
}

func (s *Store) writeJournal(j *restoreJournal) error {
	data, err := json.Marshal(j)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(s.dir, journalName), data, 0o644, true)
}

// rollbackOps are the ops that put the paths of done back as state (the
// safety snapshot's files) has them.
func rollbackOps(done []restoreOp, state map[string]*fileRec) []restoreOp {
	var dels, rest []restoreOp
	for i := len(done) - 1; i >= 0; i-- {
		p := done[i].Path
		if done[i].Op == "mkdir" {
			continue // an empty directory is harmless; the restore's undo removes it
		}
		if c, ok := state[p]; ok {
			rest = append(rest, restoreOp{Path: p, Op: "write", Mode: uint32(c.mode), Perm: c.perm, Hash: c.hash.String()})
		} else {
			dels = append(dels, restoreOp{Path: p, Op: "delete"})
		}
	}
	return append(dels, rest...)
}

// rollback puts the files of done back as the safety snapshot has them. A
// rollback journal is written first, so that if the rollback fails too,
// the next start retries the rollback, never the failed restore.
func (s *Store) rollback(ctx context.Context, j *restoreJournal, done []restoreOp, state map[string]*fileRec, cause error) error {
	back := &restoreJournal{Target: j.Undo, Undo: j.Undo, Nonce: newNonce(), Phase: phaseRollback, Ops: rollbackOps(done, state),
		Failed: fmt.Sprintf("the restore to %s failed: %v", short(j.Target), cause)}
	if err := s.writeJournal(back); err != nil {
		// The apply journal stays: the next start finishes the restore.
		return fmt.Errorf("gitops: restore to %s failed (%w) and its rollback could not even be journaled (%v); the next start finishes the restore; snapshot %s holds the state before it",
			short(j.Target), cause, err, short(j.Undo))
	}
	a, err := s.newApplier(back.Nonce, s.dirsOfSnapshot(j.Undo))
	if err == nil {
		defer a.close()
		if _, err = a.applyOps(context.WithoutCancel(ctx), back.Ops); err == nil {
			err = s.finishJournal(a, back.Ops)
		}
	}
	if err != nil {
		back.Failed += fmt.Sprintf("; rolling back failed too: %v", err)
		s.writeJournal(back)
		s.problem = stuckError(back)
		return fmt.Errorf("gitops: restore to %s failed (%w) and rolling back failed too (%v); snapshot %s holds the state before the restore: restore it with overwrite, or run 'agentd snapshot doctor'",
			short(j.Target), cause, err, short(j.Undo))
	}
	return fmt.Errorf("gitops: restore to %s failed and was rolled back, the workspace is as before: %w", short(j.Target), cause)
}

// stuckError describes a journal that could be neither finished nor rolled
// back.
func stuckError(j *restoreJournal) error {
	what := "finish the restore to " + short(j.Target)
	if j.Phase == phaseRollback {
		what = "roll back a failed restore"
	}
	return fmt.Errorf("%w: could not %s (%s); snapshot %s holds the workspace as it was before that restore: restore it, overwriting, or check the snapshot store",
		ErrInterruptedRestore, what, j.Failed, short(j.Undo))
}

// ErrInterruptedRestore is wrapped by Store.Problem (and by restores
// without overwrite) when a restore's journal could be neither finished
// nor rolled back.
var ErrInterruptedRestore = errors.New("an interrupted restore is unfinished")

// Problem returns what keeps the store from being in order (an interrupted
// restore that could be neither finished nor rolled back), with which
// snapshot holds the user's state and what to do; nil if none. Listing,
// snapshots, diffs and restores with overwrite still work meanwhile.
func (s *Store) Problem() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.problem
}

// recoverRestore finishes (phase apply) or rolls back (phase rollback) a
// restore a crash or failure interrupted. The caller holds the store lock.
// If it cannot, it records the problem (Problem) and returns nil: the
// store still opens, lists and restores with overwrite.
func (s *Store) recoverRestore(ctx context.Context) error {
	name := filepath.Join(s.dir, journalName)
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		s.problem = nil
		return nil
	}
	if err != nil {
		s.problem = fmt.Errorf("%w: cannot read the restore journal %s (%v); fix its permissions or run 'agentd snapshot doctor'", ErrInterruptedRestore, name, err)
		return nil
	}
	var j restoreJournal
	if err := json.Unmarshal(data, &j); err != nil {
		// Written atomically: a damaged journal was never acted on.
		s.log.Warn("gitops: ignoring a damaged restore journal", "path", name, "err", err)
		if err := os.Remove(name); err != nil {
			s.problem = fmt.Errorf("%w: remove the damaged restore journal %s: %v", ErrInterruptedRestore, name, err)
		}
		return nil
	}
	if err := s.runJournal(ctx, &j); err != nil {
		s.problem = stuckError(&j)
		s.log.Error("gitops: "+s.problem.Error(), "journal", name)
	}
	return nil
}

// runJournal applies a journal's ops; on failure of an apply journal it
// rolls back to the journal's undo snapshot.
func (s *Store) runJournal(ctx context.Context, j *restoreJournal) error {
	state := j.Target
	s.log.Info("gitops: finishing a restore that was interrupted", "target", j.Target, "undo", j.Undo, "phase", j.Phase, "files", len(j.Ops))
	a, err := s.newApplier(j.Nonce, s.dirsOfSnapshot(state))
	if err != nil {
		j.Failed = err.Error()
		return err
	}
	defer a.close()
	a.removeTemps(j.Ops)
	done, err := a.applyOps(ctx, j.Ops)
	if err == nil {
		if err = s.finishJournal(a, j.Ops); err == nil {
			return nil
		}
	}
	if j.Phase != phaseRollback && j.Undo != "" {
		// Finishing failed: go back to the safety snapshot instead.
		files, ferr := s.snapshotFiles(j.Undo)
		if ferr == nil {
			undoState := make(map[string]*fileRec, len(files))
			for p, f := range files {
				undoState[p] = &fileRec{path: p, mode: f.mode, hash: f.hash}
			}
			perms := s.snapshotPerms(j.Undo)
			for p, r := range undoState {
				r.perm = perms(p, r.mode)
			}
			rerr := s.rollback(ctx, j, done, undoState, err)
			if errors.Is(s.problem, ErrInterruptedRestore) {
				j.Phase, j.Failed = phaseRollback, rerr.Error()
				return rerr
			}
			return nil // rolled back: the workspace is as before the restore
		}
	}
	j.Failed = err.Error()
	return err
}

// dirsOfSnapshot returns a function that says whether snapshot id has a
// directory (with files below it, or recorded as empty), reading only the
// trees on the way. Errors count as "has it", so nothing is removed.
func (s *Store) dirsOfSnapshot(id string) func(string) bool {
	if id == "" {
		return nil
	}
	c, err := s.readCommit(plumbing.NewHash(id))
	if err != nil {
		return func(string) bool { return true }
	}
	empty := map[string]bool{}
	if m, err := parseCommitMessage(c.Message); err == nil {
		for _, d := range m.EmptyDirs {
			empty[d] = true
		}
	}
	var mu sync.Mutex
	trees := map[string]*object.Tree{"": nil}
	var get func(dir string) (*object.Tree, bool)
	get = func(dir string) (*object.Tree, bool) {
		if t, ok := trees[dir]; ok && (t != nil || dir != "") {
			return t, true
		}
		var h plumbing.Hash
		if dir == "" {
			h = c.TreeHash
		} else {
			parent, base := splitRel(dir)
			pt, ok := get(parent)
			if !ok {
				return nil, false
			}
			if pt == nil {
				trees[dir] = nil
				return nil, true
			}
			for _, e := range pt.Entries {
				if e.Name == base && e.Mode == filemode.Dir {
					h = e.Hash
				}
			}
			if h.IsZero() {
				trees[dir] = nil
				return nil, true
			}
		}
		t, err := s.readTree(h)
		if err != nil {
			return nil, false
		}
		trees[dir] = t
		return t, true
	}
	return func(dir string) bool {
		if empty[dir] {
			return true
		}
		for e := range empty {
			if strings.HasPrefix(e, dir+"/") {
				return true
			}
		}
		mu.Lock()
		defer mu.Unlock()
		t, ok := get(dir)
		return !ok || t != nil
	}
}

// sortOps puts deletions first (they may clear the way for a file where a
// directory was, or the reverse), then directories, then the rest.
func sortOps(ops []restoreOp) {
	rank := map[string]int{"delete": 0, "mkdir": 1}
	sort.SliceStable(ops, func(i, j int) bool {
		ri, ok := rank[ops[i].Op]
		if !ok {
			ri = 2
		}
		rj, ok := rank[ops[j].Op]
		if !ok {
			rj = 2
		}
		return ri < rj
	})
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

var _ = path.Join

// DoctorReport says what Doctor found and did.
type DoctorReport struct {
	Repaired []string `json:"repaired"` // what it put in order
	Problems []string `json:"problems"` // what it could not, with what to do
}

// Doctor puts the store in order where it can: it finishes or rolls back
// an interrupted restore (retrying what failed at the last start) and
// removes what killed writers left behind. What it cannot repair it
// explains in the error (wrapping ErrInterruptedRestore): what failed and
// which snapshot holds the user's state.
func (s *Store) Doctor(ctx context.Context) (*DoctorReport, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	s.changed = true
	rep := &DoctorReport{Repaired: []string{}, Problems: []string{}}
	s.removeTempFiles()
	name := filepath.Join(s.dir, journalName)
	if _, err := os.Stat(name); err == nil {
		if err := s.recoverRestore(ctx); err != nil {
			return rep, err
		}
		if s.problem != nil {
			rep.Problems = append(rep.Problems, s.problem.Error())
			return rep, s.problem
		}
		rep.Repaired = append(rep.Repaired, "finished or rolled back an interrupted restore (journal "+name+")")
	}
	s.problem = nil
	return rep, nil
}
