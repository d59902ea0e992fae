package gitops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// The ledger on disk: one JSON-lines file per owner under agentd/ledger/
// (owner "run/r1" is agentd/ledger/run/r1.jsonl), appended and fsync'd
// under the store lock; the contents are blobs in the store's packs,
// written (only those missing) and fsync'd before the line that names
// them. A line is the unit of durability: a crash can leave at most a
// torn last line, which readers skip and the next append cuts off.

const ledgerDir = "agentd/ledger"

// maxOwnerLen bounds an owner name (it becomes a file name).
const maxOwnerLen = 200

// checkOwner refuses an owner name that is not one to three slash
// separated parts of letters, digits, '-', '_' and '.', none starting
// with a dot: it names a file under the store, and must never leave it.
func checkOwner(owner string) error {
	if owner == "" || len(owner) > maxOwnerLen {
		return fmt.Errorf("ledger owner %q: must be 1 to %d characters (e.g. run/<runID>)", owner, maxOwnerLen)
	}
	parts := strings.Split(owner, "/")
	if len(parts) > 3 {
		return fmt.Errorf("ledger owner %q: at most three slash-separated parts (e.g. run/<runID>)", owner)
	}
	for _, part := range parts {
		if part == "" || part[0] == '.' {
			return fmt.Errorf("ledger owner %q: empty part or part starting with a dot", owner)
		}
		for _, c := range []byte(part) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				return fmt.Errorf("ledger owner %q: only letters, digits, '-', '_' and '.' between the slashes", owner)
			}
		}
	}
	return nil
}

func (s *Store) ledgerPath(owner string) string {
	return filepath.Join(s.dir, filepath.FromSlash(ledgerDir), filepath.FromSlash(owner)+".jsonl")
}

// fsMode turns a git mode (and permission bits) into FileState's mode.
func fsModeOf(m filemode.FileMode) fs.FileMode {
	switch m {
	case filemode.Symlink:
		return fs.ModeSymlink
	case filemode.Executable:
		return 0o755
	}
	return 0o644
}

// gitModeOf is FileState's mode as a git mode.
func gitModeOf(m fs.FileMode) filemode.FileMode {
	switch {
	case m&fs.ModeSymlink != 0:
		return filemode.Symlink
	case m&0o111 != 0:
		return filemode.Executable
	}
	return filemode.Regular
}

// normMode is FileState's mode as the ledger records it.
func normMode(m fs.FileMode) fs.FileMode { return fsModeOf(gitModeOf(m)) }

// recordEditsLocked stores the edits' contents and appends their entries.
func (s *Store) recordEditsLocked(owner, step string, edits []Edit) error {
	if len(edits) == 0 {
		return nil
	}
	var pw *packWriter
	sink := &lazyPackSink{s: s, pw: &pw}
	s.changed = true
	ref := func(st *FileState) (*BlobRef, error) {
		if st == nil {
			return nil, nil
		}
		h := hashObject(plumbing.BlobObject, st.Data)
		if err := sink.put(plumbing.BlobObject, h, st.Data); err != nil {
			return nil, err
		}
		return &BlobRef{Hash: h.String(), Mode: normMode(st.Mode)}, nil
	}
	now := time.Now().UTC()
	entries := make([]LedgerEntry, 0, len(edits))
	for _, e := range edits {
		b, err := ref(e.Before)
		if err == nil {
			var a *BlobRef
			if a, err = ref(e.After); err == nil {
				entries = append(entries, LedgerEntry{Owner: owner, Step: step, Path: e.Path, Before: b, After: a, At: now})
				continue
			}
		}
		if pw != nil {
			pw.abort()
		}
		return fmt.Errorf("gitops: record the edit of %s under %s: store its content: %w", e.Path, owner, err)
	}
	if pw != nil {
		idx, err := pw.finish()
		if err != nil {
			return fmt.Errorf("gitops: record edits under %s: %w", owner, err)
		}
		s.packWritten(idx)
	}
	return s.appendLedger(owner, entries)
}

// appendLedger appends entries (numbering them) to owner's ledger file and
// fsyncs it.
func (s *Store) appendLedger(owner string, entries []LedgerEntry) error {
	name := s.ledgerPath(owner)
	created := false
	if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
		created = true
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return fmt.Errorf("gitops: record edits under %s: create %s: %w", owner, filepath.Dir(name), err)
		}
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("gitops: record edits under %s: open %s: %w", owner, name, err)
	}
	defer f.Close()
	old, err := readAllFile(f)
	if err != nil {
		return fmt.Errorf("gitops: record edits under %s: read %s: %w", owner, name, err)
	}
	// A torn last line (a crash during an append) is cut off.
	keep := bytes.LastIndexByte(old, '\n') + 1
	seq := bytes.Count(old[:keep], []byte{'\n'})
	var buf bytes.Buffer
	for i := range entries {
		seq++
		entries[i].Seq = seq
		line, err := json.Marshal(&entries[i])
		if err != nil {
			return err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if err := f.Truncate(int64(keep)); err != nil {
		return fmt.Errorf("gitops: record edits under %s: %s: %w", owner, name, err)
	}
	if _, err := f.WriteAt(buf.Bytes(), int64(keep)); err != nil {
		return fmt.Errorf("gitops: record edits under %s: write %s: %w", owner, name, err)
	}
	if syncWrites {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("gitops: record edits under %s: sync %s: %w", owner, name, err)
		}
	}
	if created {
		for d := filepath.Dir(name); isInside(s.dir, d); d = filepath.Dir(d) {
			if err := syncDir(d); err != nil {
				return fmt.Errorf("gitops: record edits under %s: sync %s: %w", owner, d, err)
			}
			if d == filepath.Join(s.dir, agentdDir) {
				break
			}
		}
	}
	return nil
}

func readAllFile(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, fi.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && n < len(buf) {
		return nil, err
	}
	return buf[:n], nil
}

// readLedger reads owner's entries (nil if none).
func (s *Store) readLedger(owner string) ([]LedgerEntry, error) {
	name := s.ledgerPath(owner)
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gitops: read the ledger of %s (%s): %w", owner, name, err)
	}
	var out []LedgerEntry
	for i, line := range bytes.Split(data, []byte{'\n'}) {
		if i == bytes.Count(data, []byte{'\n'}) {
			break // the part after the last newline: empty, or a torn append
		}
		var e LedgerEntry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("gitops: read the ledger of %s: %s line %d is damaged (%v); move the file aside to drop that owner's undo history", owner, name, i+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// ledgerOwners lists every owner with a ledger, sorted.
func (s *Store) ledgerOwners() ([]string, error) {
	base := filepath.Join(s.dir, filepath.FromSlash(ledgerDir))
	var out []string
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".jsonl") {
			return nil
		}
		rel, err := filepath.Rel(base, p)
		if err != nil {
			return nil
		}
		owner := strings.TrimSuffix(filepath.ToSlash(rel), ".jsonl")
		if checkOwner(owner) == nil {
			out = append(out, owner)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("gitops: list the ledgers in %s: %w", base, err)
	}
	sort.Strings(out)
	return out, nil
}

// LedgerOwners lists the owners that have a ledger (sorted).
func (s *Store) LedgerOwners(ctx context.Context) ([]string, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return s.ledgerOwners()
}

// ledgerHashes are the blobs every ledger names (gc keeps them).
func (s *Store) ledgerHashes() ([]plumbing.Hash, error) {
	owners, err := s.ledgerOwners()
	if err != nil {
		return nil, err
	}
	var out []plumbing.Hash
	for _, o := range owners {
		es, err := s.readLedger(o)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			for _, r := range []*BlobRef{e.Before, e.After} {
				if r != nil {
					out = append(out, plumbing.NewHash(r.Hash))
				}
			}
		}
	}
	return out, nil
}

// dropLedger removes owner's ledger (gc, when it prunes that run).
func (s *Store) dropLedger(owner string) error {
	name := s.ledgerPath(owner)
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("gitops: gc: remove the ledger %s: %w", name, err)
	}
	_ = os.Remove(filepath.Dir(name)) // only if empty
	return nil
}

// dropRunLedgers removes the ledgers of the runs whose reference name
// component (refSafeRunID) is in runs.
func (s *Store) dropRunLedgers(runs map[string]bool) error {
	if len(runs) == 0 {
		return nil
	}
	owners, err := s.ledgerOwners()
	if err != nil {
		return err
	}
	for _, o := range owners {
		id, ok := strings.CutPrefix(o, "run/")
		if ok && runs[refSafeRunID(id)] {
			if err := s.dropLedger(o); err != nil {
				return err
			}
		}
	}
	return nil
}

// recordSnapshotEditsLocked records what changed between snapshots from
// and to, under prefixes. saved are states known to come from elsewhere
// meanwhile (RecordSnapshotEditsOver): a path's edit starts there.
func (s *Store) recordSnapshotEditsLocked(owner, step, from, to string, prefixes []string, saved ...map[string]*FileState) error {
	a, err := s.getLocked(from)
	if err != nil {
		return fmt.Errorf("gitops: record the edits of %s: the snapshot before: %w", owner, err)
	}
	b, err := s.getLocked(to)
	if err != nil {
		return fmt.Errorf("gitops: record the edits of %s: the snapshot after: %w", owner, err)
	}
	ca, err := s.readCommit(plumbing.NewHash(a.ID))
	if err != nil {
		return fmt.Errorf("gitops: record the edits of %s: read snapshot %s: %w", owner, short(a.ID), err)
	}
	cb, err := s.readCommit(plumbing.NewHash(b.ID))
	if err != nil {
		return fmt.Errorf("gitops: record the edits of %s: read snapshot %s: %w", owner, short(b.ID), err)
	}
	changes, err := s.diffTrees(ca.TreeHash, cb.TreeHash)
	if err != nil {
		return fmt.Errorf("gitops: record the edits of %s: compare snapshots %s and %s: %w", owner, short(a.ID), short(b.ID), err)
	}
	var paths []string
	for _, c := range changes {
		if inPaths(c.Path, prefixes) {
			paths = append(paths, c.Path)
		}
	}
	if len(paths) == 0 {
		return nil
	}
	fa, err := s.lookupFiles(ca.TreeHash, paths)
	if err != nil {
		return fmt.Errorf("gitops: record the edits of %s: read snapshot %s: %w", owner, short(a.ID), err)
	}
	if err := s.diskBefore(ca, paths, fa); err != nil {
		// Recorded against the snapshot's own tree, as before Disk was
		// kept: a line the user typed before the command then counts as
		// the command's.
		s.log.Warn("gitops: the disk's tree of a snapshot cannot be read; a command's effect is recorded against the snapshot", "snapshot", short(a.ID), "err", err)
	}
	fb, err := s.lookupFiles(cb.TreeHash, paths)
	if err != nil {
		return fmt.Errorf("gitops: record the edits of %s: read snapshot %s: %w", owner, short(b.ID), err)
	}
	ref := func(f treeFile, ok bool) *BlobRef {
		if !ok {
			return nil
		}
		return &BlobRef{Hash: f.hash.String(), Mode: fsModeOf(f.mode)}
	}
	now := time.Now().UTC()
	var entries []LedgerEntry
	var fromSaved []Edit
	for _, p := range paths {
		x, inA := fa[p]
		y, inB := fb[p]
		if st := savedState(saved, p); st != nil {
			if inB && hashObject(plumbing.BlobObject, st.Data) == y.hash {
				continue // what was saved is what the snapshot after holds
			}
			e := Edit{Path: p, Before: st}
			if inB {
				data, err := s.readBlob(y.hash)
				if err != nil {
					return fmt.Errorf("gitops: record the edits of %s: read %s in snapshot %s: %w", owner, p, short(b.ID), err)
				}
				e.After = &FileState{Data: data, Mode: fsModeOf(y.mode)}
			}
			if inA {
				e.Before.Mode = fsModeOf(x.mode)
			}
			fromSaved = append(fromSaved, e)
			continue
		}
		if inA == inB && (!inA || x.hash == y.hash && x.mode == y.mode) {
			continue // the disk held it already when the snapshot before was taken
		}
		entries = append(entries, LedgerEntry{Owner: owner, Step: step, Path: p, Before: ref(x, inA), After: ref(y, inB), At: now})
	}
	if len(fromSaved) > 0 {
		if err := s.recordEditsLocked(owner, step, fromSaved); err != nil {
			return err
		}
	}
	if len(entries) == 0 {
		return nil
	}
	s.changed = true
	return s.appendLedger(owner, entries)
}

// savedState is path's state in saved (nil: none given).
func savedState(saved []map[string]*FileState, path string) *FileState {
	for _, m := range saved {
		if st := m[path]; st != nil {
			return st
		}
	}
	return nil
}

// loadState reads a ledger side's content (nil: absent).
func (s *Store) loadState(r *BlobRef) (*FileState, error) {
	if r == nil {
		return nil, nil
	}
	data, err := s.readBlob(plumbing.NewHash(r.Hash))
	if err != nil {
		return nil, err
	}
	return &FileState{Data: data, Mode: r.Mode}, nil
}

// diskBefore replaces in fa (paths as a snapshot before records them) each
// path's state with the disk's as that snapshot scanned it, where the
// snapshot is limited and recorded the disk's tree (snapMeta.Disk): a
// limited snapshot keeps the run's earlier version of a path the user
// changed meanwhile, and what a command changed from there must not
// count the user's change as the command's. An ignored path the snapshot
// keeps (snapMeta.Kept) is not in the disk's tree; its recorded state
// stays.
func (s *Store) diskBefore(c *object.Commit, paths []string, fa map[string]treeFile) error {
	meta, err := parseCommitMessage(c.Message)
	if err != nil || meta.Disk == "" {
		return nil // not limited: the tree is the disk's
	}
	disk, err := s.lookupFiles(plumbing.NewHash(meta.Disk), paths)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if slices.Contains(meta.Kept, p) {
			continue
		}
		if f, ok := disk[p]; ok {
			fa[p] = f
		} else {
			delete(fa, p)
		}
	}
	return nil
}
