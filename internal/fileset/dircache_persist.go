package fileset

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"unsafe"
)

// The directory cache can outlive the process: a CLI command (or a daemon
// that starts) loads what the last one saved and lists again only the
// directories whose stat or ignore rules changed, as git's untracked cache
// does. Nothing in a saved cache is trusted blindly: every directory is
// still checked against its current stat, and the ignore files that
// applied to it are identified by their content (a fingerprint of their
// base and text), as are the index and the excludes outside the tree.

// fingerprint identifies content across processes.
type fingerprint [sha256.Size]byte

func fingerprintOf(base, src string) fingerprint {
	h := sha256.New()
	io.WriteString(h, base)
	h.Write([]byte{0})
	io.WriteString(h, src)
	var fp fingerprint
	copy(fp[:], h.Sum(nil))
	return fp
}

// rulesKey identifies the rule sources outside the tree: a saved cache
// applies only to a walk with the same ones.
func rulesKey(r *rules) fingerprint {
	h := sha256.New()
	io.WriteString(h, r.top)
	h.Write([]byte{0})
	h.Write(r.index.fp[:])
	for _, pl := range []*patternList{r.exclude, r.global} {
		if pl == nil {
			h.Write([]byte{0})
			continue
		}
		h.Write([]byte{1})
		h.Write(pl.fp[:])
	}
	var fp fingerprint
	copy(fp[:], h.Sum(nil))
	return fp
}

// sameChainFP is sameChain for a listing loaded from disk, which knows its
// ignore files by fingerprint.
func sameChainFP(n *dirNode, fps []fingerprint) bool {
	i := 0
	for ; n != nil; n = n.parent {
		if n.list == nil {
			continue
		}
		if i >= len(fps) || fps[i] != n.list.fp {
			return false
		}
		i++
	}
	return i == len(fps)
}

// matches reports whether cd was made under the ignore chain n.
func (cd *cachedDir) matches(n *dirNode) bool {
	if cd.fps != nil {
		return sameChainFP(n, cd.fps)
	}
	return sameChain(n, cd.lists)
}

const dirCacheMagic = "AGDC0003" // 0002: special files are listed (kind bit 4), to be reported; 0003: files by path

// DirCacheGen changes whenever the directory cache does (for callers that
// save it only when it changed).
func (s *Set) DirCacheGen() uint64 { return s.dirs.gen.Load() }

// DirCacheChanges says how much of the cache changed since it was
// loaded or saved: the directories whose listings were put or dropped
// (dirs), the entries those listings hold (entries, what a process
// that loads the saved cache lists again), and the directories it holds
// (total); all is true if it was cleared meanwhile (a rule source outside
// the tree changed).
func (s *Set) DirCacheChanges() (dirs, entries, total int, all bool) {
	c := &s.dirs
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.changed), c.entries, len(c.dirs), c.all
}

// DirCacheHits is the number of directory listings walks have reused.
func (s *Set) DirCacheHits() int64 { return s.dirs.hits.Load() }

// SaveDirCache writes the directory cache (see LoadDirCache).
func (s *Set) SaveDirCache(w io.Writer) error {
	c := &s.dirs
	c.mu.Lock()
	var key fingerprint
	switch {
	case c.index != nil:
		key = rulesKey(&rules{top: c.top, index: c.index, exclude: c.exclude, global: c.global})
	case c.loaded != nil:
		key = *c.loaded
	default:
		c.mu.Unlock()
		return errors.New("fileset: no directory cache to save")
	}
	names := make([]string, 0, len(c.dirs))
	dirs := make(map[string]*cachedDir, len(c.dirs))
	for name, cd := range c.dirs {
		if cd != nil {
			names = append(names, name)
			dirs[name] = cd
		}
	}
	c.changed, c.entries, c.all = nil, 0, false
	c.mu.Unlock()
	// Entries are never changed once put: they can be encoded unlocked.
	sort.Strings(names)
	var b bytes.Buffer
	b.WriteString(dirCacheMagic)
	b.Write(key[:])
	var tmp [binary.MaxVarintLen64]byte
	putU := func(v uint64) { b.Write(tmp[:binary.PutUvarint(tmp[:], v)]) }
	putI := func(v int64) { b.Write(tmp[:binary.PutVarint(tmp[:], v)]) }
	putS := func(s string) { putU(uint64(len(s))); b.WriteString(s) }
	putU(uint64(len(names)))
	for _, name := range names {
		cd := dirs[name]
		putS(name)
		putI(cd.st.ino)
		putI(cd.st.size)
		putI(cd.st.mtime)
		putI(cd.st.ctime)
		putU(uint64(cd.st.mode))
		flags := uint64(0)
		if cd.hasIgnore {
			flags = 1
		}
		putU(flags)
		fps := cd.fps
		if fps == nil {
			for _, l := range cd.lists {
				fps = append(fps, l.fp)
			}
		}
		putU(uint64(len(fps)))
		for _, fp := range fps {
			b.Write(fp[:])
		}
		putU(uint64(len(cd.files)))
		for _, f := range cd.files {
			putS(f.path) // the name is its end: both are used from the file as loaded
			kind := uint64(0)
			if f.typ&fs.ModeSymlink != 0 {
				kind |= 1
			}
			if f.tracked {
				kind |= 2
			}
			if f.typ == fs.ModeIrregular {
				kind |= 4 // a special file, listed to be reported
			}
			putU(kind)
		}
		putU(uint64(len(cd.subdirs)))
		for _, d := range cd.subdirs {
			putS(d)
		}
		putU(uint64(len(cd.excluded)))
		for _, d := range cd.excluded {
			putS(d)
		}
	}
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc32.ChecksumIEEE(b.Bytes()))
	b.Write(sum[:])
	_, err := w.Write(b.Bytes())
	return err
}

// LoadDirCache replaces the directory cache with one SaveDirCache wrote,
// here or in another process. It applies to the next walks only if the
// index, info/exclude and the global excludes are the same as when it was
// saved; each directory is used only while its stat and ignore files are.
// A damaged cache is refused and the cache left empty. The cache keeps
// using data: it must not be changed afterwards.
func (s *Set) LoadDirCache(data []byte) error {
	dirs, key, err := decodeDirCache(data)
	c := &s.dirs
	c.mu.Lock()
	defer c.mu.Unlock()
	c.index, c.exclude, c.global, c.top = nil, nil, nil, ""
	c.dirs, c.loaded = nil, nil
	c.changed, c.entries, c.all = nil, 0, false
	c.gen.Add(1)
	if err != nil {
		return err
	}
	c.dirs, c.loaded = dirs, &key
	return nil
}

func cmpFileEnt(a, b cachedFileEnt) int { return strings.Compare(a.name, b.name) }

func decodeDirCache(data []byte) (map[string]*cachedDir, fingerprint, error) {
	var key fingerprint
	bad := func(why string) (map[string]*cachedDir, fingerprint, error) {
		return nil, key, fmt.Errorf("fileset: the saved directory cache is damaged (%s)", why)
	}
	if len(data) < len(dirCacheMagic)+len(key)+4 || string(data[:len(dirCacheMagic)]) != dirCacheMagic {
		return bad("not a directory cache")
	}
	body := data[:len(data)-4]
	if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(data[len(data)-4:]) {
		return bad("checksum")
	}
	// The strings are substrings of the file as read (never written to
	// afterwards, so used without a copy): a file is saved by its path,
	// whose end is its name, so loading 80k files' listings copies none
	// (joining them into arenas was a third of loading the cache, and
	// most of its page faults).
	all := unsafe.String(&body[0], len(body))
	off := len(dirCacheMagic)
	copy(key[:], all[off:])
	off += len(key)
	var err error
	getU := func() uint64 {
		if err != nil {
			return 0
		}
		var v uint64
		for shift := uint(0); ; shift += 7 {
			if off >= len(all) || shift > 63 {
				err = io.ErrUnexpectedEOF
				return 0
			}
			b := all[off]
			off++
			v |= uint64(b&0x7f) << shift
			if b < 0x80 {
				return v
			}
		}
	}
	getI := func() int64 {
		u := getU()
		v := int64(u >> 1)
		if u&1 != 0 {
			v = ^v
		}
		return v
	}
	getS := func() string {
		n := getU()
		if err != nil {
			return ""
		}
		if n > 1<<16 || uint64(len(all)-off) < n {
			err = io.ErrUnexpectedEOF
			return ""
		}
		v := all[off : off+int(n)]
		off += int(n)
		return v
	}
	count := func() int {
		n := getU()
		if err == nil && n > uint64(len(all)) {
			err = errors.New("count out of range")
		}
		return int(n)
	}
	nd := count()
	dirs := make(map[string]*cachedDir, min(nd, len(all)))
	for range nd {
		if err != nil {
			break
		}
		name := getS()
		cd := &cachedDir{}
		cd.st.ino, cd.st.size, cd.st.mtime, cd.st.ctime = getI(), getI(), getI(), getI()
		cd.st.mode = fs.FileMode(getU())
		cd.hasIgnore = getU()&1 != 0
		nfp := count()
		if err == nil && nfp*len(key) > len(all)-off {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			break
		}
		cd.fps = make([]fingerprint, nfp)
		for i := range cd.fps {
			copy(cd.fps[i][:], all[off:])
			off += len(key)
		}
		nf := count()
		if err != nil {
			break
		}
		cd.files = make([]cachedFileEnt, 0, nf)
		for range nf {
			fpath := getS()
			kind := getU()
			if err != nil {
				break
			}
			f := cachedFileEnt{name: fpath, path: fpath, tracked: kind&2 != 0}
			if name != "" {
				if len(fpath) <= len(name)+1 || fpath[:len(name)] != name || fpath[len(name)] != '/' {
					err = fmt.Errorf("%q is not in directory %q", fpath, name)
					break
				}
				f.name = fpath[len(name)+1:]
			}
			if kind&1 != 0 {
				f.typ = fs.ModeSymlink
			}
			if kind&4 != 0 {
				f.typ = fs.ModeIrregular
			}
			cd.files = append(cd.files, f)
		}
		// Listings saved before they were sorted: in name order, as the
		// walk now keeps them.
		if !slices.IsSortedFunc(cd.files, cmpFileEnt) {
			slices.SortFunc(cd.files, cmpFileEnt)
		}
		for range count() {
			cd.subdirs = append(cd.subdirs, getS())
		}
		for range count() {
			cd.excluded = append(cd.excluded, getS())
		}
		dirs[name] = cd
	}
	if err == nil && off != len(all) {
		err = fmt.Errorf("%d bytes left over", len(all)-off)
	}
	if err != nil {
		return bad(err.Error())
	}
	return dirs, key, nil
}
