package workspace

import (
	"bytes"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// refChar is one character of a line in the reference implementation.
type refChar struct{ off, size, units int }

// refLines splits text into lines the way LSP defines them ("\n", "\r\n"
// and "\r" end a line) and returns each line's start offset and its
// characters (without the terminator), each with the units it counts in
// enc. Invalid UTF-8 bytes are characters of one byte and one unit.
// Written for clarity, not speed: it is the oracle.
func refLines(text string, enc PositionEncoding) (starts []int, chars [][]refChar) {
	start := 0
	var cur []refChar
	for i := 0; i < len(text); {
		switch text[i] {
		case '\n', '\r':
			end := i + 1
			if text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n' {
				end++
			}
			starts, chars = append(starts, start), append(chars, cur)
			start, cur = end, nil
			i = end
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		units := size // UTF-8: bytes
		if enc == UTF16 {
			units = 1
			if r != utf8.RuneError || size > 1 {
				units = len(utf16.Encode([]rune{r}))
			}
		}
		cur = append(cur, refChar{i, size, units})
		i += size
	}
	return append(starts, start), append(chars, cur)
}

// refOffset is the reference OffsetIn.
func refOffset(text string, pos Position, enc PositionEncoding) int {
	starts, chars := refLines(text, enc)
	if pos.Line >= len(starts) {
		return len(text)
	}
	off, units := starts[pos.Line], 0
	for _, c := range chars[pos.Line] {
		if units+c.units > pos.Character {
			break
		}
		units += c.units
		off = c.off + c.size
	}
	return off
}

// refPosition is the reference PositionIn.
func refPosition(text string, off int, enc PositionEncoding) Position {
	off = max(0, min(off, len(text)))
	starts, chars := refLines(text, enc)
	line := 0
	for l, s := range starts {
		if s <= off {
			line = l
		}
	}
	pos := Position{Line: line}
	for _, c := range chars[line] {
		if c.off+c.size > off {
			break
		}
		pos.Character += c.units
	}
	return pos
}

func TestOffsetTable(t *testing.T) {
	tests := []struct {
		text       string
		line, char int
		utf16      int
		utf8       int
	}{
		{"abc", 0, 0, 0, 0},
		{"abc", 0, 2, 2, 2},
		{"abc", 0, 99, 3, 3},                      // past the line: its end
		{"abc", 5, 0, 3, 3},                       // past the last line: the end of the text
		{"a😀b", 0, 1, 1, 1},                       // before the emoji
		{"a😀b", 0, 2, 1, 1},                       // inside it (UTF-16 pair / UTF-8 bytes): its start
		{"a😀b", 0, 3, 5, 1},                       // after it in UTF-16; inside it in UTF-8
		{"a😀b", 0, 5, 6, 5},                       // UTF-8: after the emoji
		{"héllo", 0, 2, 3, 1},                     // é: one UTF-16 unit, two bytes
		{"héllo", 0, 3, 4, 3},                     //
		{"a\rb\rc\r", 1, 0, 2, 2},                 // "\r" ends a line (the example)
		{"a\rb\rc\r", 3, 0, 6, 6},                 // the empty line after a final "\r"
		{"a\r\nb", 0, 5, 1, 1},                    // clamps before "\r\n"
		{"a\r\nb", 1, 0, 3, 3},                    //
		{"a\n\rb", 2, 0, 3, 3},                    // "\n\r" is two line ends
		{"x\r\r\ny", 2, 0, 4, 4},                  // "\r" then "\r\n"
		{"日本語\n", 0, 1, 3, 0},                     // UTF-8 character 1 is inside 日
		{"日本語\n", 0, 3, 9, 3},                     //
		{"a\xffb", 0, 2, 2, 2},                    // an invalid byte counts one unit
		{"", 0, 0, 0, 0},                          //
		{"", 3, 3, 0, 0},                          //
		{"ab\ncd\n", 1, 1, 4, 4},                  //
		{"ab\ncd\n", 2, 0, 6, 6},                  // after the final newline
		{"ab\ncd\n", 3, 0, 6, 6},                  // past it
		{"\U0001F600\r\n\U0001F600", 1, 2, 10, 6}, // UTF-8: 2 is inside the emoji
	}
	for _, tt := range tests {
		for _, c := range []struct {
			enc  PositionEncoding
			want int
		}{{UTF16, tt.utf16}, {UTF8, tt.utf8}} {
			pos := Position{tt.line, tt.char}
			got, err := OffsetIn([]byte(tt.text), pos, c.enc)
			if err != nil || got != c.want {
				t.Errorf("OffsetIn(%q, %d:%d, %s) = %d, %v; want %d", tt.text, tt.line, tt.char, c.enc, got, err, c.want)
			}
			if ref := refOffset(tt.text, pos, c.enc); ref != c.want {
				t.Errorf("reference OffsetIn(%q, %d:%d, %s) = %d; the table says %d", tt.text, tt.line, tt.char, c.enc, ref, c.want)
			}
		}
	}
	if _, err := OffsetIn([]byte("abc"), Position{-1, 0}, UTF16); err == nil {
		t.Error("a negative line gave no error")
	}
	if _, err := OffsetIn([]byte("abc"), Position{0, -1}, UTF8); err == nil {
		t.Error("a negative character gave no error")
	}
}

func TestPositionInTable(t *testing.T) {
	for _, tt := range []struct {
		text        string
		off         int
		utf16, utf8 Position
	}{
		{"a😀b", 5, Position{0, 3}, Position{0, 5}},
		{"a😀b", 3, Position{0, 1}, Position{0, 1}},     // inside the emoji: its start
		{"ab\r\nc", 3, Position{0, 2}, Position{0, 2}}, // between "\r" and "\n"
		{"ab\r\nc", 4, Position{1, 0}, Position{1, 0}},
		{"a\rb", 2, Position{1, 0}, Position{1, 0}},
		{"héllo", 3, Position{0, 2}, Position{0, 3}},
		{"abc", 99, Position{0, 3}, Position{0, 3}},
	} {
		if got := PositionIn([]byte(tt.text), tt.off, UTF16); got != tt.utf16 {
			t.Errorf("PositionIn(%q, %d, utf-16) = %v; want %v", tt.text, tt.off, got, tt.utf16)
		}
		if got := PositionIn([]byte(tt.text), tt.off, UTF8); got != tt.utf8 {
			t.Errorf("PositionIn(%q, %d, utf-8) = %v; want %v", tt.text, tt.off, got, tt.utf8)
		}
	}
}

func TestMinimalEditRoundTrip(t *testing.T) {
	for _, c := range [][2]string{
		{"one\ntwo😀 three\nfour\n", "one\ntwo😀 3\nfour\nfive\n"},
		{"a\r\nb\r\n", "a\r\nx\r\nb\r\n"},
		{"a\r\nb", "a\nb"},
		{"é", "è"},
		{"😀", "😁"},
		{"", "new"},
		{"gone", ""},
		{"x\ry", "x\r\ny"},
	} {
		for _, enc := range []PositionEncoding{UTF16, UTF8} {
			rng, text := MinimalEdit([]byte(c[0]), []byte(c[1]), enc)
			out, err := ApplyEdits([]byte(c[0]), []TextEdit{{Range: &rng, Text: text}}, enc)
			if err != nil || string(out) != c[1] {
				t.Errorf("%s: MinimalEdit(%q, %q) = %v %q, applied %q, %v", enc, c[0], c[1], rng, text, out, err)
			}
		}
	}
}

// FuzzOffset compares OffsetIn and PositionIn with the reference in both
// encodings, and an edit at the offset with string surgery. The seed
// corpus is in testdata/fuzz/FuzzOffset.
func FuzzOffset(f *testing.F) {
	f.Add("a😀b\r\ncd\ré\n", 0, 2, false)
	f.Add("x\r\r\ny", 2, 0, true)
	f.Add("日本語", 0, 9, true)
	f.Fuzz(func(t *testing.T, text string, line, char int, utf8enc bool) {
		if line < 0 || char < 0 || line > 1000 || char > 1000 {
			return
		}
		enc := UTF16
		if utf8enc {
			enc = UTF8
		}
		pos := Position{line, char}
		got, err := OffsetIn([]byte(text), pos, enc)
		if err != nil {
			t.Fatalf("OffsetIn(%q, %v, %s): %v", text, pos, enc, err)
		}
		if want := refOffset(text, pos, enc); got != want {
			t.Fatalf("OffsetIn(%q, %v, %s) = %d; reference %d", text, pos, enc, got, want)
		}
		// The position of that offset names it again.
		p := PositionIn([]byte(text), got, enc)
		if want := refPosition(text, got, enc); p != want {
			t.Fatalf("PositionIn(%q, %d, %s) = %v; reference %v", text, got, enc, p, want)
		}
		if back, _ := OffsetIn([]byte(text), p, enc); back != got {
			t.Fatalf("%q %s: offset %d -> %v -> %d", text, enc, got, p, back)
		}
		// Applying an edit there agrees with string surgery.
		end := Position{line, char + 1}
		e := refOffset(text, end, enc)
		out, err := ApplyEdits([]byte(text), []TextEdit{{Range: &Range{pos, end}, Text: "Z"}}, enc)
		if err != nil || !bytes.Equal(out, []byte(text[:got]+"Z"+text[e:])) {
			t.Fatalf("edit at %v..%v of %q = %q, %v", pos, end, text, out, err)
		}
	})
}

// FuzzMinimalEdit checks that the edit the server sends an editor
// (workspace/applyEdit), applied the way an editor applies it, turns the
// buffer into exactly the wanted text, in both encodings.
func FuzzMinimalEdit(f *testing.F) {
	f.Add("one\ntwo😀 three\nfour\n", "one\ntwo😀 3\nfour\nfive\n", false)
	f.Add("a\r\nb", "a\nb", true)
	f.Add("x\ry", "x\r\ny", false)
	f.Add("é\xff", "è\xfe", true)
	f.Fuzz(func(t *testing.T, old, new string, utf8enc bool) {
		enc := UTF16
		if utf8enc {
			enc = UTF8
		}
		rng, text := MinimalEdit([]byte(old), []byte(new), enc)
		start, end := refOffset(old, rng.Start, enc), refOffset(old, rng.End, enc)
		if start > end {
			t.Fatalf("MinimalEdit(%q, %q, %s) = %v: end before start", old, new, enc, rng)
		}
		if got := old[:start] + text + old[end:]; got != new {
			t.Fatalf("MinimalEdit(%q, %q, %s) = %v %q; applied by the reference: %q", old, new, enc, rng, text, got)
		}
	})
}
