package gitops

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// The store reads objects from its packs itself, through go-git's packfile
// reader, with pack indexes it loads once and keeps up to date as packs
// come and go. go-git's own ObjectStorage forgets every index whenever a
// pack is added (Reindex) and decodes them all again on the next read: for
// the initial snapshot's 78k-object index that was ~25 ms added to the
// first read after every snapshot (a restore's tree comparison). Loose
// objects, which snapshots never write, are still read through go-git.

// pack is one pack of the store.
type pack struct {
	name string // "pack-<checksum>"
	idx  *idxfile.MemoryIndex
	pf   *packfile.Packfile // opened at the first read
}

// packList returns the store's packs, loading the indexes of packs it does
// not know yet (caller holds stMu).
func (s *Store) packList() []*pack {
	if s.packsStale || s.packs == nil {
		s.scanPacks()
	}
	return s.packs
}

// scanPacks brings s.packs in line with objects/pack: indexes of new packs
// are loaded, packs that are gone are closed (caller holds stMu).
func (s *Store) scanPacks() {
	s.packsStale = false
	s.packErr = nil
	dir := filepath.Join(s.dir, "objects", "pack")
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.packErr = fmt.Errorf("list the snapshot store's packs in %s (%w); check its permissions, or move the store away to start a new one", dir, err)
	}
	var bad []error
	known := make(map[string]*pack, len(s.packs))
	for _, p := range s.packs {
		known[p.name] = p
	}
	packs := make([]*pack, 0, len(ents)/2)
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".idx")
		if !ok || !strings.HasPrefix(name, "pack-") {
			continue
		}
		if p := known[name]; p != nil {
			packs = append(packs, p)
			delete(known, name)
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil {
			idx := idxfile.NewMemoryIndex()
			if err = idxfile.NewDecoder(bytes.NewReader(data)).Decode(idx); err == nil {
				packs = append(packs, &pack{name: name, idx: idx})
				continue
			}
		}
		// The objects of this pack cannot be found without its index:
		// say so whenever one of them is missing, rather than "object not
		// found" alone.
		bad = append(bad, fmt.Errorf("the pack index %s cannot be read (%w); if the .pack beside it is intact, 'git index-pack %s' rebuilds it, else run 'agentd snapshot gc'",
			filepath.Join(dir, e.Name()), err, filepath.Join(dir, name+".pack")))
	}
	if len(bad) > 0 {
		s.packErr = errors.Join(append([]error{s.packErr}, bad...)...)
		s.log.Warn("gitops: "+s.packErr.Error(), "dir", s.dir)
	}
	for _, p := range known {
		p.close()
	}
	s.packs = packs
	// Snapshots write only packs: loose objects come only from elsewhere.
	s.looseNone = true
	top, err := os.ReadDir(filepath.Join(s.dir, "objects"))
	if err != nil {
		s.looseNone = false // cannot tell: look for loose objects one by one
	}
	for _, e := range top {
		if e.IsDir() && len(e.Name()) == 2 {
			s.looseNone = false
			break
		}
	}
}

func (p *pack) close() {
	if p.pf != nil {
		p.pf.Close()
		p.pf = nil
	}
}

// closePacks closes every open pack and forgets them (caller holds stMu).
func (s *Store) closePacks() {
	for _, p := range s.packs {
		p.close()
	}
	s.packs = nil
}

// packWritten adds a pack this process just wrote.
func (s *Store) packWritten(idx *idxfile.MemoryIndex) {
	s.stMu.Lock()
	defer s.stMu.Unlock()
	if idx != nil && s.packs != nil {
		s.packs = append(s.packs, &pack{name: "pack-" + plumbing.Hash(idx.PackfileChecksum).String(), idx: idx})
	}
	// go-git reads loose objects only, but keep what it knows right.
	s.st.ObjectStorage.Reindex()
}

// packsRemoved forgets packs whose files were deleted (caller holds stMu).
func (s *Store) packsRemoved(names []string) {
	gone := make(map[string]bool, len(names))
	for _, n := range names {
		gone[n] = true
	}
	kept := s.packs[:0]
	for _, p := range s.packs {
		if gone[p.name] {
			p.close()
			continue
		}
		kept = append(kept, p)
	}
	clear(s.packs[len(kept):])
	s.packs = kept
	s.st.ObjectStorage.Reindex()
}

// hasObject reports whether the store has object h: in the packs' indexes,
// then as a loose object.
func (s *Store) hasObject(h plumbing.Hash) bool {
	s.stMu.Lock()
	defer s.stMu.Unlock()
	for _, p := range s.packList() {
		// A lookup error (none for in-memory indexes) counts as absent:
		// the object is then written again, which is harmless.
		if ok, err := p.idx.Contains(h); ok && err == nil {
			return true
		}
	}
	if s.looseNone {
		return false
	}
	hx := h.String()
	_, err := os.Lstat(filepath.Join(s.dir, "objects", hx[:2], hx[2:]))
	return err == nil
}

// object reads object h of type t (plumbing.AnyObject: any type). The
// caller holds stMu.
func (s *Store) object(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	obj, err := s.packedObject(h)
	if errors.Is(err, fs.ErrNotExist) {
		// A pack went away behind our back (git gc run by hand on the
		// store): look again.
		s.scanPacks()
		obj, err = s.packedObject(h)
	}
	if err != nil {
		return nil, err
	}
	if obj == nil {
		obj, err := s.st.EncodedObject(t, h) // loose
		if err != nil && s.packErr != nil {
			return nil, fmt.Errorf("%w (%w)", err, s.packErr)
		}
		return obj, err
	}
	if t != plumbing.AnyObject && obj.Type() != t {
		return nil, fmt.Errorf("object %s is a %s, not a %s: %w", h, obj.Type(), t, plumbing.ErrObjectNotFound)
	}
	return obj, nil
}

// packedObject reads h from the pack that has it (nil, nil: none has).
func (s *Store) packedObject(h plumbing.Hash) (plumbing.EncodedObject, error) {
	for _, p := range s.packList() {
		ok, err := p.idx.Contains(h)
		if err != nil {
			return nil, fmt.Errorf("look up %s in %s.idx: %w; run 'agentd snapshot gc' to rewrite the packs", h, p.name, err)
		}
		if !ok {
			continue
		}
		if p.pf == nil {
			f, err := osfs.New(filepath.Join(s.dir, "objects", "pack")).Open(p.name + ".pack")
			if err != nil {
				return nil, fmt.Errorf("open %s.pack: %w", p.name, err)
			}
			if s.objCache == nil {
				s.objCache = cache.NewObjectLRU(32 * cache.MiByte)
			}
			// No filesystem: objects come back in memory, deltas resolved.
			p.pf = packfile.NewPackfileWithCache(p.idx, nil, f, s.objCache, 0)
		}
		obj, err := p.pf.Get(h)
		if err != nil {
			return nil, fmt.Errorf("read %s from %s.pack: %w", h, p.name, err)
		}
		return obj, nil
	}
	return nil, nil
}

// readTree returns a tree of the store.
func (s *Store) readTree(h plumbing.Hash) (*object.Tree, error) {
	s.stMu.Lock()
	defer s.stMu.Unlock()
	if data, ok := s.pendingTrees[h]; ok {
		obj := &plumbing.MemoryObject{}
		obj.SetType(plumbing.TreeObject)
		obj.Write(data)
		return object.DecodeTree(s.st, obj)
	}
	obj, err := s.object(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	return object.DecodeTree(s.st, obj)
}
