package gitops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Kept paths: ignored files the agent's own tools changed.
//
// A snapshot holds the files git would consider, so an ignored file
// (.env, node_modules/..., build/...) is in none. When a step's file tool
// is about to change one, the engine calls Store.Keep first: the store
// saves the file's pre-image (its content, or that it did not exist) and
// adds the path to the workspace's kept set. From then on every snapshot
// records the kept paths like any other file (their content, or as absent),
// and a restore treats them as files the agent may have changed: it
// restores, creates or deletes them, with the usual conflict protection. A
// snapshot taken before a path was kept (its metadata does not list it)
// stands for the path's pre-image. Files the agent never touched stay out
// of snapshots, so snapshots cost what they cost before.

// keptName is the kept set's file in the store directory.
const keptName = "kept.json"

// keptEntry is one kept path's pre-image: what it was just before the
// agent first changed it.
type keptEntry struct {
	Absent bool      `json:"absent,omitempty"`
	Hash   string    `json:"hash,omitempty"`
	Mode   uint32    `json:"mode,omitempty"`
	Perm   uint32    `json:"perm,omitempty"`
	At     time.Time `json:"at"`
}

// keptSet maps workspace-relative slash paths to their pre-images.
type keptSet map[string]keptEntry

// loadKept reads the kept set (nil if there is none). The caller holds the
// store's lock.
func (s *Store) loadKept() (keptSet, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, keptName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the kept paths %s: %w", filepath.Join(s.dir, keptName), err)
	}
	var k keptSet
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("read the kept paths %s: %w", filepath.Join(s.dir, keptName), err)
	}
	return k, nil
}

// paths returns the kept paths in order.
func (k keptSet) paths() []string {
	out := make([]string, 0, len(k))
	for p := range k {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// ErrCannotKeep is wrapped by Keep's error when an ignored file cannot be
// saved for undo (too large, unreadable, a special file): the caller must
// not change it.
var ErrCannotKeep = errors.New("cannot be saved for undo")

// Keep saves, before the agent changes them, the pre-images of the given
// paths that snapshots do not hold (ignored files), and adds them to the
// kept set (see above). Paths snapshots already hold, and paths already
// kept, are left as they are. It returns the paths it added. On error
// (ErrCannotKeep for a file it cannot save) nothing is added.
func (s *Store) Keep(ctx context.Context, paths []string) ([]string, error) {
	// The usual case, no ignored path, takes no lock: a step's change
	// set does not wait for another step's snapshot.
	ignored := false
	for _, p := range paths {
		if checkRel(p) != nil || s.files.Ignored(p, false) {
			ignored = true
			break
		}
	}
	if !ignored {
		return nil, nil
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	kept, err := s.loadKept()
	if err != nil {
		return nil, fmt.Errorf("gitops: keep: %w", err)
	}
	var pw *packWriter
	sink := &lazyPackSink{s: s, pw: &pw}
	added := keptSet{}
	now := time.Now().UTC()
	for _, p := range paths {
		if err := checkRel(p); err != nil {
			return nil, fmt.Errorf("gitops: keep: %w", err)
		}
		if _, ok := kept[p]; ok {
			continue
		}
		if _, ok := added[p]; ok {
			continue
		}
		if !s.files.Ignored(p, false) {
			continue // in every snapshot already
		}
		e, data, err := s.readPreImage(p)
		if err != nil {
			if pw != nil {
				pw.abort()
			}
			return nil, fmt.Errorf("gitops: %s is ignored, so only a copy kept now lets it be undone, and it %w: %v", p, ErrCannotKeep, err)
		}
		if !e.Absent {
			if err := sink.put(plumbing.BlobObject, plumbing.NewHash(e.Hash), data); err != nil {
				if pw != nil {
					pw.abort()
				}
				return nil, fmt.Errorf("gitops: keep %s: %w", p, err)
			}
		}
		e.At = now
		added[p] = e
	}
	if len(added) == 0 {
		return nil, nil
	}
	if pw != nil {
		idx, err := pw.finish()
		pw = nil
		if err != nil {
			return nil, fmt.Errorf("gitops: keep: %w", err)
		}
		s.packWritten(idx)
	}
	if kept == nil {
		kept = keptSet{}
	}
	for p, e := range added {
		kept[p] = e
	}
	b, err := json.MarshalIndent(kept, "", " ")
	if err != nil {
		return nil, err
	}
	s.changed = true
	if err := writeFileAtomic(filepath.Join(s.dir, keptName), b, 0o644, true); err != nil {
		return nil, fmt.Errorf("gitops: keep: write %s: %w", filepath.Join(s.dir, keptName), err)
	}
	out := added.paths()
	s.log.Info("gitops: keeping ignored files the agent changes in snapshots", "paths", out)
	return out, ctx.Err()
}

// readPreImage reads p from the disk as a kept entry (without At).
func (s *Store) readPreImage(p string) (keptEntry, []byte, error) {
	fi, err := os.Lstat(s.abs(p))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return keptEntry{Absent: true}, nil, nil
	}
	if err != nil {
		return keptEntry{}, nil, err
	}
	if fi.IsDir() {
		return keptEntry{}, nil, fmt.Errorf("is a directory")
	}
	mode, ok := gitMode(fi.Mode())
	if !ok {
		return keptEntry{}, nil, fmt.Errorf("is a special file (FIFO, socket or device)")
	}
	if mode != filemode.Symlink && fi.Size() > s.opts.MaxFileSize {
		return keptEntry{}, nil, fmt.Errorf("is too large (%d bytes, over the snapshot size limit of %d)", fi.Size(), s.opts.MaxFileSize)
	}
	data, err := s.readEntry(&fileRec{path: p, mode: mode, size: fi.Size()})
	if err != nil {
		return keptEntry{}, nil, err
	}
	h := hashObject(plumbing.BlobObject, data)
	return keptEntry{Hash: h.String(), Mode: uint32(mode), Perm: permBits(fi.Mode())}, data, nil
}

// keptOverrides returns the tree entries of the kept paths as they are on
// disk now (nil: absent), writing new blobs through sink, for the paths
// not in skip. Files it cannot read keep no entry (and are named in the
// log): the snapshot then records what the disk's tree has.
func (s *Store) keptOverrides(kept keptSet, skip func(string) bool, sink objSink) (map[string]*treeFile, []string) {
	ov := make(map[string]*treeFile, len(kept))
	var absent []string
	for _, p := range kept.paths() {
		if skip(p) {
			continue
		}
		e, data, err := s.readPreImage(p)
		if err != nil {
			s.log.Warn("gitops: a kept file cannot be recorded in the snapshot", "path", p, "err", err)
			continue
		}
		if e.Absent {
			ov[p] = nil
			absent = append(absent, p)
			continue
		}
		h := plumbing.NewHash(e.Hash)
		if err := sink.put(plumbing.BlobObject, h, data); err != nil {
			s.log.Warn("gitops: a kept file cannot be recorded in the snapshot", "path", p, "err", err)
			continue
		}
		ov[p] = &treeFile{mode: filemode.FileMode(e.Mode), hash: h, perm: e.Perm}
	}
	return ov, absent
}

// keptTargets says, for a restore to (or a protection base of) the
// snapshot with metadata meta, what the kept paths it does not record were
// then: their pre-images (a snapshot older than the keeping of a path
// stands for its pre-image). inTree are the kept paths' entries in its
// tree (a path it holds because it was not ignored then is its own). want
// gets the present ones; the absent ones are returned.
func keptTargets(kept keptSet, meta *snapMeta, inTree, want map[string]treeFile) (absent []string) {
	for _, p := range kept.paths() {
		if slices.Contains(meta.Kept, p) {
			continue
		}
		if _, ok := inTree[p]; ok {
			continue
		}
		e := kept[p]
		if e.Absent {
			absent = append(absent, p)
			continue
		}
		want[p] = treeFile{mode: filemode.FileMode(e.Mode), hash: plumbing.NewHash(e.Hash), perm: e.Perm}
	}
	return absent
}

// keptHashes are the pre-image blobs of the kept set (gc keeps them).
func (k keptSet) hashes() []plumbing.Hash {
	var out []plumbing.Hash
	for _, e := range k {
		if !e.Absent && e.Hash != "" {
			out = append(out, plumbing.NewHash(e.Hash))
		}
	}
	return out
}
