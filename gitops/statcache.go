package gitops

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// fileRec is one file of the workspace as last seen: its lstat data and the
// blob id of its content (or link target).
type fileRec struct {
	path  string
	mode  filemode.FileMode // git mode: 0100644, 0100755 or 0120000
	perm  uint32            // permission bits (0o777; 0 for symlinks)
	size  int64
	mtime int64 // ns
	ino   uint64
	hash  plumbing.Hash
	// seen is the number of the last walk that found this record's path
	// (Store.collect), so the paths that are gone are found without a map.
	seen uint32
}

// statCache is the workspace's state at the last snapshot: every file with
// its stat data and blob id, and the tree id of every directory. It lets an
// incremental snapshot hash only files whose stat changed and rebuild only
// the trees above them. It is only a speed aid: the objects it names were
// fsync'd before it was written, and a damaged cache is simply dropped.
type statCache struct {
	// scanStart is when the walk that produced it began (ns): a file whose
	// mtime is not older than that (minus racySlack) may have changed again
	// within the filesystem's timestamp granularity after it was hashed, so
	// it is re-hashed next time (git's "racy git" rule).
	scanStart int64
	// files maps paths to records: nil until fileMap builds it from recs
	// (a cold no-change snapshot needs no map of 80k paths; building it
	// was a tenth of such a command's user time). When set, it is the
	// truth and recs may be stale (nil).
	files  map[string]*fileRec
	trees  map[string]plumbing.Hash // dir ("" = root) -> tree id
	sorted []string                 // paths of files, sorted; nil when unknown
	// skipped are the files left out (too large), as of the last full walk
	// in this process (not persisted).
	skipped map[string]SkippedFile
	// emptyDirs are the directories with nothing to list, as of the last
	// walk in this process (not persisted: a process without a watcher
	// walks every time).
	emptyDirs map[string]bool
	// byDir groups files' records by directory for the walk's lookups
	// (built on demand; nil whenever files changes).
	byDir map[string]*dirRecs
	recs  []*fileRec // files' records in path order; nil when unknown
}

// fileMap returns the records by path, building the map from recs on
// first use. The caller holds the store's lock (a cache is used by one
// operation at a time).
func (c *statCache) fileMap() map[string]*fileRec {
	if c.files == nil {
		c.files = make(map[string]*fileRec, len(c.recs))
		for _, r := range c.recs {
			c.files[r.path] = r
		}
	}
	return c.files
}

// count is the number of files.
func (c *statCache) count() int {
	if c.files != nil {
		return len(c.files)
	}
	return len(c.recs)
}

// file returns p's record, or nil: from the map if it was built, else by
// a binary search of the records in path order.
func (c *statCache) file(p string) *fileRec {
	if c.files != nil {
		return c.files[p]
	}
	return findRec(c.recs, p)
}

// findRec returns the record of path p in recs (sorted by path), or nil.
func findRec(recs []*fileRec, p string) *fileRec {
	i, ok := slices.BinarySearchFunc(recs, p, func(r *fileRec, p string) int { return strings.Compare(r.path, p) })
	if !ok {
		return nil
	}
	return recs[i]
}

// sortedRecords returns the records in path order.
func (c *statCache) sortedRecords() []*fileRec {
	if c.recs != nil && (c.files == nil || len(c.recs) == len(c.files)) {
		return c.recs
	}
	ps := c.sortedPaths()
	c.recs = make([]*fileRec, len(ps))
	for i, p := range ps {
		c.recs[i] = c.files[p]
	}
	return c.recs
}

// dirRecs are the records of one directory's files, sorted by name.
type dirRecs struct {
	off  int // where names start in paths: len(dir)+1, or 0 for the root
	recs []*fileRec
	// next is where the current walk's look-ups go on from: the walk hands
	// a directory's files over in name order (fileset sorts listings), so
	// matching them with recs is a merge, one comparison per file. A
	// directory is handed over by one goroutine at a time (the walk's), so
	// each dirRecs has one writer.
	next int
}

// lookup returns the record of the i-th file, called name, of a directory
// handed over whole by the walk.
func (d *dirRecs) lookup(i int, name string) *fileRec {
	if i == 0 {
		d.next = 0
	}
	for ; d.next < len(d.recs); d.next++ {
		have := d.recs[d.next].path[d.off:]
		if have == name {
			d.next++
			return d.recs[d.next-1]
		}
		if have > name {
			break
		}
	}
	return d.find(name) // not in order (or not there)
}

// dirIndex returns the records grouped by directory. A walk hands over a
// directory's files together, so each is found by a binary search among
// its directory's few names instead of a lookup in a map of every path:
// that lookup, a cache miss or three per file, was an eighth of a no-change
// snapshot's CPU time on a large tree.
func (c *statCache) dirIndex() map[string]*dirRecs {
	if c.byDir != nil {
		return c.byDir
	}
	idx := make(map[string]*dirRecs)
	var cur *dirRecs
	curDir := "\x00"
	// In path order a directory's files are sorted by name, but files of
	// its sub-directories may come between them.
	for _, r := range c.sortedRecords() {
		p := r.path
		d := ""
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			d = p[:i]
		}
		if d != curDir {
			curDir = d
			if cur = idx[d]; cur == nil {
				cur = &dirRecs{}
				if d != "" {
					cur.off = len(d) + 1
				}
				idx[d] = cur
			}
		}
		cur.recs = append(cur.recs, r)
	}
	c.byDir = idx
	return idx
}

// deriveDirIndex gives c the directory index of prev (the index of the
// cache c was made from) with only the directories of the touched paths
// (changed, new or gone) rebuilt: the other directories' records are the
// same.
func (c *statCache) deriveDirIndex(prev map[string]*dirRecs, touched []string) {
	idx := maps.Clone(prev)
	redo := make(map[string][]string)
	for _, p := range touched {
		d := ""
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			d = p[:i]
		}
		redo[d] = append(redo[d], p)
	}
	for d, cand := range redo {
		if old := prev[d]; old != nil {
			for _, r := range old.recs {
				cand = append(cand, r.path)
			}
		}
		slices.Sort(cand)
		cand = slices.Compact(cand)
		nd := &dirRecs{}
		if d != "" {
			nd.off = len(d) + 1
		}
		for _, p := range cand {
			if r := c.file(p); r != nil {
				nd.recs = append(nd.recs, r)
			}
		}
		if len(nd.recs) == 0 {
			delete(idx, d)
		} else {
			idx[d] = nd
		}
	}
	c.byDir = idx
}

// find returns the record of the file called name, or nil.
func (d *dirRecs) find(name string) *fileRec {
	lo, hi := 0, len(d.recs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if d.recs[m].path[d.off:] < name {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(d.recs) && d.recs[lo].path[d.off:] == name {
		return d.recs[lo]
	}
	return nil
}

// racySlack covers filesystems whose timestamps are coarser than a second.
var racySlack int64 = 2e9

func newStatCache() *statCache {
	return &statCache{files: make(map[string]*fileRec), trees: make(map[string]plumbing.Hash)}
}

// trusted reports whether r's blob id may be used for a file with the given
// stat data.
func (c *statCache) trusted(r *fileRec, mode filemode.FileMode, perm uint32, size, mtime int64, ino uint64) bool {
	return r != nil && r.mode == mode && r.perm == perm && r.size == size && r.mtime == mtime && r.ino == ino &&
		r.mtime < c.scanStart-racySlack
}

const statCacheMagic = "AGSC0002" // 0002: permission bits beside the mode

func (c *statCache) encode() []byte {
	// Appended to one buffer sized up front, from the records in path
	// order (no map lookups): a cold command that changed a file saves the
	// whole cache, 6 MB for 80k files, before it exits.
	recs := c.sortedRecords()
	size := len(statCacheMagic) + 32
	for _, r := range recs {
		size += len(r.path) + 48
	}
	size += len(c.trees) * 48
	for d := range c.trees {
		size += len(d)
	}
	b := make([]byte, 0, size)
	b = append(b, statCacheMagic...)
	b = binary.AppendVarint(b, c.scanStart)
	b = binary.AppendUvarint(b, uint64(len(recs)))
	for _, r := range recs {
		b = binary.AppendUvarint(b, uint64(len(r.path)))
		b = append(b, r.path...)
		b = binary.AppendUvarint(b, uint64(r.mode)|uint64(r.perm)<<32)
		b = binary.AppendVarint(b, r.size)
		b = binary.AppendVarint(b, r.mtime)
		b = binary.AppendUvarint(b, r.ino)
		b = append(b, r.hash[:]...)
	}
	dirs := make([]string, 0, len(c.trees))
	for d := range c.trees {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	b = binary.AppendUvarint(b, uint64(len(dirs)))
	for _, d := range dirs {
		h := c.trees[d]
		b = binary.AppendUvarint(b, uint64(len(d)))
		b = append(b, d...)
		b = append(b, h[:]...)
	}
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

var errBadCache = errors.New("stat cache is damaged")

func decodeStatCache(data []byte) (*statCache, error) {
	if len(data) < len(statCacheMagic)+4 || string(data[:len(statCacheMagic)]) != statCacheMagic {
		return nil, errBadCache
	}
	body := data[:len(data)-4]
	if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(data[len(data)-4:]) {
		return nil, errBadCache
	}
	// Decoded straight from memory: paths are substrings of the file as
	// read (never written to afterwards, so it is used as a string
	// without a copy) and records come from one slab, so loading an
	// 80k-file cache (a CLI command's first step) makes a handful of
	// allocations.
	all := unsafe.String(&body[0], len(body))
	d := cacheDecoder{s: all, off: len(statCacheMagic)}
	c := &statCache{scanStart: d.varint()}
	n := d.uvarint()
	if n > uint64(len(body)) {
		return nil, errBadCache
	}
	slab := make([]fileRec, n)
	c.recs = make([]*fileRec, n)
	ordered := true // strictly increasing paths: sorted, none twice
	for i := range slab {
		rec := &slab[i]
		rec.path = d.str()
		mp := d.uvarint()
		rec.mode, rec.perm = filemode.FileMode(mp&0xffffffff), uint32(mp>>32)
		rec.size = d.varint()
		rec.mtime = d.varint()
		rec.ino = d.uvarint()
		d.hash(&rec.hash)
		if d.err != nil {
			break
		}
		if i > 0 && slab[i-1].path >= rec.path {
			ordered = false
		}
		c.recs[i] = rec
	}
	nt := d.uvarint()
	if nt > uint64(len(body)) {
		return nil, errBadCache
	}
	c.trees = make(map[string]plumbing.Hash, nt)
	for i := uint64(0); i < nt && d.err == nil; i++ {
		dir := d.str()
		var h plumbing.Hash
		d.hash(&h)
		c.trees[dir] = h
	}
	if d.err == nil && d.off != len(all) {
		d.err = fmt.Errorf("%d bytes left over", len(all)-d.off)
	}
	if d.err == nil && !ordered {
		d.err = errors.New("paths out of order, or a path listed twice")
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: %v", errBadCache, d.err)
	}
	return c, nil
}

// cacheDecoder reads the stat cache's fields; the first error sticks.
type cacheDecoder struct {
	s   string
	off int
	err error
}

func (d *cacheDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if d.off >= len(d.s) || shift > 63 {
			d.err = io.ErrUnexpectedEOF
			return 0
		}
		b := d.s[d.off]
		d.off++
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v
		}
	}
}

func (d *cacheDecoder) varint() int64 {
	u := d.uvarint()
	v := int64(u >> 1)
	if u&1 != 0 {
		v = ^v
	}
	return v
}

func (d *cacheDecoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > 1<<16 || uint64(len(d.s)-d.off) < n {
		d.err = io.ErrUnexpectedEOF
		return ""
	}
	v := d.s[d.off : d.off+int(n)]
	d.off += int(n)
	return v
}

func (d *cacheDecoder) hash(h *plumbing.Hash) {
	if d.err != nil {
		return
	}
	if len(d.s)-d.off < len(h) {
		d.err = io.ErrUnexpectedEOF
		return
	}
	copy(h[:], d.s[d.off:])
	d.off += len(h)
}

func (c *statCache) sortedPaths() []string {
	if c.sorted != nil && len(c.sorted) == c.count() {
		return c.sorted
	}
	if c.files == nil || len(c.recs) == len(c.files) {
		// The records are in path order already.
		ps := make([]string, len(c.recs))
		for i, r := range c.recs {
			ps[i] = r.path
		}
		c.sorted = ps
		return ps
	}
	ps := make([]string, 0, len(c.files))
	for p := range c.files {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	c.sorted = ps
	return ps
}

func loadStatCache(name string) *statCache {
	data, err := os.ReadFile(name)
	if err != nil {
		return newStatCache()
	}
	c, err := decodeStatCache(data)
	if err != nil {
		return newStatCache()
	}
	return c
}
