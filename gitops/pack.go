package gitops

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/klauspost/compress/zlib"
)

// packWriter streams objects into a new packfile (version 2, no deltas) and
// writes its .idx with go-git's idxfile encoder. Objects are compressed by
// the callers (in parallel) and appended under a lock, so memory stays
// bounded by the objects in flight, never the whole snapshot. Nothing is
// visible to readers until finish renames the pack and then its index into
// objects/pack, both fsync'd.
type packWriter struct {
	dir string // objects/pack

	mu      sync.Mutex
	f       *os.File
	bw      *bufio.Writer
	off     int64
	entries []idxfile.Entry
	seen    map[plumbing.Hash]struct{}
	err     error
}

func newPackWriter(dir string) (*packWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, "tmp_pack_")
	if err != nil {
		return nil, err
	}
	p := &packWriter{dir: dir, f: f, bw: bufio.NewWriterSize(f, 1<<20), seen: make(map[plumbing.Hash]struct{})}
	var hdr [12]byte
	copy(hdr[:4], "PACK")
	binary.BigEndian.PutUint32(hdr[4:8], 2)
	// The object count (hdr[8:12]) is patched in by finish.
	if _, err := p.bw.Write(hdr[:]); err != nil {
		p.abort()
		return nil, err
	}
	p.off = 12
	return p, nil
}

// has reports whether the pack already holds (or is being given) h.
func (p *packWriter) has(h plumbing.Hash) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.seen[h]
	return ok
}

// reserve marks h as going into this pack; false if it already is.
func (p *packWriter) reserve(h plumbing.Hash) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.seen[h]; ok {
		return false
	}
	p.seen[h] = struct{}{}
	return true
}

// add appends an object whose zlib-compressed content is z.
func (p *packWriter) add(t plumbing.ObjectType, h plumbing.Hash, size int64, z []byte) error {
	var hdr [16]byte
	n := encodeObjHeader(hdr[:], t, size)
	crc := crc32.NewIEEE()
	crc.Write(hdr[:n])
	crc.Write(z)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	if _, err := p.bw.Write(hdr[:n]); err != nil {
		p.err = err
		return err
	}
	if _, err := p.bw.Write(z); err != nil {
		p.err = err
		return err
	}
	p.entries = append(p.entries, idxfile.Entry{Hash: h, CRC32: crc.Sum32(), Offset: uint64(p.off)})
	p.seen[h] = struct{}{}
	p.off += int64(n) + int64(len(z))
	return nil
}

// addRaw appends an object copied as another pack stores it (header and
// compressed content), whose CRC32 is crc. h must have been reserved.
func (p *packWriter) addRaw(h plumbing.Hash, crc uint32, raw []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	if _, err := p.bw.Write(raw); err != nil {
		p.err = err
		return err
	}
	p.entries = append(p.entries, idxfile.Entry{Hash: h, CRC32: crc, Offset: uint64(p.off)})
	p.off += int64(len(raw))
	return nil
}

func encodeObjHeader(b []byte, t plumbing.ObjectType, size int64) int {
	c := byte(t)<<4 | byte(size&0x0f)
	size >>= 4
	n := 0
	for size != 0 {
		b[n] = c | 0x80
		n++
		c = byte(size & 0x7f)
		size >>= 7
	}
	b[n] = c
	return n + 1
}

// abort removes the temporary pack.
func (p *packWriter) abort() {
	if p.f != nil {
		name := p.f.Name()
		p.f.Close()
		os.Remove(name)
		p.f = nil
	}
}

// finish completes the pack and its index, fsyncs them and moves them into
// place. It returns the pack's index (nil: nothing was written).
func (p *packWriter) finish() (*idxfile.MemoryIndex, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		p.abort()
		return nil, p.err
	}
	if len(p.entries) == 0 {
		p.abort()
		return nil, nil
	}
	fail := func(err error) (*idxfile.MemoryIndex, error) {
		p.abort()
		return nil, fmt.Errorf("write pack: %w", err)
	}
	if err := p.bw.Flush(); err != nil {
		return fail(err)
	}
	var cnt [4]byte
	binary.BigEndian.PutUint32(cnt[:], uint32(len(p.entries)))
	if _, err := p.f.WriteAt(cnt[:], 8); err != nil {
		return fail(err)
	}
	if _, err := p.f.Seek(0, io.SeekStart); err != nil {
		return fail(err)
	}
	sum := sha1.New()
	if _, err := io.Copy(sum, bufio.NewReaderSize(p.f, 1<<20)); err != nil {
		return fail(err)
	}
	var packHash plumbing.Hash
	copy(packHash[:], sum.Sum(nil))
	if _, err := p.f.Write(packHash[:]); err != nil {
		return fail(err)
	}
	if syncWrites {
		if err := p.f.Sync(); err != nil {
			return fail(err)
		}
	}
	tmpPack := p.f.Name()
	if err := p.f.Close(); err != nil {
		return fail(err)
	}
	p.f = nil
	removeTmp := func() { os.Remove(tmpPack) }

	w := new(idxfile.Writer)
	if err := w.OnHeader(uint32(len(p.entries))); err != nil {
		removeTmp()
		return nil, err
	}
	for _, e := range p.entries {
		w.Add(e.Hash, e.Offset, e.CRC32)
	}
	if err := w.OnFooter(packHash); err != nil {
		removeTmp()
		return nil, err
	}
	idx, err := w.Index()
	if err != nil {
		removeTmp()
		return nil, err
	}
	var ib bytes.Buffer
	if _, err := idxfile.NewEncoder(&ib).Encode(idx); err != nil {
		removeTmp()
		return nil, err
	}
	base := filepath.Join(p.dir, "pack-"+packHash.String())
	// The pack goes first: git and go-git find packs through their .idx.
	if err := os.Rename(tmpPack, base+".pack"); err != nil {
		removeTmp()
		return nil, err
	}
	// Its directory is fsync'd after the index's rename, which makes the
	// pack's rename durable too: one directory fsync, not two.
	if err := writeFileAtomic(base+".idx", ib.Bytes(), 0o444, true); err != nil {
		return nil, err
	}
	return idx, nil
}

var zlibPool = sync.Pool{New: func() any {
	w, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	return w
}}

// deflate returns data zlib-compressed (as git stores objects).
func deflate(dst *bytes.Buffer, data []byte) []byte {
	dst.Reset()
	w := zlibPool.Get().(*zlib.Writer)
	w.Reset(dst)
	w.Write(data)
	w.Close()
	zlibPool.Put(w)
	return dst.Bytes()
}

// hashObject is git's object id of content of type t.
func hashObject(t plumbing.ObjectType, content []byte) plumbing.Hash {
	h := sha1.New()
	h.Write([]byte(t.String()))
	h.Write([]byte{' '})
	h.Write([]byte(strconv.Itoa(len(content))))
	h.Write([]byte{0})
	h.Write(content)
	var out plumbing.Hash
	copy(out[:], h.Sum(nil))
	return out
}
