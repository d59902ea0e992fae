package workspace

import (
	"bytes"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// PositionEncoding is how the character of an LSP position counts: in
// UTF-16 code units (LSP's default) or in UTF-8 bytes (when the client
// negotiates "utf-8" through general.positionEncodings).
type PositionEncoding string

const (
	UTF16 PositionEncoding = "utf-16"
	UTF8  PositionEncoding = "utf-8"
)

// Positions are converted the way LSP defines them, and the same way for
// every front end (this is the one copy):
//
//   - Lines are 0-based and end at "\n", "\r\n" or "\r".
//   - The character counts UTF-16 code units (UTF16) or bytes (UTF8) from
//     the start of the line. A byte that is not valid UTF-8 counts as one
//     unit in both.
//   - A character past the end of its line means the end of the line
//     (before its terminator), as the LSP specification asks.
//   - A line past the last line means the end of the text (as the
//     reference implementation, vscode-languageserver-textdocument, does).
//     The line just after a final line terminator exists and is empty.
//   - A character that falls inside a character of the text (between the
//     two units of a surrogate pair, or inside a UTF-8 sequence) means the
//     start of that character.
//   - A negative line or character is an error.

// Offset converts a UTF-16 LSP position in text to a byte offset.
func Offset(text []byte, pos Position) (int, error) {
	return OffsetIn(text, pos, UTF16)
}

// OffsetIn converts an LSP position in text to a byte offset, with the
// character counted in enc ("" means UTF16).
func OffsetIn(text []byte, pos Position, enc PositionEncoding) (int, error) {
	return offsetFrom(text, lfOnly(text), 0, 0, pos, enc)
}

// PositionOf converts a byte offset in text to a UTF-16 LSP position.
func PositionOf(text []byte, offset int) Position {
	return PositionIn(text, offset, UTF16)
}

// startColumnBytes returns how many bytes of its line precede offset.
func startColumnBytes(text []byte, offset int) int {
	i := offset
	for i > 0 && text[i-1] != '\n' && text[i-1] != '\r' {
		i--
	}
	return offset - i
}

// lfOnly reports whether every line of text ends at "\n" (a "\r" only
// ever appears as part of "\r\n").
func lfOnly(text []byte) bool {
	if bytes.IndexByte(text, '\r') < 0 {
		return true
	}
	return bytes.Count(text, cr) == bytes.Count(text, crlf)
}

// runeUnits returns the size in bytes of the character at text[0] and how
// many units of enc it counts.
func runeUnits(text []byte, enc PositionEncoding) (size, units int) {
	if text[0] < utf8.RuneSelf {
		return 1, 1
	}
	r, size := utf8.DecodeRune(text)
	if enc == UTF8 {
		return size, size
	}
	if r == utf8.RuneError && size <= 1 {
		return size, 1
	}
	return size, utf16.RuneLen(r)
}

// offsetFrom is OffsetIn starting the line search at fromOff, the start of
// line fromLine <= pos.Line.
func offsetFrom(text []byte, lfOnly bool, fromOff, fromLine int, pos Position, enc PositionEncoding) (int, error) {
	if pos.Line < 0 || pos.Character < 0 {
		return 0, fmt.Errorf("negative position %d:%d", pos.Line, pos.Character)
	}
	if fromLine > pos.Line {
		fromOff, fromLine = 0, 0
	}
	off, ok := lineStart(text, lfOnly, fromOff, pos.Line-fromLine)
	if !ok {
		return len(text), nil // past the last line: the end of the text
	}
	units := 0
	for off < len(text) && units < pos.Character {
		c := text[off]
		if c == '\n' || c == '\r' {
			break
		}
		size, n := runeUnits(text[off:], enc)
		if units+n > pos.Character {
			break // inside a character: stay at its start
		}
		units += n
		off += size
	}
	return off, nil
}

// lineStart returns the byte offset where the line that is n lines after
// the one starting at off starts, and false if the text has fewer lines.
func lineStart(text []byte, lfOnly bool, off, n int) (int, bool) {
	if n == 0 {
		return off, true
	}
	if lfOnly {
		// Count a chunk at a time, then find the line in its chunk.
		const chunk = 16 << 10
		for {
			end := min(off+chunk, len(text))
			if c := bytes.Count(text[off:end], lf); c < n && end < len(text) {
				n -= c
				off = end
				continue
			}
			for ; n > 0; n-- {
				i := bytes.IndexByte(text[off:], '\n')
				if i < 0 {
					return 0, false
				}
				off += i + 1
			}
			return off, true
		}
	}
	for ; n > 0; n-- {
		i := bytes.IndexAny(text[off:], "\r\n")
		if i < 0 {
			return 0, false
		}
		i += off
		if text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n' {
			i++
		}
		off = i + 1
	}
	return off, true
}

var (
	cr   = []byte{'\r'}
	lf   = []byte{'\n'}
	crlf = []byte("\r\n")
)

// PositionIn converts a byte offset in text to an LSP position with the
// character counted in enc (the inverse of OffsetIn for offsets on
// character boundaries). An offset past the end means the end; an offset
// inside a character means its start; an offset between "\r" and "\n"
// means the end of that line.
func PositionIn(text []byte, offset int, enc PositionEncoding) Position {
	offset = max(0, min(offset, len(text)))
	var pos Position
	lineStart := 0
scan:
	for i := 0; i < offset; i++ {
		switch text[i] {
		case '\n':
		case '\r':
			if i+1 < len(text) && text[i+1] == '\n' {
				if i+1 == offset {
					break scan // between "\r" and "\n": the end of this line
				}
				i++
			}
		default:
			continue
		}
		pos.Line++
		lineStart = i + 1
	}
	for i := lineStart; i < offset; {
		c := text[i]
		if c == '\r' || c == '\n' {
			break
		}
		size, n := runeUnits(text[i:], enc)
		if i+size > offset {
			break // offset inside a character: its start
		}
		pos.Character += n
		i += size
	}
	return pos
}

// MinimalEdit returns one edit turning old into new: the range of old that
// differs (in enc) and its replacement. The range never splits a UTF-8
// sequence.
func MinimalEdit(old, new []byte, enc PositionEncoding) (Range, string) {
	p := 0
	for p < len(old) && p < len(new) && old[p] == new[p] {
		p++
	}
	for p > 0 && (p < len(old) && !utf8.RuneStart(old[p]) || p < len(new) && !utf8.RuneStart(new[p])) {
		p--
	}
	// A "\r\n" must not be split either: a position cannot name the
	// offset between them.
	if p > 0 && p < len(old) && old[p-1] == '\r' && old[p] == '\n' {
		p--
	}
	so, sn := len(old), len(new)
	for so > p && sn > p && old[so-1] == new[sn-1] {
		so--
		sn--
	}
	for so < len(old) && (!utf8.RuneStart(old[so]) || so > 0 && old[so-1] == '\r' && old[so] == '\n') {
		so++
		sn++
	}
	return Range{Start: PositionIn(old, p, enc), End: PositionIn(old, so, enc)}, string(new[p:sn])
}
