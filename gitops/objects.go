package gitops

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"path"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// packSink streams new objects into one pack (initial or large snapshots).
type packSink struct {
	s *Store
	p *packWriter
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (k packSink) put(t plumbing.ObjectType, h plumbing.Hash, data []byte) error {
	// A commit (it holds the time it was made) is never in the store
	// already, and a duplicate would be harmless: it is written without
	// the look-up, so a snapshot with nothing new loads no pack index.
	if k.p.has(h) || t != plumbing.CommitObject && k.s.hasObject(h) || !k.p.reserve(h) {
		return nil
	}
	if t == plumbing.TreeObject {
		// Readable before the pack is complete: the snapshot compares its
		// new trees with the previous snapshot's before it commits.
		k.s.stMu.Lock()
		if k.s.pendingTrees == nil {
			k.s.pendingTrees = make(map[plumbing.Hash][]byte)
		}
		k.s.pendingTrees[h] = data
		k.s.stMu.Unlock()
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	return k.p.add(t, h, int64(len(data)), deflate(buf, data))
}

// encodeObject encodes a go-git object and returns its id and content.
func encodeObject(o interface {
	Encode(plumbing.EncodedObject) error
}) (plumbing.Hash, []byte, error) {
	obj := &plumbing.MemoryObject{}
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	r, err := obj.Reader()
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	return obj.Hash(), data, nil
}

// treeBuilder writes the trees of a sorted path list, reusing the ids of
// directories whose files did not change. Paths sort as git sorts tree
// entries (a directory compares as "name/"), so each directory is one
// contiguous range, found by binary search: clean directories cost nothing.
type treeBuilder struct {
	sink  objSink
	paths []string                       // sorted
	get   func(i int, p string) *fileRec // the file of paths[i] (p)
	prev  map[string]plumbing.Hash       // dir -> tree id at the last snapshot
	dirty map[string]bool                // dirs whose content changed since
	known map[plumbing.Hash]struct{}
	trees map[string]plumbing.Hash // result: dir -> tree id (may be prev itself)
	// carried: trees already holds prev's clean directories (a copy of
	// prev without the dirty ones), so build need not copy them.
	carried bool
}

func dirKey(dir string) string { return strings.TrimSuffix(dir, "/") }

// markDirty marks p's directory and all its ancestors.
func markDirty(dirty map[string]bool, p string) {
	d := path.Dir(p)
	for {
		if d == "." {
			d = ""
		}
		if dirty[d] {
			return
		}
		dirty[d] = true
		if d == "" {
			return
		}
		d = path.Dir(d)
	}
}

// rangeEnd returns the end of the run of paths[i:] that start with the
// directory prefix sub ("a/b/").
func rangeEnd(paths []string, i int, sub string) int {
	end := sub[:len(sub)-1] + "0" // '0' sorts right after '/'
	return i + sort.SearchStrings(paths[i:], end)
}

func (b *treeBuilder) build(dir string, lo, hi int) (plumbing.Hash, error) {
	key := dirKey(dir)
	if h, ok := b.prev[key]; ok && !b.dirty[key] {
		if !b.carried && !sameMap(b.prev, b.trees) {
			b.copyClean(dir, lo, hi)
		}
		return h, nil
	}
	entries := make([]object.TreeEntry, 0, 8)
	for i := lo; i < hi; {
		rest := b.paths[i][len(dir):]
		if k := strings.IndexByte(rest, '/'); k >= 0 {
			sub := dir + rest[:k+1]
			j := rangeEnd(b.paths[:hi], i, sub)
			h, err := b.build(sub, i, j)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			entries = append(entries, object.TreeEntry{Name: rest[:k], Mode: filemode.Dir, Hash: h})
			i = j
			continue
		}
		r := b.get(i, b.paths[i])
		entries = append(entries, object.TreeEntry{Name: rest, Mode: r.mode, Hash: r.hash})
		i++
	}
	h, data, err := encodeObject(&object.Tree{Entries: entries})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, ok := b.known[h]; !ok {
		if err := b.sink.put(plumbing.TreeObject, h, data); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("store tree of %q: %w", key, err)
		}
	}
	b.trees[key] = h
	return h, nil
}

// copyClean carries a clean directory's tree ids (its own and its
// subdirectories') over into a new trees map.
func (b *treeBuilder) copyClean(dir string, lo, hi int) {
	b.trees[dirKey(dir)] = b.prev[dirKey(dir)]
	for i := lo; i < hi; {
		rest := b.paths[i][len(dir):]
		k := strings.IndexByte(rest, '/')
		if k < 0 {
			i++
			continue
		}
		sub := dir + rest[:k+1]
		j := rangeEnd(b.paths[:hi], i, sub)
		if _, ok := b.prev[dirKey(sub)]; ok {
			b.copyClean(sub, i, j)
		}
		i = j
	}
}

func sameMap(a, b map[string]plumbing.Hash) bool {
	if a == nil || b == nil {
		return false
	}
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// snapMeta is what a snapshot's commit message carries (as JSON after a
// summary line), so the metadata is exactly as durable as the commit.
type snapMeta struct {
	RunID          string        `json:"runId,omitempty"`
	StepID         string        `json:"stepId,omitempty"`
	Label          string        `json:"label"`
	CreatedAt      time.Time     `json:"createdAt"`
	Kind           string        `json:"kind,omitempty"`
	FilesChanged   int           `json:"filesChanged"`
	Changes        []FileChange  `json:"changes,omitempty"`
	ChangesOmitted int           `json:"changesOmitted,omitempty"`
	Files          int           `json:"files"`
	Skipped        []SkippedFile `json:"skipped,omitempty"`
	// Permission bits, which git trees cannot hold: the most common ones
	// of regular and of executable files, and the files that differ.
	DefaultPerm     uint32            `json:"defaultPerm,omitempty"`
	DefaultExecPerm uint32            `json:"defaultExecPerm,omitempty"`
	Perms           map[string]uint32 `json:"perms,omitempty"`
	// EmptyDirs are the directories that held nothing to snapshot (git
	// trees cannot hold them either): a restore keeps or re-creates them.
	EmptyDirs []string `json:"emptyDirs,omitempty"`
	// Absent (safety snapshots) are paths that did not exist although the
	// restore that took the snapshot was to create them (ignored paths a
	// walk cannot vouch for): restoring the snapshot deletes them again.
	Absent []string `json:"absent,omitempty"`
	// Kept are the kept paths (kept.go) this snapshot records: in its
	// tree, or absent then. A kept path it does not list was kept later:
	// the snapshot stands for its pre-image.
	Kept []string `json:"kept,omitempty"`
	// Disk (limited snapshots, SnapshotLimit) is the tree of the disk as
	// the snapshot scanned it, which the limited tree leaves out where the
	// user changed a path the step did not: what a command that starts
	// here changes is recorded for undo against it (ledger_store.go
	// recordSnapshotEditsLocked), so a line the user typed earlier is not
	// credited to the command. gc keeps it as long as the snapshot.
	Disk string `json:"disk,omitempty"`
}

// permRecord fills m's permission fields from files. Counting is done in
// arrays, and the files are looked at a second time only if some differ
// from the defaults: this runs on every file of every snapshot, so files
// are best given in path order (a slice of the records, which lie in
// memory in that order) rather than from a map.
func (m *snapMeta) permRecord(files iter.Seq[*fileRec]) {
	var count [2][0o1000]int // [regular, executable][permission bits]
	var total [2]int
	for r := range files {
		if r.mode != filemode.Symlink && r.perm != 0 {
			k := 0
			if r.mode == filemode.Executable {
				k = 1
			}
			count[k][r.perm&0o777]++
			total[k]++
		}
	}
	m.DefaultPerm, m.DefaultExecPerm = 0o644, 0o755
	defs := [2]*uint32{&m.DefaultPerm, &m.DefaultExecPerm}
	for k := range count {
		best := 0
		for perm, n := range count[k] {
			if n > best { // ties: the lowest bits, as the loop goes up
				best, *defs[k] = n, uint32(perm)
			}
		}
	}
	if count[0][m.DefaultPerm] == total[0] && count[1][m.DefaultExecPerm] == total[1] {
		return
	}
	for r := range files {
		if r.mode == filemode.Symlink || r.perm == 0 {
			continue
		}
		p := r.path
		def := m.DefaultPerm
		if r.mode == filemode.Executable {
			def = m.DefaultExecPerm
		}
		if r.perm != def {
			if m.Perms == nil {
				m.Perms = map[string]uint32{}
			}
			m.Perms[p] = r.perm
		}
	}
}

// perm is the permission bits the snapshot records for p (of git mode
// mode): 0644 or 0755 for snapshots written before they were recorded.
func (m *snapMeta) perm(p string, mode filemode.FileMode) uint32 {
	if mode == filemode.Symlink {
		return 0
	}
	if v, ok := m.Perms[p]; ok {
		return v
	}
	if mode == filemode.Executable {
		if m.DefaultExecPerm != 0 {
			return m.DefaultExecPerm
		}
		return 0o755
	}
	if m.DefaultPerm != 0 {
		return m.DefaultPerm
	}
	return 0o644
}

var agentdSig = object.Signature{Name: "agentd", Email: "agentd@localhost"}

func commitMessage(m *snapMeta) (string, error) {
	js, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", err
	}
	summary := "agentd snapshot"
	if l := strings.TrimSpace(strings.SplitN(m.Label, "\n", 2)[0]); l != "" {
		summary += ": " + l
	}
	return summary + "\n\n" + string(js) + "\n", nil
}

func parseCommitMessage(msg string) (*snapMeta, error) {
	i := strings.Index(msg, "\n\n")
	if i < 0 {
		return nil, fmt.Errorf("no metadata in the commit message")
	}
	var m snapMeta
	if err := json.Unmarshal([]byte(msg[i+2:]), &m); err != nil {
		return nil, fmt.Errorf("metadata in the commit message: %w", err)
	}
	return &m, nil
}

// readCommit returns a commit of the store.
func (s *Store) readCommit(h plumbing.Hash) (*object.Commit, error) {
	s.stMu.Lock()
	defer s.stMu.Unlock()
	obj, err := s.object(plumbing.CommitObject, h)
	if err != nil {
		return nil, err
	}
	return object.DecodeCommit(s.st, obj)
}

// treeFile is one file of a snapshot's tree.
type treeFile struct {
	mode filemode.FileMode
	hash plumbing.Hash
	perm uint32 // permission bits (0: the default for mode)
}

// flatten lists every file of tree h under prefix.
func (s *Store) flatten(h plumbing.Hash) (map[string]treeFile, error) {
	out := make(map[string]treeFile)
	var walk func(h plumbing.Hash, prefix string) error
	walk = func(h plumbing.Hash, prefix string) error {
		t, err := s.readTree(h)
		if err != nil {
			return fmt.Errorf("read tree %s (%q): %w", h, prefix, err)
		}
		for _, e := range t.Entries {
			p := prefix + e.Name
			if e.Mode == filemode.Dir {
				if err := walk(e.Hash, p+"/"); err != nil {
					return err
				}
				continue
			}
			out[p] = treeFile{mode: e.Mode, hash: e.Hash}
		}
		return nil
	}
	return out, walk(h, "")
}

// readBlob returns a blob's content.
func (s *Store) readBlob(h plumbing.Hash) ([]byte, error) {
	s.stMu.Lock()
	defer s.stMu.Unlock()
	obj, err := s.object(plumbing.BlobObject, h)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	defer r.Close()
	return io.ReadAll(r)
}
