package fileset

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// gitIndex is what the walk needs from the user's index: the sorted,
// de-duplicated paths of its entries (repository-relative).
type gitIndex struct {
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
// read through readShared. The checksum is not verified: git writes the
// index through a lock file and a rename, so a torn read is not possible.
func parseIndex(data []byte, hashSize int, readShared func(hexID string) ([]byte, error)) (*gitIndex, error) {
	var names []string
	modes := map[string]uint32{}
	if err := decodeIndex(data, hashSize, func(name string, mode uint32) {
		if _, ok := modes[name]; !ok {
			names = append(names, name)
		}
		modes[name] = mode
	}, readShared, 0); err != nil {
		return nil, err
	}
	if !sort.StringsAreSorted(names) {
		sort.Strings(names)
	}
	idx := &gitIndex{
		names:   names,
		gitlink: map[string]struct{}{},
		tracked: make(map[string]struct{}, len(names)),
	}
	for _, n := range names {
		switch modes[n] & 0o170000 {
		case modeGitlink:
			idx.gitlink[n] = struct{}{}
		case modeDirectory:
		default:
			idx.tracked[n] = struct{}{}
		}
	}
	return idx, nil
}

var errBadIndex = errors.New("malformed git index")

func decodeIndex(data []byte, hashSize int, add func(string, uint32), readShared func(string) ([]byte, error), depth int) error {
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return fmt.Errorf("%w: bad signature", errBadIndex)
	}
	version := binary.BigEndian.Uint32(data[4:])
	if version < 2 || version > 4 {
		return fmt.Errorf("%w: unsupported version %d", errBadIndex, version)
	}
	count := int(binary.BigEndian.Uint32(data[8:]))
	off := 12
	prev := ""
	// ctime, mtime (8+8), dev, ino, mode, uid, gid, size (6*4), hash, flags.
	fixed := 16 + 24 + hashSize + 2
	for i := 0; i < count; i++ {
		start := off
		if off+fixed > len(data) {
			return fmt.Errorf("%w: entry %d truncated", errBadIndex, i)
		}
		mode := binary.BigEndian.Uint32(data[off+24:])
		flags := binary.BigEndian.Uint16(data[off+fixed-2:])
		off += fixed
		if flags&0x4000 != 0 && version >= 3 {
			off += 2
		}
		var name string
		if version == 4 {
			strip, n := readOffsetVarint(data[off:])
			if n <= 0 || int(strip) > len(prev) {
				return fmt.Errorf("%w: entry %d: bad name prefix", errBadIndex, i)
			}
			off += n
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return fmt.Errorf("%w: entry %d: unterminated name", errBadIndex, i)
			}
			name = prev[:len(prev)-int(strip)] + string(data[off:off+end])
			off += end + 1
		} else {
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return fmt.Errorf("%w: entry %d: unterminated name", errBadIndex, i)
			}
			name = string(data[off : off+end])
			// Entries are padded with 1-8 NULs to a multiple of 8 bytes.
			off = start + ((off + end - start + 8) &^ 7)
		}
		prev = name
		add(name, mode)
	}
	// Extensions: signature (4), size (4), data; then the trailing hash.
	for off+8 <= len(data)-hashSize {
		sig := string(data[off : off+4])
		size := int(binary.BigEndian.Uint32(data[off+4:]))
		body := off + 8
		if body+size > len(data) || size < 0 {
			break
		}
		if sig == "link" && depth == 0 && size >= hashSize && readShared != nil {
			id := fmt.Sprintf("%x", data[body:body+hashSize])
			if strings.Trim(id, "0") != "" {
				shared, err := readShared(id)
				if err != nil {
					return fmt.Errorf("split index: %w", err)
				}
				// Entries deleted or replaced in the shared index are
				// approximated by the union of both lists.
				if err := decodeIndex(shared, hashSize, add, nil, depth+1); err != nil {
					return fmt.Errorf("split index: %w", err)
				}
			}
		}
		off = body + size
	}
	return nil
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

// readIndexFile reads gitDir/index; a missing index is an empty one.
func readIndexFile(gitDir string, hashSize int) (*gitIndex, error) {
	path := filepath.Join(gitDir, "index")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &gitIndex{gitlink: map[string]struct{}{}, tracked: map[string]struct{}{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read git index %s: %w", path, err)
	}
	idx, err := parseIndex(data, hashSize, func(id string) ([]byte, error) {
		return os.ReadFile(filepath.Join(gitDir, "sharedindex."+id))
	})
	if err != nil {
		return nil, fmt.Errorf("read git index %s: %w (run `git status` to rewrite it)", path, err)
	}
	return idx, nil
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
