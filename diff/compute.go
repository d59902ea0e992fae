package diff

import (
	"bytes"
	"strconv"
	"unsafe"
)

// contextLines is how many unchanged lines surround each change in a hunk.
const contextLines = 3

// Compute returns the line diff from oldText to newText with 3 lines of
// context, or a Binary FileDiff if either side looks binary (NUL byte in the
// first 8000 bytes, as git decides) or has too many distinct lines for
// go-diff. It always returns a minimal diff: the number of deleted plus
// inserted lines is the least possible.
func Compute(oldPath, newPath string, oldText, newText []byte) *FileDiff {
	fd := &FileDiff{OldPath: oldPath, NewPath: newPath}
	if IsBinary(oldText) || IsBinary(newText) {
		markBinary(fd, oldText, newText)
		return fd
	}
	a := splitLines(bytesString(oldText))
	b := splitLines(bytesString(newText))
	chs, err := diffStrings(a, b)
	if err != nil {
		markBinary(fd, oldText, newText)
		return fd
	}
	fd.Hunks = buildHunks(a, b, chs)
	return fd
}

func markBinary(fd *FileDiff, oldText, newText []byte) {
	fd.Binary = true
	if fd.OldPath != "" {
		fd.OldOID = BlobID(oldText)
	}
	if fd.NewPath != "" {
		fd.NewOID = BlobID(newText)
	}
	if len(oldText)+len(newText) <= maxLiteral {
		fd.bin = &binaryData{old: bytes.Clone(oldText), new: bytes.Clone(newText)}
	}
}

// bytesString views b as a string without copying, for use while Compute
// runs; what Compute returns holds copies.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// buildHunks groups changes whose context would touch or overlap into hunks
// with contextLines lines of context, in one pass and one allocation for all
// lines.
func buildHunks(a, b []string, chs []change) []Hunk {
	if len(chs) == 0 {
		return nil
	}
	// Count first so that all hunks share one backing array of lines, and
	// one string of bytes copied from the inputs, which the lines so far
	// only view.
	total, nh, sz := 0, 0, 0
	for i := 0; i < len(chs); {
		j := i
		for j+1 < len(chs) && chs[j+1].A0-chs[j].A1 <= 2*contextLines {
			j++
		}
		lo := max(chs[i].A0-contextLines, 0)
		hi := min(chs[j].A1+contextLines, len(a))
		total += hi - lo
		for _, r := range a[lo:hi] {
			sz += len(r)
		}
		for k := i; k <= j; k++ {
			total += chs[k].B1 - chs[k].B0
			for _, r := range b[chs[k].B0:chs[k].B1] {
				sz += len(r)
			}
		}
		nh++
		i = j + 1
	}
	all := make([]Line, 0, total)
	hunks := make([]Hunk, 0, nh)
	arena := make([]byte, 0, sz)
	for i := 0; i < len(chs); {
		j := i
		for j+1 < len(chs) && chs[j+1].A0-chs[j].A1 <= 2*contextLines {
			j++
		}
		lo := max(chs[i].A0-contextLines, 0)
		hi := min(chs[j].A1+contextLines, len(a))
		start := len(all)
		pos := lo
		for k := i; k <= j; k++ {
			c := chs[k]
			all, arena = appendLines(all, arena, Context, a[pos:c.A0])
			all, arena = appendLines(all, arena, Delete, a[c.A0:c.A1])
			all, arena = appendLines(all, arena, Insert, b[c.B0:c.B1])
			pos = c.A1
		}
		all, arena = appendLines(all, arena, Context, a[pos:hi])
		nlo := chs[i].B0 - (chs[i].A0 - lo)
		nhi := chs[j].B1 + (hi - chs[j].A1)
		h := Hunk{
			OldStart: startLine(lo, hi-lo),
			OldLines: hi - lo,
			NewStart: startLine(nlo, nhi-nlo),
			NewLines: nhi - nlo,
			Lines:    all[start:len(all):len(all)],
		}
		hunks = append(hunks, h)
		i = j + 1
	}
	assignIDs(hunks)
	return hunks
}

// startLine is the 1-based start of a hunk side in a unified diff header: the
// first line, or the line before an empty side.
func startLine(lo, n int) int {
	if n == 0 {
		return lo
	}
	return lo + 1
}

// appendLines appends raw lines of one kind to dst, copying their bytes into
// arena, which has room for them all and so never moves.
func appendLines(dst []Line, arena []byte, kind LineKind, raw []string) ([]Line, []byte) {
	for _, r := range raw {
		start := len(arena)
		arena = append(arena, r...)
		t, e := cutEOL(unsafe.String(&arena[start], len(r)))
		dst = append(dst, Line{Kind: kind, Text: t, EOL: eolConst(e)})
	}
	return dst, arena
}

// eolConst returns the terminator as a constant string, so that Lines do
// not keep a whole file's bytes alive through a one-byte EOL.
func eolConst(e string) string {
	switch e {
	case "\n":
		return "\n"
	case "\r\n":
		return "\r\n"
	}
	return ""
}

// hunkHash hashes a hunk's lines (kinds, texts and terminators) with 64-bit
// FNV-1a. Line numbers are left out so that the id survives a move.
func hunkHash(lines []Line) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for _, l := range lines {
		h = (h ^ uint64(l.Kind)) * prime
		for i := 0; i < len(l.Text); i++ {
			h = (h ^ uint64(l.Text[i])) * prime
		}
		// Terminators are distinguished by a marker byte that cannot be
		// confused with text: text never holds '\n'.
		switch l.EOL {
		case "\n":
			h = (h ^ '\n') * prime
		case "\r\n":
			h = (h ^ '\r') * prime
			h = (h ^ '\n') * prime
		default:
			h = (h ^ 0xff) * prime
			h = (h ^ '\n') * prime
		}
	}
	return h
}

// assignIDs gives every hunk an id derived from its content. Hunks with the
// same content in one file get a "-2", "-3", ... suffix in order.
func assignIDs(hunks []Hunk) {
	var seen map[string]int
	if len(hunks) > 1 {
		seen = make(map[string]int, len(hunks))
	}
	for i := range hunks {
		id := hunkID(hunks[i].Lines)
		if seen != nil {
			n := seen[id] + 1
			seen[id] = n
			if n > 1 {
				id += "-" + strconv.Itoa(n)
			}
		}
		hunks[i].ID = id
	}
}

// hunkID is the 16-hex-digit content hash of a hunk's lines.
func hunkID(lines []Line) string {
	const digits = "0123456789abcdef"
	var buf [16]byte
	h := hunkHash(lines)
	for i := 15; i >= 0; i-- {
		buf[i] = digits[h&0xf]
		h >>= 4
	}
	return string(buf[:])
}
