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
	"time"

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
	// Was is the path's state just before the op (nil: not known, a
	// journal of an older version, or a mkdir). Recovery after a crash
	// applies the op only to a file still in that state: a file already
	// as the op leaves it is done, and a file in any other state was
	// changed by someone since, and is kept (and named).
	Was *opState `json:"was,omitempty"`
}

// opState is a path's state as a journal op expects it.
type opState struct {
	Absent bool   `json:"absent,omitempty"`
	Hash   string `json:"hash,omitempty"`
	Mode   uint32 `json:"mode,omitempty"` // git mode
	Perm   uint32 `json:"perm,omitempty"` // 0: not compared
}

// stateOfRec is a scanned file's state (nil rec: absent).
func stateOfRec(r *fileRec) *opState {
	if r == nil {
		return &opState{Absent: true}
	}
	return &opState{Hash: r.hash.String(), Mode: uint32(r.mode), Perm: r.perm}
}

// targetState is the state op leaves its path in (nil for a mkdir).
func targetState(op restoreOp, was *opState) *opState {
	switch op.Op {
	case "delete":
		return &opState{Absent: true}
	case "write":
		return &opState{Hash: op.Hash, Mode: op.Mode}
	case "chmod":
		st := &opState{Hash: op.Hash, Mode: op.Mode, Perm: permOf(op)}
		if st.Hash == "" && was != nil {
			st.Hash = was.Hash
		}
		return st
	}
	return nil
}

// Verification of each op against the disk before it is applied.
const (
	verifyNone   = iota // apply (restore: its plan was made from this state)
	verifyStrict        // a path not in its Was state fails the op
	verifyKeep          // a path not in its Was state is kept and named (recovery)
)

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
	// Kind is "" for a restore, "revert" for an undo (Store.Revert).
	Kind string `json:"kind,omitempty"`
	// Owner is the ledger owner the operation's writes are recorded
	// under (RevertOptions.RecordAs, RestoreOptions.Owner): the recovery
	// report names it, so the caller's own record of the operation can
	// be completed or dropped with it.
	Owner  string `json:"owner,omitempty"`
	Target string `json:"target"`
	Undo   string `json:"undo"`
	Nonce  string `json:"nonce"` // names the restore's temporary files (tmpName)
	// Nonces of the journal's earlier phases (an apply's, when this is its
	// rollback): their temporary files are removed too.
	PrevNonces []string    `json:"prevNonces,omitempty"`
	Phase      string      `json:"phase,omitempty"`
	Ops        []restoreOp `json:"ops"`
	// Failed says what could not be done (for a rollback journal: why the
	// restore and its rollback failed), for doctor and the next start.
	Failed string `json:"failed,omitempty"`
	// Kept are the files a revert leaves as they are on purpose (its
	// conflicts, KeepConflicts, and the files it left alone), with why:
	// the recovery names them with the files it keeps, so a killed undo
	// completed at the next open does not drop them unsaid.
	Kept []RestoreConflict `json:"kept,omitempty"`
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
	// verify says what to do with an op whose path is not in its Was
	// state (verify*).
	verify int
	mu     sync.Mutex
	wrote  []string          // paths the ops changed
	kept   []RestoreConflict // paths left as they were because they changed (verifyKeep)
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
	if a.verify != verifyNone && op.Was != nil {
		switch st, why := a.check(op); st {
		case stateTarget:
			return nil
		case stateOther:
			if a.verify == verifyStrict {
				return fmt.Errorf("%s changed while it was being undone (%s); try again", op.Path, why)
			}
			a.mu.Lock()
			a.kept = append(a.kept, RestoreConflict{Path: op.Path, Message: why})
			a.mu.Unlock()
			return nil
		}
	}
	if err := a.applyOne(op); err != nil {
		return err
	}
	a.mu.Lock()
	a.wrote = append(a.wrote, op.Path)
	a.mu.Unlock()
	return nil
}

// States check finds a path in.
const (
	stateWas = iota
	stateTarget
	stateOther
)

// check says whether op's path is in the op's Was state, already in the
// state the op leaves it in, or in another (with why, in a user's words).
func (a *applier) check(op restoreOp) (int, string) {
	tgt := targetState(op, op.Was)
	dir, name := splitRel(op.Path)
	var cur *opState
	dfd, err := a.root.openDir(dir, false)
	switch {
	case errors.Is(err, errNotDir) || errors.Is(err, fs.ErrNotExist):
		cur = &opState{Absent: true}
	case err != nil:
		return stateOther, fmt.Sprintf("cannot be looked at (%v); left as it is", err)
	default:
		data, mode, _, rerr := readAt(dfd, name, a.s.opts.MaxFileSize)
		closeDir(dfd)
		switch {
		case errors.Is(rerr, fs.ErrNotExist):
			cur = &opState{Absent: true}
		case errors.Is(rerr, errTooLarge):
			return stateOther, "changed since the interruption (now over the snapshot size limit); left as it is"
		case rerr != nil:
			return stateOther, fmt.Sprintf("cannot be read (%v); left as it is", rerr)
		case mode == fs.ModeDir:
			return stateOther, "a directory is there now; left as it is"
		case mode == fs.ModeIrregular:
			return stateOther, "a special file is there now; left as it is"
		default:
			gm, _ := gitMode(mode)
			cur = &opState{Hash: hashObject(plumbing.BlobObject, data).String(), Mode: uint32(gm), Perm: uint32(mode.Perm())}
			if mode == fs.ModeSymlink {
				cur.Mode, cur.Perm = uint32(filemode.Symlink), 0
			}
		}
	}
	if tgt != nil && sameOpState(cur, tgt) {
		return stateTarget, ""
	}
	if sameOpState(cur, op.Was) {
		return stateWas, ""
	}
	return stateOther, "changed since (not by agentd); kept as it is"
}

// sameOpState compares a path's state on disk (cur) with an expected one
// (permission bits only where want has them).
func sameOpState(cur, want *opState) bool {
	if cur.Absent || want.Absent {
		return cur.Absent == want.Absent
	}
	if cur.Hash != want.Hash || cur.Mode != want.Mode {
		return false
	}
	return want.Perm == 0 || filemode.FileMode(want.Mode) == filemode.Symlink || samePerm(cur.Perm, want.Perm)
}

// applyOne makes one path as op says. It is idempotent.
func (a *applier) applyOne(op restoreOp) error {
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
// crash may have left them): exactly the names tmpName gives its ops'
// paths under its nonce and those of its earlier phases (a rollback's ops
// may delete a path the apply was writing).
func (a *applier) removeTemps(ops []restoreOp, prev []string) {
	nonces := append([]string{a.nonce}, prev...)
	for _, op := range ops {
		if op.Op == "mkdir" {
			continue
		}
		dir, _ := splitRel(op.Path)
		dfd, err := a.root.openDir(dir, false)
		if err != nil {
			continue
		}
		for _, n := range nonces {
			_ = unlinkAt(dfd, tmpName(n, op.Path))
		}
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
		// The rollback expects what the op left (if it ran at all: a path
		// still as it was before is already as the rollback leaves it).
		was := targetState(done[i], done[i].Was)
		if c, ok := state[p]; ok {
			rest = append(rest, restoreOp{Path: p, Op: "write", Mode: uint32(c.mode), Perm: c.perm, Hash: c.hash.String(), Was: was})
		} else {
			dels = append(dels, restoreOp{Path: p, Op: "delete", Was: was})
		}
	}
	return append(dels, rest...)
}

// what names the journal's operation in messages.
func (j *restoreJournal) what() string {
	if j.Kind == "revert" {
		return "the undo"
	}
	return "the restore to " + short(j.Target)
}

// rollback puts the files of done back as the safety snapshot has them
// (only files still as the failed operation left them: another change
// since is kept and named, in rep when given). A rollback journal is
// written first, so that if the rollback fails too, the next start
// retries the rollback, never the failed operation.
func (s *Store) rollback(ctx context.Context, j *restoreJournal, done []restoreOp, state map[string]*fileRec, cause error, rep *RecoveryReport) error {
	back := &restoreJournal{Kind: j.Kind, Owner: j.Owner, Target: j.Undo, Undo: j.Undo, Nonce: newNonce(), PrevNonces: append([]string{j.Nonce}, j.PrevNonces...),
		Phase: phaseRollback, Ops: rollbackOps(done, state), Failed: fmt.Sprintf("%s failed: %v", j.what(), cause)}
	if err := s.writeJournal(back); err != nil {
		// The apply journal stays: the next start finishes the operation.
		return fmt.Errorf("gitops: %s failed (%w) and its rollback could not even be journaled (%v); the next start finishes it; snapshot %s holds the state before it",
			j.what(), cause, err, short(j.Undo))
	}
	a, err := s.newApplier(back.Nonce, s.dirsOfSnapshot(j.Undo))
	if err == nil {
		defer a.close()
		a.verify = verifyKeep
		a.removeTemps(back.Ops, back.PrevNonces)
		if _, err = a.applyOps(context.WithoutCancel(ctx), back.Ops); err == nil {
			err = s.finishJournal(a, back.Ops)
		}
		if rep != nil {
			rep.RolledBack = append(rep.RolledBack, a.wrote...)
			rep.Kept = append(rep.Kept, a.kept...)
		}
	}
	if err != nil {
		back.Failed += fmt.Sprintf("; rolling back failed too: %v", err)
		s.writeJournal(back)
		s.problem = stuckError(back)
		return fmt.Errorf("gitops: %s failed (%w) and rolling back failed too (%v); snapshot %s holds the state before it: restore it with overwrite, or run 'agentd snapshot doctor'",
			j.what(), cause, err, short(j.Undo))
	}
	if len(a.kept) > 0 {
		var names []string
		for _, k := range a.kept {
			names = append(names, k.Path)
		}
		return fmt.Errorf("gitops: %s failed and was rolled back, except %s, changed meanwhile and kept as they are (snapshot %s holds the state before it): %w",
			j.what(), strings.Join(names, ", "), short(j.Undo), cause)
	}
	return fmt.Errorf("gitops: %s failed and was rolled back, the workspace is as before: %w", j.what(), cause)
}

// stuckError describes a journal that could be neither finished nor rolled
// back.
func stuckError(j *restoreJournal) error {
	what := "finish " + j.what()
	if j.Phase == phaseRollback {
		what = "roll back " + j.what() + ", which failed"
	}
	return fmt.Errorf("%w: could not %s (%s); snapshot %s holds the workspace as it was before it: restore it, overwriting, or check the snapshot store",
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
// restore or an undo a crash or failure interrupted, and records what it
// did for Recovered. The caller holds the store lock. If it cannot, it
// records the problem (Problem) and returns nil: the store still opens,
// lists and restores with overwrite.
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
	rep := &RecoveryReport{Operation: j.what(), Owner: j.Owner, Paths: opPaths(j.Ops), UndoSnapshot: j.Undo, Finished: []string{}, RolledBack: []string{}, Kept: []RestoreConflict{}, At: time.Now().UTC()}
	if j.Phase == phaseRollback {
		rep.Operation += " (which had failed, and was being rolled back)"
	}
	s.changed = true
	if err := s.runJournal(ctx, &j, rep); err != nil {
		s.problem = stuckError(&j)
		s.log.Error("gitops: "+s.problem.Error(), "journal", name)
		rep.Outcome = RecoveryStuck
		rep.Problem = s.problem.Error()
	} else {
		rep.ResultSnapshot = s.recordRecovered(ctx, rep)
	}
	if j.Kind == "revert" && j.Owner != "" {
		// RevertFinished says what became of it, report read or not.
		if rep.Outcome == RecoveryFinished {
			if err := s.markReverted(j.Owner, &FinishedRevert{Kept: j.Kept}); err != nil {
				s.log.Warn("gitops: could not mark the recovered undo as finished", "owner", j.Owner, "err", err)
			}
		} else {
			os.Remove(s.revertedPath(j.Owner))
		}
	}
	if err := s.saveRecovery(rep); err != nil {
		s.log.Error("gitops: could not record what the recovery of an interrupted operation did", "err", err, "report", rep.String())
	}
	return nil
}

// opPaths are the files ops write or delete (not the directories they
// make), in order, once each.
func opPaths(ops []restoreOp) []string {
	paths := []string{}
	seen := map[string]bool{}
	for _, op := range ops {
		if op.Op != "mkdir" && !seen[op.Path] {
			seen[op.Path] = true
			paths = append(paths, op.Path)
		}
	}
	return paths
}

// runJournal applies a journal's ops (only to files still as the
// interrupted operation expected them); on failure of an apply journal it
// rolls back to the journal's undo snapshot. rep gets what it did.
func (s *Store) runJournal(ctx context.Context, j *restoreJournal, rep *RecoveryReport) error {
	state := j.Target
	s.log.Info("gitops: finishing an operation that was interrupted", "what", j.what(), "undo", j.Undo, "phase", j.Phase, "files", len(j.Ops))
	a, err := s.newApplier(j.Nonce, s.dirsOfSnapshot(state))
	if err != nil {
		j.Failed = err.Error()
		return err
	}
	defer a.close()
	a.verify = verifyKeep
	a.removeTemps(j.Ops, j.PrevNonces)
	done, err := a.applyOps(ctx, j.Ops)
	if j.Phase == phaseRollback {
		rep.RolledBack = append(rep.RolledBack, a.wrote...)
		rep.Outcome = RecoveryRolledBack
	} else {
		rep.Finished = append(rep.Finished, a.wrote...)
		rep.Outcome = RecoveryFinished
	}
	rep.Kept = append(rep.Kept, a.kept...)
	if j.Phase != phaseRollback {
		rep.Kept = append(rep.Kept, j.Kept...)
	}
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
			rep.Outcome = RecoveryRolledBack
			rerr := s.rollback(ctx, j, done, undoState, err, rep)
			if errors.Is(s.problem, ErrInterruptedRestore) {
				j.Phase, j.Failed = phaseRollback, rerr.Error()
				return rerr
			}
			return nil // rolled back: the workspace is as before the operation
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
