package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// keepManual is how many manual (and safety) snapshots retention keeps.
var keepManual = 200

// looseRepackThreshold: more loose objects than this are packed by gc.
var looseRepackThreshold = 256

// GC prunes runs beyond KeepRuns and objects nothing references, and keeps
// the store within its quota.
func (s *Store) GC(ctx context.Context) (*GCResult, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	s.changed = true
	before, err := s.objectsSize()
	if err != nil {
		return nil, err
	}
	res := &GCResult{BytesBefore: before}
	all, err := s.snapshots("")
	if err != nil {
		return nil, err
	}
	// Runs, newest first by their newest snapshot.
	runNewest := make(map[string]time.Time)
	for _, sn := range all {
		if r := runOfRef(sn.Ref); r != "" && sn.CreatedAt.After(runNewest[r]) {
			runNewest[r] = sn.CreatedAt
		}
	}
	runs := make([]string, 0, len(runNewest))
	for r := range runNewest {
		runs = append(runs, r)
	}
	sort.Slice(runs, func(i, j int) bool { return runNewest[runs[i]].After(runNewest[runs[j]]) })
	drop := make(map[string]bool)
	if len(runs) > s.opts.KeepRuns {
		for _, r := range runs[s.opts.KeepRuns:] {
			drop[r] = true
		}
		res.RunsPruned = len(runs) - s.opts.KeepRuns
	}
	manual := 0
	var kept []*Snapshot
	for _, sn := range all { // newest first
		del := false
		if r := runOfRef(sn.Ref); r != "" {
			del = drop[r]
		} else {
			manual++
			del = manual > keepManual
		}
		if del {
			if err := s.removeRef(sn.Ref); err != nil {
				return nil, err
			}
			continue
		}
		kept = append(kept, sn)
	}
	// A pruned run cannot be undone any more: its ledger goes too.
	if err := s.dropRunLedgers(drop); err != nil {
		return nil, err
	}
	n, err := s.prune(ctx)
	if err != nil {
		return nil, err
	}
	res.ObjectsPruned += n
	// Quota: drop the oldest snapshots (never the newest) until it fits.
	for len(kept) > 1 {
		size, err := s.objectsSize()
		if err != nil {
			return nil, err
		}
		if size <= s.opts.Quota {
			break
		}
		k := max(1, (len(kept)-1)/4)
		oldest := kept[len(kept)-k:]
		kept = kept[:len(kept)-k]
		pruned := make(map[string]bool)
		for _, sn := range oldest {
			if err := s.removeRef(sn.Ref); err != nil {
				return nil, err
			}
			if r := runOfRef(sn.Ref); r != "" {
				pruned[r] = true
			}
		}
		gone := map[string]bool{}
		for r := range pruned {
			still := false
			for _, sn := range kept {
				if runOfRef(sn.Ref) == r {
					still = true
					break
				}
			}
			if !still {
				res.RunsPruned++
				gone[r] = true
			}
		}
		if err := s.dropRunLedgers(gone); err != nil {
			return nil, err
		}
		s.log.Info("gitops: snapshot store over its quota; dropped the oldest snapshots", "dir", s.dir, "dropped", len(oldest), "quota", s.opts.Quota)
		n, err := s.prune(ctx)
		if err != nil {
			return nil, err
		}
		res.ObjectsPruned += n
	}
	if res.BytesAfter, err = s.objectsSize(); err != nil {
		return nil, err
	}
	return res, nil
}

// GCLoop runs GC every interval until ctx is done (the daemon runs it in a
// goroutine it owns). Failures are logged, not fatal.
func (s *Store) GCLoop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if r, err := s.GC(ctx); err != nil {
				if ctx.Err() == nil {
					s.log.Warn("gitops: background gc failed", "dir", s.dir, "err", err)
				}
			} else if r.RunsPruned > 0 || r.ObjectsPruned > 0 {
				s.log.Info("gitops: background gc", "dir", s.dir, "runsPruned", r.RunsPruned, "objectsPruned", r.ObjectsPruned, "bytesAfter", r.BytesAfter)
			}
		}
	}
}

func runOfRef(ref string) string {
	if !strings.HasPrefix(ref, runRefPrefix) {
		return ""
	}
	rest := ref[len(runRefPrefix):]
	if i := strings.LastIndexByte(rest, '/'); i > 0 {
		return rest[:i]
	}
	return ""
}

func (s *Store) removeRef(ref string) error {
	s.changed = true
	delete(s.refCache, ref)
	s.stMu.Lock()
	err := s.st.RemoveReference(plumbing.ReferenceName(ref))
	s.stMu.Unlock()
	if err != nil {
		return fmt.Errorf("gitops: gc: remove %s: %w", ref, err)
	}
	// Leave no empty run directories behind.
	dir := filepath.Dir(filepath.Join(s.dir, filepath.FromSlash(ref)))
	for strings.HasPrefix(dir, filepath.Join(s.dir, "refs", "agentd")+string(filepath.Separator)) {
		if os.Remove(dir) != nil {
			break
		}
		dir = filepath.Dir(dir)
	}
	return syncDir(dir)
}

// objectsSize is the size of the store's objects (what the quota bounds).
func (s *Store) objectsSize() (int64, error) {
	var n int64
	err := filepath.WalkDir(filepath.Join(s.dir, "objects"), func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile (a temporary file)
		}
		if err != nil {
			return err
		}
		if !d.IsDir() {
			fi, err := d.Info()
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("gitops: measure the snapshot store's size (for its quota): %w; check the permissions of %s", err, filepath.Join(s.dir, "objects"))
	}
	return n, nil
}

// reachable returns every object the snapshot references reach.
func (s *Store) reachable(ctx context.Context) (map[plumbing.Hash]struct{}, error) {
	refs, err := s.refs()
	if err != nil {
		return nil, err
	}
	seen := make(map[plumbing.Hash]struct{})
	var walk func(h plumbing.Hash) error
	walk = func(h plumbing.Hash) error {
		if _, ok := seen[h]; ok {
			return nil
		}
		seen[h] = struct{}{}
		if err := ctx.Err(); err != nil {
			return err
		}
		t, err := s.readTree(h)
		if err != nil {
			return fmt.Errorf("read tree %s: %w", h, err)
		}
		for _, e := range t.Entries {
			if e.Mode == filemode.Dir {
				if err := walk(e.Hash); err != nil {
					return err
				}
			} else {
				seen[e.Hash] = struct{}{}
			}
		}
		return nil
	}
	// The kept paths' pre-images (kept.go) stand for every snapshot
	// older than their keeping.
	kept, err := s.loadKept()
	if err != nil {
		return nil, fmt.Errorf("gitops: gc: %w", err)
	}
	for _, h := range kept.hashes() {
		seen[h] = struct{}{}
	}
	// The ledgers' contents: what undo reverts to and from.
	lh, err := s.ledgerHashes()
	if err != nil {
		return nil, fmt.Errorf("gitops: gc: %w", err)
	}
	for _, h := range lh {
		seen[h] = struct{}{}
	}
	for name, h := range refs {
		c, err := s.readCommit(h)
		if err != nil {
			return nil, fmt.Errorf("gitops: gc: read %s: %w", name, err)
		}
		seen[h] = struct{}{}
		for _, p := range c.ParentHashes {
			seen[p] = struct{}{}
		}
		if err := walk(c.TreeHash); err != nil {
			return nil, fmt.Errorf("gitops: gc: %s: %w", name, err)
		}
		// A limited snapshot's disk tree (snapMeta.Disk): what a command
		// that started there is recorded against. Its subtrees are
		// mostly the snapshot's own, walked already.
		if strings.Contains(c.Message, `"disk":`) {
			if m, err := parseCommitMessage(c.Message); err == nil && m.Disk != "" {
				if err := walk(plumbing.NewHash(m.Disk)); err != nil {
					if ctx.Err() != nil {
						return nil, err
					}
					// Only a command's record for undo needs it, and
					// that falls back to the snapshot's own tree.
					s.log.Warn("gitops: gc: a snapshot's disk tree cannot be read", "ref", name, "err", err)
				}
			}
		}
	}
	return seen, nil
}

// prune removes objects no snapshot reaches: unreachable loose objects are
// deleted; packs holding unreachable objects (and many loose objects) are
// rewritten into one new pack, which is on disk before anything is deleted.
func (s *Store) prune(ctx context.Context) (int, error) {
	reach, err := s.reachable(ctx)
	if err != nil {
		return 0, err
	}
	objDir := filepath.Join(s.dir, "objects")
	packDir := filepath.Join(objDir, "pack")
	var looseReach, looseDead []plumbing.Hash
	dirs, err := os.ReadDir(objDir)
	if err != nil {
		return 0, fmt.Errorf("gitops: gc: list %s: %w; check the snapshot store's permissions", objDir, err)
	}
	for _, d := range dirs {
		if !d.IsDir() || len(d.Name()) != 2 {
			continue
		}
		files, err := os.ReadDir(filepath.Join(objDir, d.Name()))
		if err != nil {
			return 0, fmt.Errorf("gitops: gc: list %s: %w; check the snapshot store's permissions", filepath.Join(objDir, d.Name()), err)
		}
		for _, f := range files {
			if len(f.Name()) != 38 {
				continue
			}
			h := plumbing.NewHash(d.Name() + f.Name())
			if _, ok := reach[h]; ok {
				looseReach = append(looseReach, h)
			} else {
				looseDead = append(looseDead, h)
			}
		}
	}
	type packInfo struct {
		name       string
		live, dead []plumbing.Hash
	}
	var packs []packInfo
	ents, err := os.ReadDir(packDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("gitops: gc: list %s: %w; check the snapshot store's permissions", packDir, err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".idx") || !strings.HasPrefix(e.Name(), "pack-") {
			continue
		}
		hs, err := packHashes(filepath.Join(packDir, e.Name()))
		if err != nil {
			return 0, fmt.Errorf("gitops: gc: %w", err)
		}
		pi := packInfo{name: strings.TrimSuffix(e.Name(), ".idx")}
		for _, h := range hs {
			if _, ok := reach[h]; ok {
				pi.live = append(pi.live, h)
			} else {
				pi.dead = append(pi.dead, h)
			}
		}
		packs = append(packs, pi)
	}
	pruned := len(looseDead)
	var rewrite []packInfo
	var toPack []plumbing.Hash
	for _, p := range packs {
		if len(p.dead) > 0 {
			rewrite = append(rewrite, p)
			toPack = append(toPack, p.live...)
			pruned += len(p.dead)
		}
	}
	packLoose := len(looseReach) > looseRepackThreshold
	if packLoose {
		toPack = append(toPack, looseReach...)
	}
	if len(toPack) > 0 {
		if err := s.writePackOf(ctx, toPack); err != nil {
			return 0, fmt.Errorf("gitops: gc: %w", err)
		}
	}
	// Everything still needed is on disk in its new place: delete.
	s.stMu.Lock()
	s.st.Close()
	s.stMu.Unlock()
	var leftover []error
	for _, p := range rewrite {
		base := filepath.Join(packDir, p.name)
		if err := os.Remove(base + ".idx"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.openStorage()
			return 0, fmt.Errorf("gitops: gc: remove the rewritten pack index %s.idx: %w; check the snapshot store's permissions and run gc again", base, err)
		}
		// Without its index the pack is never read: if it cannot be
		// removed it only takes space, and the next gc retries.
		for _, ext := range []string{".pack", ".rev"} {
			if err := os.Remove(base + ext); err != nil && !errors.Is(err, fs.ErrNotExist) {
				leftover = append(leftover, fmt.Errorf("%s%s: %w", base, ext, err))
			}
		}
	}
	rm := looseDead
	if packLoose {
		rm = append(rm, looseReach...)
	}
	for _, h := range rm {
		hx := h.String()
		if err := os.Remove(filepath.Join(objDir, hx[:2], hx[2:])); err != nil && !errors.Is(err, fs.ErrNotExist) {
			leftover = append(leftover, fmt.Errorf("%s: %w", filepath.Join(objDir, hx[:2], hx[2:]), err))
		}
	}
	for _, d := range dirs {
		if d.IsDir() && len(d.Name()) == 2 {
			os.Remove(filepath.Join(objDir, d.Name())) // only if empty: an error means it is not, which is fine
		}
	}
	if len(leftover) > 0 {
		s.log.Warn("gitops: gc could not remove some unneeded objects; they only take space, and the next gc retries (check the snapshot store's permissions)",
			"dir", s.dir, "err", errors.Join(leftover...))
	}
	for _, d := range []string{packDir, objDir} {
		if err := syncDir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.openStorage()
			return 0, fmt.Errorf("gitops: gc: sync %s: %w; the removals may not survive a crash, run gc again", d, err)
		}
	}
	if err := s.openStorage(); err != nil {
		return 0, err
	}
	if pruned > 0 {
		// Caches (here and in other processes) may name pruned objects.
		s.filterCache(reach)
		gen := strconv.FormatInt(time.Now().UnixNano(), 10)
		if err := writeFileAtomic(filepath.Join(s.dir, gcGenName), []byte(gen), 0o644, true); err != nil {
			return 0, err
		}
		s.gcGen = gen
		s.metaCache = make(map[plumbing.Hash]*Snapshot)
	}
	return pruned, nil
}

// packMergeAt is the number of packs above which the small ones (under
// smallPack bytes) are merged into one.
var (
	packMergeAt       = 24
	smallPack   int64 = 32 << 20
)

// consolidatePacks merges small packs once there are many: every snapshot
// writes one, and readers look objects up pack by pack. Objects are copied
// as they are stored (compressed), so a merge costs about the small packs'
// size in I/O, and the indexes already loaded are reused.
func (s *Store) consolidatePacks(ctx context.Context) error {
	packDir := filepath.Join(s.dir, "objects", "pack")
	// Counted from the directory first: the packs' indexes are loaded
	// only when there is something to merge (a one-shot command that
	// snapshots an unchanged tree reads no index at all).
	if ents, err := os.ReadDir(packDir); err == nil {
		n := 0
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".idx") {
				n++
			}
		}
		if n <= packMergeAt {
			return nil
		}
	}
	s.stMu.Lock()
	packs := s.packList()
	s.stMu.Unlock()
	if len(packs) <= packMergeAt {
		return nil
	}
	var small []*pack
	for _, p := range packs {
		if fi, err := os.Stat(filepath.Join(packDir, p.name+".pack")); err == nil && fi.Size() < smallPack {
			small = append(small, p)
		}
	}
	if len(small) < 2 {
		return nil
	}
	pw, err := newPackWriter(packDir)
	if err != nil {
		return err
	}
	for _, p := range small {
		if err := s.copyPack(ctx, pw, packDir, p); err != nil {
			pw.abort()
			return fmt.Errorf("merge %s: %w", p.name, err)
		}
	}
	idx, err := pw.finish()
	if err != nil {
		return err
	}
	s.packWritten(idx)
	s.changed = true
	s.stMu.Lock()
	defer s.stMu.Unlock()
	names := make([]string, len(small))
	for i, p := range small {
		names[i] = p.name
		base := filepath.Join(packDir, p.name)
		if err := os.Remove(base + ".idx"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the merged pack index %s.idx: %w; its objects are also in the new pack, so it only takes space: check the snapshot store's permissions", base, err)
		}
		// Without its index the pack is never read; if it cannot be
		// removed it only takes space.
		if err := os.Remove(base + ".pack"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("gitops: could not remove a merged pack; it only takes space (check the snapshot store's permissions)", "file", base+".pack", "err", err)
		}
	}
	s.packsRemoved(names)
	return syncDir(packDir)
}

// copyPack appends pack p's objects to pw. Whole objects are copied as
// stored, checked against the CRC in p's index; deltas (from a pack git
// wrote) are resolved and stored whole.
func (s *Store) copyPack(ctx context.Context, pw *packWriter, packDir string, p *pack) error {
	data, err := os.ReadFile(filepath.Join(packDir, p.name+".pack"))
	if err != nil {
		return err
	}
	if len(data) < 32 {
		return fmt.Errorf("%s.pack is truncated", p.name)
	}
	it, err := p.idx.Entries()
	if err != nil {
		return err
	}
	var ents []*idxfile.Entry
	for {
		e, err := it.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			it.Close()
			return err
		}
		ents = append(ents, e)
	}
	it.Close()
	sort.Slice(ents, func(i, j int) bool { return ents[i].Offset < ents[j].Offset })
	end := uint64(len(data) - 20) // the trailing checksum
	var buf bytes.Buffer
	for i, e := range ents {
		if err := ctx.Err(); err != nil {
			return err
		}
		next := end
		if i+1 < len(ents) {
			next = ents[i+1].Offset
		}
		if e.Offset < 12 || next > end || e.Offset >= next {
			return fmt.Errorf("object %s: offset %d out of range", e.Hash, e.Offset)
		}
		if !pw.reserve(e.Hash) {
			continue
		}
		raw := data[e.Offset:next]
		switch plumbing.ObjectType((raw[0] >> 4) & 7) {
		case plumbing.OFSDeltaObject, plumbing.REFDeltaObject:
			t, content, err := s.readAny(e.Hash)
			if err != nil {
				return err
			}
			if err := pw.add(t, e.Hash, int64(len(content)), deflate(&buf, content)); err != nil {
				return err
			}
		default:
			if crc32.ChecksumIEEE(raw) != e.CRC32 {
				return fmt.Errorf("object %s: CRC mismatch (the pack is damaged)", e.Hash)
			}
			if err := pw.addRaw(e.Hash, e.CRC32, raw); err != nil {
				return err
			}
		}
	}
	return nil
}

// packHashes lists the objects of a pack by its index.
func packHashes(idxPath string) ([]plumbing.Hash, error) {
	data, err := os.ReadFile(idxPath)
	if err != nil {
		return nil, err
	}
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bytes.NewReader(data)).Decode(idx); err != nil {
		return nil, fmt.Errorf("read %s: %w", idxPath, err)
	}
	it, err := idx.Entries()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []plumbing.Hash
	for {
		e, err := it.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e.Hash)
	}
}

// writePackOf writes the given objects (read from the store) into a new
// pack, on disk when it returns.
func (s *Store) writePackOf(ctx context.Context, hashes []plumbing.Hash) error {
	pw, err := newPackWriter(filepath.Join(s.dir, "objects", "pack"))
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	for _, h := range hashes {
		if err := ctx.Err(); err != nil {
			pw.abort()
			return err
		}
		if pw.has(h) {
			continue
		}
		t, data, err := s.readAny(h)
		if err != nil {
			pw.abort()
			return err
		}
		if err := pw.add(t, h, int64(len(data)), deflate(&buf, data)); err != nil {
			pw.abort()
			return err
		}
	}
	idx, err := pw.finish()
	if err == nil {
		s.packWritten(idx)
	}
	return err
}

// filterCache drops cache entries whose blobs are gone and the tree cache.
func (s *Store) filterCache(reach map[plumbing.Hash]struct{}) {
	c := s.ensureCache()
	files := c.fileMap()
	for p, r := range files {
		if _, ok := reach[r.hash]; !ok {
			delete(files, p)
		}
	}
	c.sorted, c.byDir, c.recs = nil, nil, nil
	c.trees = make(map[string]plumbing.Hash)
	s.treesKnown = nil
	s.watchBase = nil
	s.saveCache()
}

func (s *Store) readAny(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	s.stMu.Lock()
	defer s.stMu.Unlock()
	obj, err := s.object(plumbing.AnyObject, h)
	if err != nil {
		return 0, nil, fmt.Errorf("read object %s: %w", h, err)
	}
	r, err := obj.Reader()
	if err != nil {
		return 0, nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	return obj.Type(), data, err
}
