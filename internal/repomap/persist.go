package repomap

import (
	"bufio"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// cacheVersion changes whenever what a parse yields changes (new
// languages, symbol kinds), so an old cache is parsed anew.
const cacheVersion = 4 // 4: identifiers packed as bytes

type diskCache struct {
	Version int
	Root    string
	Files   []diskFile
}

type diskFile struct {
	Path    string
	Size    int64
	ModTime int64
	Ino     uint64
	Hash    hash
	Syms    []Symbol
	// Idents packed 4 bytes each, little-endian: gob writes a byte slice
	// as it is, a []uint32 number by number (most of the file, and of the
	// time to write and read it).
	Idents []byte
	Parsed bool
}

func packIdents(ids []uint32) []byte {
	out := make([]byte, 0, 4*len(ids))
	for _, id := range ids {
		out = binary.LittleEndian.AppendUint32(out, id)
	}
	return out
}

func unpackIdents(b []byte) []uint32 {
	if len(b) == 0 {
		return nil
	}
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

// load reads Options.CacheFile, if any. A missing file is no error; a
// cache of another version or root is ignored.
func (m *Map) load() error {
	if m.opts.CacheFile == "" {
		return nil
	}
	f, err := os.Open(m.opts.CacheFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	var dc diskCache
	if err := gob.NewDecoder(bufio.NewReaderSize(f, 1<<20)).Decode(&dc); err != nil {
		return fmt.Errorf("decoding %s: %w", m.opts.CacheFile, err)
	}
	if dc.Version != cacheVersion || dc.Root != m.src.Root() {
		return nil
	}
	for _, df := range dc.Files {
		t := m.byHash[df.Hash]
		if t == nil {
			t = &tags{Syms: df.Syms, Idents: unpackIdents(df.Idents), Parsed: df.Parsed}
			m.byHash[df.Hash] = t
		}
		m.files[df.Path] = &file{Path: df.Path, Size: df.Size, ModTime: df.ModTime, Ino: df.Ino, Hash: df.Hash, Tags: t}
	}
	return nil
}

// saveEvery: Save rewrites the cache file once redoing what changed since
// it was written (files read, parsed or dropped, weighed by costRead and
// costParse) would cost at least 1/saveEvery of reading every file. The
// file holds every file of the map (35 MB, 0.25 s of CPU to write for a
// 40,000-file tree), while a file left out of it costs the next process
// one read, or one parse: rewriting it after each small change would cost
// more than it saves.
const saveEvery = 100

// Save writes the cache to Options.CacheFile if the map changed enough
// since it was loaded or saved (saveEvery; SaveNow writes any change),
// atomically: a temporary file renamed over it. Open buffers are not
// saved: their content is not the disk's.
func (m *Map) Save() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unsavedCost*saveEvery < len(m.files) {
		return nil
	}
	return m.save()
}

// SaveNow writes the cache to Options.CacheFile if the map changed at all
// since it was loaded or saved.
func (m *Map) SaveNow() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.save()
}

func (m *Map) save() error {
	if m.opts.CacheFile == "" || !m.dirty {
		return nil
	}
	dc := diskCache{Version: cacheVersion, Root: m.src.Root(), Files: make([]diskFile, 0, len(m.files))}
	for _, f := range m.files {
		if f.overlay || f.Tags == nil {
			continue
		}
		dc.Files = append(dc.Files, diskFile{Path: f.Path, Size: f.Size, ModTime: f.ModTime, Ino: f.Ino, Hash: f.Hash,
			Syms: f.Tags.Syms, Idents: packIdents(f.Tags.Idents), Parsed: f.Tags.Parsed})
	}
	dir := filepath.Dir(m.opts.CacheFile)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("repository map cache: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".repomap-*")
	if err != nil {
		return fmt.Errorf("repository map cache: %w", err)
	}
	w := bufio.NewWriterSize(tmp, 1<<20)
	err = gob.NewEncoder(w).Encode(&dc)
	if err == nil {
		err = w.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), m.opts.CacheFile)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("repository map cache %s: %w", m.opts.CacheFile, err)
	}
	m.dirty, m.unsaved, m.unsavedCost = false, nil, 0
	return nil
}
