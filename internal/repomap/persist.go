package repomap

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/agentd/agentd/internal/cachefile"
)

// cacheVersion changes whenever what a parse yields changes (new
// languages, symbol kinds) or the file's layout does, so an old cache is
// parsed anew.
const cacheVersion = 5 // 5: a flat binary layout, mapped (was gob)

// The cache file is made to be loaded by a new process (agentd plan,
// agentd run) in a few milliseconds: mapped (or read in one go), then
// fixed-size records and slices that point into its bytes, nothing
// decoded by reflection. Layout (little-endian):
//
//	magic   "AGRM" + 4 digits of cacheVersion
//	header  u32 len(root), u32 files, u32 contents, u32 len(strings),
//	        u32 len(symbols), u32 identifiers, u32 keys,
//	        u64 id (random), u64 base (a delta file: the id of the
//	        cache file it applies to; 0 in the cache file)
//	root
//	files     files    × {u32 path offset, u32 path len, i64 size,
//	                      i64 mtime, u64 inode, u32 content}         36 bytes
//	contents  contents × {hash, u32 ident offset, u32 ident count,
//	                      u32 symbol offset, u32 symbol len, u32 parsed} 52 bytes
//	strings   the paths
//	symbols   per content: uvarint count, then per symbol uvarint len,
//	          name, uvarint kind, uvarint line
//	padding   to a multiple of 4
//	idents    identifiers × u32 (each content's sorted hashes)
//	posts     identifiers × u32: the contents using each key, by key
//	keys      keys × u32: the distinct identifier hashes, sorted
//	starts    (keys+1) × u32: where each key's contents start in posts
//	          (a delta file has no posts, keys nor starts)
//
// The identifiers (6.4M on a 40,000-file tree) are used in place: a
// file's []uint32 is a view of the file's bytes. The index (posts, keys,
// starts) is what a ranking looks up instead of scanning every file's
// identifiers, so a new process touches only the pages it needs. Every
// offset is checked against the file's length, so a damaged file is an
// error, never a crash (a damaged index gives a poorer ranking, not a
// wrong map).
var cacheMagic = fmt.Sprintf("AGRM%04d", cacheVersion)

const (
	headerLen  = 8 + 7*4 + 2*8
	fileRecLen = 36
	tagRecLen  = 32 + 5*4
)

// symbolKinds numbers the kinds symbolsOf gives; a kind not listed is
// written as its text.
var symbolKinds = []string{"func", "method", "type", "class", "interface", "struct", "enum", "trait", "const", "var", "macro", "module"}

// littleEndian: the identifiers can be viewed in place.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// load reads Options.CacheFile, if any. A missing file is no error; a
// cache of another version or root is ignored (parsed anew).
func (m *Map) load() error {
	if m.opts.CacheFile == "" {
		return nil
	}
	m.loadDirs()
	// A new process maps the file and touches only the pages it uses (the
	// identifiers' index, not every identifier); a long-lived one (Watch)
	// reads it, since the file is replaced while it runs.
	mode := cachefile.Map
	if m.opts.Watch {
		mode = cachefile.Copy
	}
	data, err := cachefile.Load(m.opts.CacheFile, mode)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(data) < 8 || string(data[:8]) != cacheMagic {
		return nil // another version (gob before 5): parsed anew
	}
	if err := m.decode(data, false); err != nil {
		m.files, m.byHash, m.ix, m.baseID = map[string]*file{}, map[hash]*tags{}, nil, 0
		return fmt.Errorf("%s is damaged (%w); it is made anew", m.opts.CacheFile, err)
	}
	if m.baseID == 0 {
		return nil
	}
	// The files changed since the cache file was written.
	delta, err := os.ReadFile(m.deltaFile())
	if err != nil || len(delta) < 8 || string(delta[:8]) != cacheMagic {
		return nil
	}
	if err := m.decode(delta, true); err != nil {
		m.log.Warn("repository map: delta file not used; the files it held are read again", "file", m.deltaFile(), "err", err)
	}
	return nil
}

// deltaFile holds the records of the files changed since the cache file
// was written, in the same layout (without an index), so that a small
// change costs a small write rather than rewriting the whole cache.
func (m *Map) deltaFile() string { return m.opts.CacheFile + ".delta" }

// decode adds the records of data (a cache file, or a delta file when
// delta is set) to the map.
func (m *Map) decode(data []byte, delta bool) error {
	if len(data) < headerLen {
		return errors.New("short header")
	}
	u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(data[off:]) }
	rootLen, nFiles, nTags, strLen, symLen, nIdents, nKeys := int(u32(8)), int(u32(12)), int(u32(16)), int(u32(20)), int(u32(24)), int(u32(28)), int(u32(32))
	off := headerLen
	rootOff := off
	off += rootLen
	filesOff := off
	off += nFiles * fileRecLen
	tagsOff := off
	off += nTags * tagRecLen
	strOff := off
	off += strLen
	symOff := off
	off += symLen
	off = (off + 3) &^ 3
	identOff := off
	off += 4 * nIdents
	postsOff := off
	if !delta { // a delta file has no index
		off += 4 * nIdents
	}
	keysOff := off
	off += 4 * nKeys
	startsOff := off
	if !delta {
		off += 4 * (nKeys + 1)
	}
	if off != len(data) || nFiles < 0 || nTags < 0 || nIdents < 0 || nKeys < 0 || nKeys > nIdents {
		return fmt.Errorf("length %d, want %d", len(data), off)
	}
	if string(data[rootOff:rootOff+rootLen]) != m.src.Root() {
		return nil // another workspace's (two roots hashed alike)
	}
	id, base := binary.LittleEndian.Uint64(data[36:]), binary.LittleEndian.Uint64(data[44:])
	if delta != (base != 0) || delta && base != m.baseID {
		return nil // a delta made against another cache file: its files are read again
	}
	idents := u32s(data[identOff:postsOff])
	ix := &identIndex{posts: u32s(data[postsOff:keysOff]), keys: u32s(data[keysOff:startsOff]), starts: u32s(data[startsOff:off])}
	if len(m.files) == 0 {
		m.files, m.byHash = make(map[string]*file, nFiles), make(map[hash]*tags, nTags)
	}
	strs := data[strOff : strOff+strLen]
	syms := data[symOff : symOff+symLen]
	all := make([]tags, nTags)
	byIdx := make([]*tags, nTags)
	for i := range nTags {
		r := data[tagsOff+i*tagRecLen:]
		var h hash
		copy(h[:], r[:32])
		io, in, so, sl, parsed := int(u32(tagsOff+i*tagRecLen+32)), int(u32(tagsOff+i*tagRecLen+36)), int(u32(tagsOff+i*tagRecLen+40)), int(u32(tagsOff+i*tagRecLen+44)), u32(tagsOff+i*tagRecLen+48)
		if io+in > nIdents || so+sl > symLen || io < 0 || in < 0 || so < 0 || sl < 0 {
			return fmt.Errorf("content %d out of bounds", i)
		}
		t := &all[i]
		t.Parsed = parsed != 0
		if in > 0 {
			t.Idents = idents[io : io+in : io+in]
		}
		if sl > 0 {
			s, err := decodeSymbols(syms[so : so+sl])
			if err != nil {
				return fmt.Errorf("content %d: %w", i, err)
			}
			t.Syms = s
		}
		if old := m.byHash[h]; old != nil {
			byIdx[i] = old
		} else {
			m.byHash[h] = t
			byIdx[i] = t
			if !delta {
				t.ix = int32(i + 1)
			}
		}
	}
	recs := make([]file, nFiles)
	for i := range nFiles {
		o := filesOff + i*fileRecLen
		po, pl, ti := int(u32(o)), int(u32(o+4)), int(u32(o+32))
		if po+pl > strLen || po < 0 || pl <= 0 || ti >= nTags || ti < 0 {
			return fmt.Errorf("file %d out of bounds", i)
		}
		f := &recs[i]
		f.Path = unsafe.String(&strs[po], pl)
		f.Size = int64(binary.LittleEndian.Uint64(data[o+8:]))
		f.ModTime = int64(binary.LittleEndian.Uint64(data[o+16:]))
		f.Ino = binary.LittleEndian.Uint64(data[o+24:])
		f.Tags = byIdx[ti]
		copy(f.Hash[:], data[tagsOff+ti*tagRecLen:][:32])
		m.files[f.Path] = f
		if delta {
			m.touch(f.Path) // still not in the cache file
		}
	}
	if !delta {
		ix.contents = byIdx
		m.ix, m.baseID = ix, id
	}
	return nil
}

// u32s views b (little-endian u32s) as a []uint32, in place when it can.
func u32s(b []byte) []uint32 {
	n := len(b) / 4
	if n == 0 {
		return nil
	}
	if littleEndian && uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
		return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), n)
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

func decodeSymbols(b []byte) ([]Symbol, error) {
	bad := errors.New("bad symbol")
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, bad
	}
	b = b[k:]
	out := make([]Symbol, n)
	for i := range out {
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l || l == 0 {
			return nil, bad
		}
		out[i].Name = unsafe.String(&b[k], int(l))
		b = b[k+int(l):]
		kind, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, bad
		}
		b = b[k:]
		if kind < uint64(len(symbolKinds)) {
			out[i].Kind = symbolKinds[kind]
		} else {
			l := kind - uint64(len(symbolKinds))
			if uint64(len(b)) < l {
				return nil, bad
			}
			out[i].Kind = string(b[:l])
			b = b[l:]
		}
		line, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, bad
		}
		out[i].Line = int(line)
		b = b[k:]
	}
	if len(b) != 0 {
		return nil, bad
	}
	return out, nil
}

func appendSymbols(b []byte, syms []Symbol) []byte {
	b = binary.AppendUvarint(b, uint64(len(syms)))
	for _, s := range syms {
		b = binary.AppendUvarint(b, uint64(len(s.Name)))
		b = append(b, s.Name...)
		kind := -1
		for i, k := range symbolKinds {
			if k == s.Kind {
				kind = i
				break
			}
		}
		if kind >= 0 {
			b = binary.AppendUvarint(b, uint64(kind))
		} else {
			b = binary.AppendUvarint(b, uint64(len(symbolKinds)+len(s.Kind)))
			b = append(b, s.Kind...)
		}
		b = binary.AppendUvarint(b, uint64(s.Line))
	}
	return b
}

// encode lays out the records of the files in all (nil: every file of
// the map) as load reads them, with id and base as the header's (see
// above), and returns the index it holds. A delta (base set) gets no
// index.
func (m *Map) encode(all map[string]*file, id, base uint64) ([]byte, *identIndex) {
	root := m.src.Root()
	if all == nil {
		all = m.files
	}
	var files []*file
	tagIdx := map[*tags]uint32{}
	var order []*file // one file per content, in tagIdx order
	strLen, nIdents := 0, 0
	for _, f := range all {
		if f.overlay || f.Tags == nil || f.Path == "" {
			continue
		}
		files = append(files, f)
		strLen += len(f.Path)
		if _, ok := tagIdx[f.Tags]; !ok {
			tagIdx[f.Tags] = uint32(len(order))
			order = append(order, f)
			nIdents += len(f.Tags.Idents)
		}
	}
	var symArea []byte
	symAt := make([][2]uint32, len(order))
	for i, f := range order {
		if len(f.Tags.Syms) == 0 {
			continue
		}
		start := len(symArea)
		symArea = appendSymbols(symArea, f.Tags.Syms)
		symAt[i] = [2]uint32{uint32(start), uint32(len(symArea) - start)}
	}
	var posts, keys, starts []uint32
	if base == 0 {
		posts, keys, starts = buildIndex(order, nIdents)
	}
	size := headerLen + len(root) + len(files)*fileRecLen + len(order)*tagRecLen + strLen + len(symArea)
	pad := (4 - size%4) % 4
	size += pad + 4*(nIdents+len(posts)+len(keys)+len(starts))
	b := make([]byte, 0, size)
	b = append(b, cacheMagic...)
	for _, v := range []int{len(root), len(files), len(order), strLen, len(symArea), nIdents, len(keys)} {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	b = binary.LittleEndian.AppendUint64(b, id)
	b = binary.LittleEndian.AppendUint64(b, base)
	b = append(b, root...)
	pathOff := 0
	for _, f := range files {
		b = binary.LittleEndian.AppendUint32(b, uint32(pathOff))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(f.Path)))
		b = binary.LittleEndian.AppendUint64(b, uint64(f.Size))
		b = binary.LittleEndian.AppendUint64(b, uint64(f.ModTime))
		b = binary.LittleEndian.AppendUint64(b, f.Ino)
		b = binary.LittleEndian.AppendUint32(b, tagIdx[f.Tags])
		pathOff += len(f.Path)
	}
	identOff := 0
	for i, f := range order {
		b = append(b, f.Hash[:]...)
		b = binary.LittleEndian.AppendUint32(b, uint32(identOff))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(f.Tags.Idents)))
		b = binary.LittleEndian.AppendUint32(b, symAt[i][0])
		b = binary.LittleEndian.AppendUint32(b, symAt[i][1])
		parsed := uint32(0)
		if f.Tags.Parsed {
			parsed = 1
		}
		b = binary.LittleEndian.AppendUint32(b, parsed)
		identOff += len(f.Tags.Idents)
	}
	for _, f := range files {
		b = append(b, f.Path...)
	}
	b = append(b, symArea...)
	b = append(b, make([]byte, pad)...)
	for _, f := range order {
		b = appendU32s(b, f.Tags.Idents)
	}
	b = appendU32s(b, posts)
	b = appendU32s(b, keys)
	b = appendU32s(b, starts)
	ix := &identIndex{keys: keys, starts: starts, posts: posts}
	for _, f := range order {
		ix.contents = append(ix.contents, f.Tags)
	}
	return b, ix
}

func appendU32s(b []byte, v []uint32) []byte {
	if littleEndian && len(v) > 0 {
		return append(b, unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))...)
	}
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, x)
	}
	return b
}

// buildIndex inverts the contents' identifiers: keys are the distinct
// hashes, sorted; posts[starts[k]:starts[k+1]] the contents (indexes in
// order, ascending) using keys[k]. A radix sort of (hash, content) pairs:
// 6.4M of them on a 40,000-file tree.
func buildIndex(order []*file, n int) (posts, keys, starts []uint32) {
	pairs := make([]uint64, 0, n)
	for ci, f := range order {
		for _, id := range f.Tags.Idents {
			pairs = append(pairs, uint64(id)<<32|uint64(ci))
		}
	}
	tmp := make([]uint64, len(pairs))
	radix16(pairs, tmp, 32)
	radix16(tmp, pairs, 48)
	posts = make([]uint32, len(pairs))
	for i, p := range pairs {
		if h := uint32(p >> 32); len(keys) == 0 || keys[len(keys)-1] != h {
			keys = append(keys, h)
			starts = append(starts, uint32(i))
		}
		posts[i] = uint32(p)
	}
	return posts, keys, append(starts, uint32(len(pairs)))
}

// radix16 sorts src into dst by the 16 bits at shift, stably.
func radix16(src, dst []uint64, shift uint) {
	count := make([]int, 1<<16+1)
	for _, v := range src {
		count[(v>>shift)&0xffff+1]++
	}
	for i := 1; i < len(count); i++ {
		count[i] += count[i-1]
	}
	for _, v := range src {
		k := (v >> shift) & 0xffff
		dst[count[k]] = v
		count[k]++
	}
}

// dirsFile is where the file set's directory listings are kept beside the
// cache file: a new process lists again only the directories whose stat
// changed (a file's content changing leaves its directory's stat as it
// is; the files are still stat'ed).
func (m *Map) dirsFile() string { return m.opts.CacheFile + ".dirs" }

// loadDirs gives the file set the listings saved by the last process,
// unless it has listings already (the daemon's, or the snapshot store's).
func (m *Map) loadDirs() {
	fs := m.src.Files()
	if fs.DirCacheGen() != 0 {
		return
	}
	data, err := os.ReadFile(m.dirsFile())
	if err != nil {
		return
	}
	if err := fs.LoadDirCache(data); err != nil {
		m.log.Debug("repository map: saved directory listings not used", "file", m.dirsFile(), "err", err)
	}
	m.dirGen = fs.DirCacheGen()
}

// saveDirs writes the file set's listings if they changed since loaded or
// saved.
func (m *Map) saveDirs() error {
	fs := m.src.Files()
	gen := fs.DirCacheGen()
	if gen == m.dirGen {
		return nil
	}
	var b bytes.Buffer
	if err := fs.SaveDirCache(&b); err != nil {
		return nil // nothing listed under ignore rules yet
	}
	if err := writeAtomic(m.dirsFile(), b.Bytes()); err != nil {
		return err
	}
	m.dirGen = gen
	return nil
}

// deltaEvery: Save writes the files changed since the cache file was
// written to the delta file beside it (a small write; the next process
// reads nothing again), and rewrites the whole cache file (65 MB for a
// 40,000-file tree, with its index: about 0.3 s of CPU) only once they
// are 1/deltaEvery of the map.
const deltaEvery = 50

// Save writes what changed since the map was loaded or saved: the records
// of the files changed since the cache file was written into the delta
// file, or, once they are many (deltaEvery), the whole cache file,
// atomically (a temporary file renamed over it). Open buffers are not
// saved: their content is not the disk's. The directory listings beside
// it are saved whenever they changed.
func (m *Map) Save() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.opts.CacheFile == "" {
		return nil
	}
	err := m.saveDirs()
	if !m.dirty {
		return err
	}
	if m.baseID == 0 || len(m.unsaved)*deltaEvery >= len(m.files) {
		return errors.Join(err, m.save())
	}
	changed := make(map[string]*file, len(m.unsaved))
	for p := range m.unsaved {
		if f := m.files[p]; f != nil {
			changed[p] = f
		}
	}
	// A file dropped is left out: the next walk does not find it.
	data, _ := m.encode(changed, newID(), m.baseID)
	if werr := writeAtomic(m.deltaFile(), data); werr != nil {
		return errors.Join(err, werr)
	}
	m.dirty = false
	return err
}

// SaveNow writes the whole cache file if the map changed at all since the
// cache file was written.
func (m *Map) SaveNow() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.opts.CacheFile == "" {
		return nil
	}
	if len(m.unsaved) > 0 {
		m.dirty = true
	}
	return errors.Join(m.saveDirs(), m.save())
}

func (m *Map) save() error {
	if !m.dirty {
		return nil
	}
	id := newID()
	data, ix := m.encode(nil, id, 0)
	if err := writeAtomic(m.opts.CacheFile, data); err != nil {
		return err
	}
	// The index just written serves this map's rankings too (the daemon's).
	if m.ix != nil {
		for _, t := range m.ix.contents {
			if t != nil {
				t.ix = 0
			}
		}
	}
	for i, t := range ix.contents {
		t.ix = int32(i + 1)
	}
	m.ix = ix
	// The delta made against the old cache file would not apply (its
	// base is not id) but is dropped at once.
	if err := os.Remove(m.deltaFile()); err != nil && !errors.Is(err, os.ErrNotExist) {
		m.log.Debug("repository map: old delta file left", "file", m.deltaFile(), "err", err)
	}
	m.dirty, m.unsaved, m.baseID = false, nil, id
	return nil
}

// newID is a cache file's identity: random, never 0.
func newID() uint64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:])
		if id := binary.LittleEndian.Uint64(b[:]); id != 0 {
			return id
		}
	}
}

// writeAtomic writes data to name through a temporary file renamed over it.
func writeAtomic(name string, data []byte) error {
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("repository map cache: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".repomap-*")
	if err != nil {
		return fmt.Errorf("repository map cache: %w", err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("repository map cache %s: %w", name, err)
	}
	return nil
}
