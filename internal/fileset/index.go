package fileset

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// gitIndex is what the walk needs from the user's index: the sorted,
// de-duplicated paths of its entries (repository-relative).
type gitIndex struct {
	fp      fingerprint         // of what the walk depends on: the names and their kinds
	names   []string            // sorted as git sorts them (bytewise)
	gitlink map[string]struct{} // entries that are submodules (mode 160000)
	tracked map[string]struct{} // every name that is not a gitlink
}

const (
	modeGitlink   = 0o160000
	modeDirectory = 0o040000 // sparse-index directory entries
)

// parseIndex decodes the entries of an index file (versions 2, 3 and 4).
// Extensions are skipped except "link" (split index), whose shared index is
// read through readShared and merged as git does. The checksum is not
// verified: git writes the index through a lock file and a rename.
func parseIndex(data []byte, hashSize int, readShared func(hexID string) ([]byte, error)) (*gitIndex, error) {
	entries, link, err := decodeIndex(data, hashSize)
	if err != nil {
		return nil, err
	}
	if link != nil && readShared != nil {
		shared, err := readShared(link.sharedID)
		if err != nil {
			return nil, fmt.Errorf("split index: %w", err)
		}
		base, _, err := decodeIndex(shared, hashSize)
		if err != nil {
			return nil, fmt.Errorf("split index sharedindex.%s: %w", link.sharedID, err)
		}
		if entries, err = mergeSplitIndex(base, entries, link); err != nil {
			return nil, err
		}
	}
	var names []string
	modes := make(map[string]uint32, len(entries))
	for _, e := range entries {
		if _, ok := modes[e.name]; !ok {
			names = append(names, e.name)
		}
		modes[e.name] = e.mode
	}
	if !sort.StringsAreSorted(names) {
		sort.Strings(names)
	}
	idx := &gitIndex{
		names:   names,
		gitlink: map[string]struct{}{},
		tracked: make(map[string]struct{}, len(names)),
	}
	h := sha256.New()
	for _, n := range names {
		kind := byte('t')
		switch modes[n] & 0o170000 {
		case modeGitlink:
			idx.gitlink[n] = struct{}{}
			kind = 'g'
		case modeDirectory:
			kind = 'd'
		default:
			idx.tracked[n] = struct{}{}
		}
		h.Write([]byte{kind})
		h.Write([]byte(n))
		h.Write([]byte{0})
	}
	copy(idx.fp[:], h.Sum(nil))
	return idx, nil
}

var errBadIndex = errors.New("malformed git index")

type indexEntry struct {
	name string
	mode uint32
}

// splitLink is the "link" extension of a split index.
type splitLink struct {
	sharedID      string
	deleted, repl []int // positions in the shared index
}

func decodeIndex(data []byte, hashSize int) ([]indexEntry, *splitLink, error) {
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, nil, fmt.Errorf("%w: bad signature", errBadIndex)
	}
	version := binary.BigEndian.Uint32(data[4:])
	if version < 2 || version > 4 {
		return nil, nil, fmt.Errorf("%w: unsupported version %d", errBadIndex, version)
	}
	count := int(binary.BigEndian.Uint32(data[8:]))
	if count > len(data)/8 {
		return nil, nil, fmt.Errorf("%w: %d entries cannot fit in %d bytes", errBadIndex, count, len(data))
	}
	entries := make([]indexEntry, 0, count)
	off := 12
	prev := ""
	// ctime, mtime (8+8), dev, ino, mode, uid, gid, size (6*4), hash, flags.
	fixed := 16 + 24 + hashSize + 2
	for i := 0; i < count; i++ {
		start := off
		if off+fixed > len(data) {
			return nil, nil, fmt.Errorf("%w: entry %d truncated", errBadIndex, i)
		}
		mode := binary.BigEndian.Uint32(data[off+24:])
		flags := binary.BigEndian.Uint16(data[off+fixed-2:])
		off += fixed
		if flags&0x4000 != 0 && version >= 3 {
			off += 2
		}
		if off > len(data) {
			return nil, nil, fmt.Errorf("%w: entry %d truncated", errBadIndex, i)
		}
		var name string
		if version == 4 {
			strip, n := readOffsetVarint(data[off:])
			if n <= 0 || strip > uint64(len(prev)) {
				return nil, nil, fmt.Errorf("%w: entry %d: bad name prefix", errBadIndex, i)
			}
			off += n
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return nil, nil, fmt.Errorf("%w: entry %d: unterminated name", errBadIndex, i)
			}
			name = prev[:len(prev)-int(strip)] + string(data[off:off+end])
			off += end + 1
		} else {
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return nil, nil, fmt.Errorf("%w: entry %d: unterminated name", errBadIndex, i)
			}
			name = string(data[off : off+end])
			// Entries are padded with 1-8 NULs to a multiple of 8 bytes.
			off = start + ((off + end - start + 8) &^ 7)
		}
		prev = name
		entries = append(entries, indexEntry{name, mode})
	}
	// Extensions: signature (4), size (4), data; then the trailing hash.
	var link *splitLink
	for off+8 <= len(data)-hashSize {
		sig := string(data[off : off+4])
		size := int(binary.BigEndian.Uint32(data[off+4:]))
		body := off + 8
		if size < 0 || body+size > len(data) {
			break
		}
		if sig == "link" && size >= hashSize {
			ext := data[body : body+size]
			id := fmt.Sprintf("%x", ext[:hashSize])
			if strings.Trim(id, "0") != "" {
				link = &splitLink{sharedID: id}
				rest := ext[hashSize:]
				var n int
				var err error
				if link.deleted, n, err = ewahBits(rest); err != nil {
					return nil, nil, fmt.Errorf("split index link: %w", err)
				}
				if link.repl, _, err = ewahBits(rest[n:]); err != nil {
					return nil, nil, fmt.Errorf("split index link: %w", err)
				}
			}
		}
		off = body + size
	}
	return entries, link, nil
}

// mergeSplitIndex applies a split index to its shared index as git's
// merge_base_index does.
func mergeSplitIndex(base, split []indexEntry, link *splitLink) ([]indexEntry, error) {
	if len(link.repl) > len(split) {
		return nil, fmt.Errorf("%w: split index replaces %d entries but holds %d", errBadIndex, len(link.repl), len(split))
	}
	base = append([]indexEntry(nil), base...)
	for k, pos := range link.repl {
		if pos >= len(base) {
			return nil, fmt.Errorf("%w: split index replaces entry %d of %d", errBadIndex, pos, len(base))
		}
		base[pos].mode = split[k].mode
	}
	deleted := map[int]bool{}
	for _, pos := range link.deleted {
		deleted[pos] = true
	}
	out := make([]indexEntry, 0, len(base)+len(split))
	for i, e := range base {
		if !deleted[i] {
			out = append(out, e)
		}
	}
	return append(out, split[len(link.repl):]...), nil
}

// ewahBits decodes a serialized EWAH bitmap (git's ewah_read_mmap and
// ewah_each_bit) into the positions of its set bits, and returns the
// number of bytes it used.
func ewahBits(b []byte) ([]int, int, error) {
	if len(b) < 8 {
		return nil, 0, errors.New("ewah bitmap truncated")
	}
	nwords := int(binary.BigEndian.Uint32(b[4:]))
	size := 8 + 8*nwords + 4
	if nwords < 0 || len(b) < size {
		return nil, 0, errors.New("ewah bitmap truncated")
	}
	word := func(i int) uint64 { return binary.BigEndian.Uint64(b[8+8*i:]) }
	var out []int
	pos := 0
	for p := 0; p < nwords; {
		rlw := word(p)
		run := int((rlw >> 1) & 0xffffffff)
		lits := int(rlw >> 33)
		if rlw&1 != 0 {
			for k := 0; k < run*64; k++ {
				out = append(out, pos)
				pos++
			}
		} else {
			pos += run * 64
		}
		p++
		for k := 0; k < lits && p < nwords; k++ {
			w := word(p)
			for c := 0; c < 64; c++ {
				if w>>c&1 != 0 {
					out = append(out, pos)
				}
				pos++
			}
			p++
		}
	}
	return out, size, nil
}

// readOffsetVarint decodes git's offset varint (varint.c decode_varint).
func readOffsetVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	i := 0
	c := b[i]
	i++
	val := uint64(c & 127)
	for c&128 != 0 {
		if i >= len(b) {
			return 0, 0
		}
		val++
		c = b[i]
		i++
		val = val<<7 + uint64(c&127)
	}
	return val, i
}

// under returns the sorted names below dir ("a/b", without trailing slash;
// "" for all).
func (idx *gitIndex) under(dir string) []string {
	if dir == "" {
		return idx.names
	}
	lo := sort.SearchStrings(idx.names, dir+"/")
	hi := sort.SearchStrings(idx.names, dir+"0") // '0' follows '/'
	return idx.names[lo:hi]
}

// hasUnder reports whether any entry lies below dir.
func (idx *gitIndex) hasUnder(dir string) bool { return len(idx.under(dir)) > 0 }
