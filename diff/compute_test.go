package diff

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestComputeMinimalAndRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	styles := []string{"\n", "\r\n", "mixed"}
	for i := 0; i < 3000; i++ {
		style := styles[i%3]
		vocab := 2 + rng.IntN(12)
		old := genText(rng, 40, vocab, style)
		var nw []byte
		if i%2 == 0 {
			nw = mutate(rng, old, vocab, style)
		} else {
			nw = genText(rng, 40, vocab, style)
		}
		fd := Compute("f", "f", old, nw)
		if fd.Binary {
			t.Fatalf("case %d: text reported binary", i)
		}
		a, b := splitLines(string(old)), splitLines(string(nw))
		if got, want := editCount(fd), len(a)+len(b)-2*lcsLen(a, b); got != want {
			t.Fatalf("case %d: diff has %d edited lines, minimum is %d\nold=%q\nnew=%q", i, got, want, old, nw)
		}
		checkHunkShape(t, fd, a, b)
		got, err := Apply(old, fd.Hunks)
		if err != nil || !bytes.Equal(got, nw) {
			t.Fatalf("case %d: Apply = %q, %v; want %q\nold=%q", i, got, err, nw, old)
		}
		back, err := Revert(nw, fd.Hunks)
		if err != nil || !bytes.Equal(back, old) {
			t.Fatalf("case %d: Revert = %q, %v; want %q", i, back, err, old)
		}
	}
}

// checkHunkShape verifies headers against the lines, the context sizes and
// that the hunks' sides are the files' lines at the header positions.
func checkHunkShape(t *testing.T, fd *FileDiff, a, b []string) {
	t.Helper()
	prevEnd := 0
	for i, h := range fd.Hunks {
		if n := countSide(&h, Insert); n != h.OldLines {
			t.Fatalf("hunk %d: OldLines %d, old side has %d lines", i, h.OldLines, n)
		}
		if n := countSide(&h, Delete); n != h.NewLines {
			t.Fatalf("hunk %d: NewLines %d, new side has %d lines", i, h.NewLines, n)
		}
		op := oldPos(&h)
		if got := strings.Join(a[op:op+h.OldLines], ""); got != h.OldText() {
			t.Fatalf("hunk %d: old side %q is not old[%d:] %q", i, h.OldText(), op, got)
		}
		np := h.NewStart - 1
		if h.NewLines == 0 {
			np = h.NewStart
		}
		if got := strings.Join(b[np:np+h.NewLines], ""); got != h.NewText() {
			t.Fatalf("hunk %d: new side %q is not new[%d:] %q", i, h.NewText(), np, got)
		}
		lead := 0
		for lead < len(h.Lines) && h.Lines[lead].Kind == Context {
			lead++
		}
		trail := 0
		for trail < len(h.Lines) && h.Lines[len(h.Lines)-1-trail].Kind == Context {
			trail++
		}
		if lead > contextLines || trail > contextLines || lead == len(h.Lines) {
			t.Fatalf("hunk %d: %d leading, %d trailing context lines of %d", i, lead, trail, len(h.Lines))
		}
		if lead < contextLines && op != 0 {
			t.Fatalf("hunk %d: only %d leading context lines but starts at old line %d", i, lead, op+1)
		}
		if trail < contextLines && op+h.OldLines != len(a) {
			t.Fatalf("hunk %d: only %d trailing context lines but ends before the end", i, trail)
		}
		if i > 0 && op <= prevEnd {
			t.Fatalf("hunk %d overlaps or touches hunk %d: should have been merged", i, i-1)
		}
		prevEnd = op + h.OldLines
		if h.ID == "" {
			t.Fatalf("hunk %d has no id", i)
		}
	}
}

func TestComputeEdgeCases(t *testing.T) {
	tests := []struct {
		name, old, new string
		hunks          int
		header         string // first hunk's header
	}{
		{"equal", "a\nb\n", "a\nb\n", 0, ""},
		{"both empty", "", "", 0, ""},
		{"create", "", "a\nb\n", 1, "@@ -0,0 +1,2 @@"},
		{"delete all", "a\n", "", 1, "@@ -1 +0,0 @@"},
		{"add final newline", "a\nb", "a\nb\n", 1, "@@ -1,2 +1,2 @@"},
		{"crlf to lf", "a\r\n", "a\n", 1, "@@ -1 +1 @@"},
		{"insert at top", "b\nc\nd\ne\nf\n", "a\nb\nc\nd\ne\nf\n", 1, "@@ -1,3 +1,4 @@"},
		{"two far hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "x\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ny\n", 2, "@@ -1,4 +1,4 @@"},
		{"merged hunks", "1\n2\n3\n4\n5\n6\n7\n8\n", "x\n2\n3\n4\n5\n6\n7\ny\n", 1, "@@ -1,8 +1,8 @@"},
		{"lone cr is text", "a\rb\n", "a\rc\n", 1, "@@ -1 +1 @@"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fd := Compute("f", "f", []byte(tc.old), []byte(tc.new))
			if len(fd.Hunks) != tc.hunks {
				t.Fatalf("got %d hunks, want %d: %s", len(fd.Hunks), tc.hunks, Unified(fd))
			}
			if tc.hunks > 0 {
				if got := HunkHeader(&fd.Hunks[0]); got != tc.header {
					t.Errorf("header %q, want %q", got, tc.header)
				}
			}
			got, err := Apply([]byte(tc.old), fd.Hunks)
			if err != nil || string(got) != tc.new {
				t.Errorf("Apply = %q, %v", got, err)
			}
		})
	}
}

func TestComputeBinary(t *testing.T) {
	old := []byte("text\n")
	bin := append([]byte("abc"), 0, 'x')
	fd := Compute("f", "f", old, bin)
	if !fd.Binary || len(fd.Hunks) != 0 {
		t.Fatalf("NUL in new side: Binary=%v hunks=%d", fd.Binary, len(fd.Hunks))
	}
	if fd.OldOID != BlobID(old) || fd.NewOID != BlobID(bin) {
		t.Errorf("oids %s %s", fd.OldOID, fd.NewOID)
	}
	if u := Unified(fd); !strings.Contains(u, "index "+fd.OldOID+".."+fd.NewOID+"\n") || !strings.HasSuffix(u, "Binary files a/f and b/f differ\n") {
		t.Errorf("binary rendering:\n%s", u)
	}
	fd.OldOID, fd.NewOID = "", ""
	if u := Unified(fd); strings.Contains(u, "index ") {
		t.Errorf("binary diff without ids has an index line:\n%s", u)
	}
	if u := Unified(Compute("f", "f", bin, bin)); u != "" {
		t.Errorf("unchanged binary file renders as\n%s", u)
	}
	// A NUL after the first 8000 bytes does not make a file binary (git).
	late := append(bytes.Repeat([]byte("a"), 8000), 0)
	if IsBinary(late) {
		t.Error("NUL at byte 8000 counted as binary")
	}
	if !IsBinary(late[7999:]) {
		t.Error("NUL at byte 1 not binary")
	}
	if IsBinary(nil) {
		t.Error("empty file binary")
	}
}

func TestBlobIDMatchesGit(t *testing.T) {
	dir := t.TempDir()
	data := []byte("hello\x00world\n")
	got := BlobID(data)
	want := strings.TrimSpace(git(t, dir, data, "hash-object", "--stdin"))
	if got != want {
		t.Errorf("BlobID = %s, git hash-object = %s", got, want)
	}
}

func TestHunkIDStable(t *testing.T) {
	var old strings.Builder
	for i := 0; i < 60; i++ {
		old.WriteString("line ")
		old.WriteString(strings.Repeat("x", i))
		old.WriteString("\n")
	}
	o := old.String()
	n := strings.Replace(o, "line "+strings.Repeat("x", 40)+"\n", "changed\n", 1)
	fd1 := Compute("f", "f", []byte(o), []byte(n))
	// Move everything down by inserting lines far above the change, and add
	// a second, unrelated change.
	o2 := "top1\ntop2\n" + o
	n2 := "top1\ntop2\nnew top\n" + n
	fd2 := Compute("f", "f", []byte(o2), []byte(n2))
	if len(fd1.Hunks) != 1 || len(fd2.Hunks) != 2 {
		t.Fatalf("hunks: %d, %d", len(fd1.Hunks), len(fd2.Hunks))
	}
	if fd2.Hunks[1].OldStart == fd1.Hunks[0].OldStart {
		t.Fatal("the hunk did not move; the test proves nothing")
	}
	if fd1.Hunks[0].ID != fd2.Hunks[1].ID {
		t.Errorf("moved hunk changed id: %s -> %s", fd1.Hunks[0].ID, fd2.Hunks[1].ID)
	}
	if fd2.Hunks[0].ID == fd2.Hunks[1].ID {
		t.Error("different hunks share an id")
	}
	// Changing the hunk's content changes its id.
	n3 := strings.Replace(o, "line "+strings.Repeat("x", 40)+"\n", "changed differently\n", 1)
	fd3 := Compute("f", "f", []byte(o), []byte(n3))
	if fd3.Hunks[0].ID == fd1.Hunks[0].ID {
		t.Error("different content, same id")
	}
	// Identical hunks in one file get distinct ids.
	rep := strings.Repeat("a\nb\nc\nd\ne\nf\ng\nh\n", 3)
	fd4 := Compute("f", "f", []byte(rep), []byte(strings.ReplaceAll(rep, "d\n", "D\n")))
	ids := map[string]bool{}
	for _, h := range fd4.Hunks {
		if ids[h.ID] {
			t.Errorf("duplicate id %s", h.ID)
		}
		ids[h.ID] = true
	}
}

func TestTooManyDistinctLines(t *testing.T) {
	defer func(v int) { maxDistinct = v }(maxDistinct)
	maxDistinct = 3
	old := []byte("a\nb\nc\nd\ne\n")
	nw := []byte("e\nd\nc\nb\na\n")
	fd := Compute("f", "f", old, nw)
	if !fd.Binary || len(fd.Hunks) != 0 || fd.NewOID != BlobID(nw) {
		t.Fatalf("too many distinct lines: Binary=%v hunks=%d", fd.Binary, len(fd.Hunks))
	}
	maxDistinct = 5
	if fd := Compute("f", "f", old, nw); fd.Binary {
		t.Fatal("5 distinct lines reported too large with a limit of 5")
	}
}

// TestComputeOwnsItsLines checks that the hunks do not alias the caller's
// buffers: overwriting them afterwards changes nothing.
func TestComputeOwnsItsLines(t *testing.T) {
	old := []byte("a\nb\nc\n")
	nw := []byte("a\nB\nc\n")
	fd := Compute("f", "f", old, nw)
	want := Unified(fd)
	for i := range old {
		old[i] = 'x'
	}
	for i := range nw {
		nw[i] = 'y'
	}
	if got := Unified(fd); got != want {
		t.Fatalf("rendering changed after the inputs were overwritten:\n%s", got)
	}
}

// TestRuneFor checks the runes standing for lines up to go-diff's limit:
// all valid, distinct and in order, and the last one is the last code point.
func TestRuneFor(t *testing.T) {
	prev := rune(0)
	for n := 0; n < maxRunes-1; n++ {
		r := runeFor(n)
		if r <= prev || !utf8.ValidRune(r) {
			t.Fatalf("runeFor(%d) = %#x after %#x", n, r, prev)
		}
		prev = r
	}
	if prev != utf8.MaxRune {
		t.Fatalf("last rune %#x, want %#x", prev, utf8.MaxRune)
	}
	// A string round trip keeps them apart (go-diff converts to strings).
	rs := []rune{runeFor(0xD7FE), runeFor(0xD7FF), runeFor(maxRunes - 2)}
	if back := []rune(string(rs)); !slices.Equal(back, rs) {
		t.Fatalf("round trip %x -> %x", rs, back)
	}
}
