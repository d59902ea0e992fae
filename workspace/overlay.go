package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// overlay is an editor buffer. Edits modify text in place (a didChange per
// keystroke must not copy a large file each time), so it is only read
// under the lock, by copying.
type overlay struct {
	text    []byte
	version int32
}

// ErrNotOpen is wrapped by EditOverlay's error for a buffer that was never
// opened (or was closed).
var ErrNotOpen = errors.New("document is not open")

// OpenOverlay records an editor buffer (didOpen). Version is the editor's.
// Reopening an open buffer replaces it.
func (w *Workspace) OpenOverlay(p string, content []byte, version int32) error {
	r, err := w.resolve(p)
	if err != nil {
		return err
	}
	text := append([]byte(nil), content...)
	w.mu.Lock()
	w.overlays[r.real] = &overlay{text: text, version: version}
	w.mu.Unlock()
	return nil
}

// EditOverlay applies incremental edits in order (didChange). Positions are
// LSP positions: 0-based lines (split at "\n", "\r\n" or "\r") and UTF-16
// code unit offsets; a character past the end of its line means the end of
// the line. A line past the end of the text, or a range whose end is before
// its start, fails the whole call and leaves the buffer unchanged.
func (w *Workspace) EditOverlay(p string, edits []TextEdit, version int32) error {
	r, err := w.resolve(p)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.overlays[r.real]
	if !ok {
		return &PathError{Path: p, Err: ErrNotOpen}
	}
	text := o.text
	if len(edits) > 1 {
		// All or nothing: a later edit may fail after earlier ones changed
		// the text, so work on a copy. A single edit fails before it
		// changes anything.
		text = bytes.Clone(text)
	}
	for i, e := range edits {
		text, err = applyEdit(text, e)
		if err != nil {
			return &PathError{Path: p, Err: fmt.Errorf("edit %d of version %d: %w", i, version, err)}
		}
	}
	o.text, o.version = text, version
	return nil
}

// CloseOverlay forgets a buffer (didClose); reads go to disk again.
func (w *Workspace) CloseOverlay(p string) {
	r, err := w.resolve(p)
	if err != nil {
		return
	}
	w.mu.Lock()
	delete(w.overlays, r.real)
	w.mu.Unlock()
}

// Overlay returns the buffer's content and version if the file is open.
// The content is the caller's to keep and modify.
func (w *Workspace) Overlay(p string) (content []byte, version int32, ok bool) {
	r, err := w.resolve(p)
	if err != nil {
		return nil, 0, false
	}
	return w.overlayOf(r.real)
}

// overlayOf returns a copy of the buffer of a real rel.
func (w *Workspace) overlayOf(real string) ([]byte, int32, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	o, ok := w.overlays[real]
	if !ok {
		return nil, 0, false
	}
	return bytes.Clone(o.text), o.version, true
}

// isOpen reports whether a real rel has a buffer.
func (w *Workspace) isOpen(real string) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	_, ok := w.overlays[real]
	return ok
}

// OpenOverlays lists the (symlink-resolved, slash-separated) paths of the
// open buffers.
func (w *Workspace) OpenOverlays() []string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	paths := make([]string, 0, len(w.overlays))
	for rel := range w.overlays {
		paths = append(paths, rel)
	}
	return paths
}

// applyEdit applies one edit to text, in place when its capacity allows,
// and returns the result. On error text is unchanged.
func applyEdit(text []byte, e TextEdit) ([]byte, error) {
	if e.Range == nil {
		return append(text[:0], e.Text...), nil
	}
	simple := lfOnly(text)
	start, err := offsetFrom(text, simple, 0, 0, e.Range.Start)
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	// The end is usually on the start's line or soon after: search from
	// the start's line.
	s := e.Range.Start
	end, err := offsetFrom(text, simple, start-startColumnBytes(text, start), s.Line, e.Range.End)
	if err != nil {
		return nil, fmt.Errorf("end: %w", err)
	}
	if end < start {
		return nil, fmt.Errorf("range end %d:%d is before its start %d:%d",
			e.Range.End.Line, e.Range.End.Character, e.Range.Start.Line, e.Range.Start.Character)
	}
	n := len(text) - (end - start) + len(e.Text)
	if n > cap(text) {
		out := make([]byte, n, n+n/4+64)
		copy(out, text[:start])
		copy(out[start:], e.Text)
		copy(out[start+len(e.Text):], text[end:])
		return out, nil
	}
	out := text[:n]
	copy(out[start+len(e.Text):], text[end:]) // copy handles the overlap
	copy(out[start:], e.Text)
	return out, nil
}

// Offset converts an LSP position in text to a byte offset. Lines end at
// "\n", "\r\n" or "\r"; the character is counted in UTF-16 code units and
// clamped to the end of its line (as the LSP specification asks). An offset
// inside a character (between the two units of a surrogate pair) rounds
// down to the start of that character. A negative position or a line past
// the last one is an error; the line just after a final newline exists.
func Offset(text []byte, pos Position) (int, error) {
	return offsetFrom(text, lfOnly(text), 0, 0, pos)
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

// offsetFrom is Offset starting the line search at fromOff, the start of
// line fromLine <= pos.Line.
func offsetFrom(text []byte, lfOnly bool, fromOff, fromLine int, pos Position) (int, error) {
	if pos.Line < 0 || pos.Character < 0 {
		return 0, fmt.Errorf("negative position %d:%d", pos.Line, pos.Character)
	}
	if fromLine > pos.Line {
		fromOff, fromLine = 0, 0
	}
	off, ok := lineStart(text, lfOnly, fromOff, pos.Line-fromLine)
	if !ok {
		return 0, fmt.Errorf("line %d is past the end of the text (%d lines)", pos.Line, lineCount(text))
	}
	// Walk the line in UTF-16 units.
	units := 0
	for off < len(text) && units < pos.Character {
		c := text[off]
		if c == '\n' || c == '\r' {
			break
		}
		if c < utf8.RuneSelf {
			units++
			off++
			continue
		}
		r, size := utf8.DecodeRune(text[off:])
		n := 1
		if r != utf8.RuneError || size > 1 {
			n = utf16.RuneLen(r)
		}
		if units+n > pos.Character {
			break // inside a surrogate pair: stay at the character's start
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

// lineCount is the number of lines of text, for messages.
func lineCount(text []byte) int {
	n := 1
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\n':
			n++
		case '\r':
			if i+1 < len(text) && text[i+1] == '\n' {
				i++
			}
			n++
		}
	}
	return n
}

// PositionOf converts a byte offset in text to an LSP position (the inverse
// of Offset for offsets on character boundaries). Offsets past the end are
// clamped to the end.
func PositionOf(text []byte, offset int) Position {
	if offset > len(text) {
		offset = len(text)
	}
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
		if c < utf8.RuneSelf {
			pos.Character++
			i++
			continue
		}
		r, size := utf8.DecodeRune(text[i:])
		if i+size > offset {
			break // offset inside a character: its start
		}
		if r == utf8.RuneError && size <= 1 {
			pos.Character++
		} else {
			pos.Character += utf16.RuneLen(r)
		}
		i += size
	}
	return pos
}
