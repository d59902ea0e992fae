package gitops

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/agentd/agentd/internal/cachefile"
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
		data, err := cachefile.Load(filepath.Join(dir, e.Name()), cacheMode()) // mapped in a one-shot process
		if err == nil {
			var idx *idxfile.MemoryIndex
			if idx, err = decodeIdx(data); err == nil {
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

// decodeIdx makes a pack index (version 2) of an .idx file's bytes, read
// with one read: the index's tables are slices of data, not copies, so
// loading the initial snapshot's 80k-object index costs its checksum and
// nothing more (go-git's decoder copies every table and checks the sum
// with a collision-detecting SHA-1: ~10 ms, paid by every command that
// reads an object).
func decodeIdx(data []byte) (*idxfile.MemoryIndex, error) {
	const header, fanout, sums = 8, 256 * 4, 2 * 20
	if len(data) < header+fanout+sums || !bytes.Equal(data[:4], []byte{0xff, 't', 'O', 'c'}) {
		return nil, idxfile.ErrMalformedIdxFile
	}
	if v := binary.BigEndian.Uint32(data[4:8]); v != idxfile.VersionSupported {
		return nil, fmt.Errorf("%w: v%d", idxfile.ErrUnsupportedVersion, v)
	}
	idx := idxfile.NewMemoryIndex()
	idx.Version = idxfile.VersionSupported
	for k := range idx.Fanout {
		idx.Fanout[k] = binary.BigEndian.Uint32(data[header+4*k:])
		if k > 0 && idx.Fanout[k] < idx.Fanout[k-1] {
			return nil, fmt.Errorf("%w: fanout table is not monotonically non-decreasing at entry %d", idxfile.ErrMalformedIdxFile, k)
		}
	}
	nr := int64(idx.Fanout[255])
	minSize := int64(header+fanout+sums) + nr*(20+4+4)
	maxSize := minSize
	if nr > 0 {
		maxSize += (nr - 1) * 8
	}
	if int64(len(data)) < minSize || int64(len(data)) > maxSize {
		return nil, fmt.Errorf("%w: file size %d is inconsistent with object count %d", idxfile.ErrMalformedIdxFile, len(data), nr)
	}
	end := len(data) - sums
	if sum := sha1.Sum(data[:len(data)-20]); !bytes.Equal(sum[:], data[len(data)-20:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", idxfile.ErrMalformedIdxFile)
	}
	n := int(nr)
	names := data[header+fanout:][:n*20]
	crcs := data[header+fanout+n*20:][:n*4]
	offs := data[header+fanout+n*24:][:n*4]
	prev := 0
	for k := range idx.Fanout {
		cur := int(idx.Fanout[k])
		if cur == prev {
			idx.FanoutMapping[k] = -1 // go-git's noMapping
			continue
		}
		idx.FanoutMapping[k] = len(idx.Names)
		idx.Names = append(idx.Names, names[prev*20:cur*20:cur*20])
		idx.CRC32 = append(idx.CRC32, crcs[prev*4:cur*4:cur*4])
		idx.Offset32 = append(idx.Offset32, offs[prev*4:cur*4:cur*4])
		prev = cur
	}
	if o64 := header + fanout + n*28; o64 < end {
		idx.Offset64 = data[o64:end:end]
	}
	copy(idx.PackfileChecksum[:], data[end:])
	copy(idx.IdxChecksum[:], data[end+20:])
	return idx, nil
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
		return parseTree(h, data)
	}
	obj, err := s.object(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data := make([]byte, obj.Size())
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	return parseTree(h, data)
}

// parseTree decodes a tree object's content (entries "mode name\0id"):
// the names are substrings of one copy of data, where go-git's decoder
// reads each entry through a bufio.Reader (a restore reads hundreds of
// trees, some with a thousand entries).
func parseTree(h plumbing.Hash, data []byte) (*object.Tree, error) {
	all := string(data)
	t := &object.Tree{Hash: h, Entries: make([]object.TreeEntry, 0, strings.Count(all, "\x00"))}
	for off := 0; off < len(all); {
		sp := strings.IndexByte(all[off:], ' ')
		if sp < 0 {
			return nil, fmt.Errorf("tree %s is damaged at byte %d: no mode", h, off)
		}
		mode, err := filemode.New(all[off : off+sp])
		if err != nil {
			return nil, fmt.Errorf("tree %s is damaged at byte %d: %w", h, off, err)
		}
		off += sp + 1
		nul := strings.IndexByte(all[off:], 0)
		if nul < 0 || off+nul+1+len(plumbing.ZeroHash) > len(all) {
			return nil, fmt.Errorf("tree %s is damaged at byte %d: truncated entry", h, off)
		}
		e := object.TreeEntry{Name: all[off : off+nul], Mode: mode}
		off += nul + 1
		copy(e.Hash[:], all[off:])
		off += len(e.Hash)
		t.Entries = append(t.Entries, e)
	}
	return t, nil
}
