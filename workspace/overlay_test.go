package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"go.lsp.dev/uri"
)

func newWS(t testing.TB, files map[string]string) (*Workspace, string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := Open(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, root
}

// uriPath is the path part of dir's file URI: dir itself on POSIX,
// "/c%3A/Users/x" for C:\Users\x on Windows.
func uriPath(dir string) string {
	return strings.TrimPrefix(string(uri.File(dir)), "file://")
}

func rng(l1, c1, l2, c2 int) *Range {
	return &Range{Start: Position{l1, c1}, End: Position{l2, c2}}
}

func TestEditOverlay(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		edits []TextEdit
		want  string
	}{
		{"insert at start", "abc\n", []TextEdit{{rng(0, 0, 0, 0), "X"}}, "Xabc\n"},
		{"replace middle", "abc\ndef\n", []TextEdit{{rng(1, 1, 1, 2), "XY"}}, "abc\ndXYf\n"},
		{"delete across lines", "abc\ndef\nghi\n", []TextEdit{{rng(0, 2, 2, 1), ""}}, "abhi\n"},
		{"full replace", "abc\n", []TextEdit{{nil, "new"}}, "new"},
		{"append after last newline", "abc\n", []TextEdit{{rng(1, 0, 1, 0), "tail"}}, "abc\ntail"},
		{"append without final newline", "abc", []TextEdit{{rng(0, 3, 0, 3), "!"}}, "abc!"},
		{"character past line end clamps", "abc\ndef\n", []TextEdit{{rng(0, 99, 0, 99), "!"}}, "abc!\ndef\n"},
		{"sequential edits see earlier ones", "abc\n", []TextEdit{
			{rng(0, 0, 0, 0), "1\n"},
			{rng(1, 0, 1, 1), "A"},
		}, "1\nAbc\n"},
		// UTF-16: é is one unit (two bytes), 😀 is two units (four bytes).
		{"bmp char", "héllo\n", []TextEdit{{rng(0, 2, 0, 3), "L"}}, "héLlo\n"},
		{"astral char counts two units", "a😀b\n", []TextEdit{{rng(0, 3, 0, 4), "B"}}, "a😀B\n"},
		{"replace astral char", "a😀b\n", []TextEdit{{rng(0, 1, 0, 3), "x"}}, "axb\n"},
		{"inside surrogate pair rounds down", "a😀b\n", []TextEdit{{rng(0, 2, 0, 2), "|"}}, "a|😀b\n"},
		{"two astral chars", "😀😀x", []TextEdit{{rng(0, 4, 0, 5), "y"}}, "😀😀y"},
		{"cjk", "日本語\n", []TextEdit{{rng(0, 1, 0, 2), "X"}}, "日X語\n"},
		// Line terminators: \r\n, \r and \n all end a line.
		{"crlf second line", "ab\r\ncd\r\n", []TextEdit{{rng(1, 0, 1, 1), "X"}}, "ab\r\nXd\r\n"},
		{"crlf char past end clamps before cr", "ab\r\ncd\r\n", []TextEdit{{rng(0, 5, 0, 5), "!"}}, "ab!\r\ncd\r\n"},
		{"crlf join lines", "ab\r\ncd\r\n", []TextEdit{{rng(0, 2, 1, 0), ""}}, "abcd\r\n"},
		{"cr only", "ab\rcd\r", []TextEdit{{rng(1, 1, 1, 2), "X"}}, "ab\rcX\r"},
		{"mixed terminators", "a\nb\r\nc\rd", []TextEdit{{rng(3, 0, 3, 1), "D"}}, "a\nb\r\nc\rD"},
		{"crlf with astral", "😀\r\n😀\r\n", []TextEdit{{rng(1, 2, 1, 2), "!"}}, "😀\r\n😀!\r\n"},
		{"empty text", "", []TextEdit{{rng(0, 0, 0, 0), "x"}}, "x"},
		{"invalid utf8 counts one unit", "a\xffb", []TextEdit{{rng(0, 2, 0, 3), "B"}}, "a\xffB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, _ := newWS(t, nil)
			if err := w.OpenOverlay("f.txt", []byte(tt.text), 1); err != nil {
				t.Fatal(err)
			}
			if err := w.EditOverlay("f.txt", tt.edits, 2); err != nil {
				t.Fatal(err)
			}
			got, v, ok := w.Overlay("f.txt")
			if !ok || v != 2 || string(got) != tt.want {
				t.Fatalf("overlay = %q v%d ok=%v; want %q v2", got, v, ok, tt.want)
			}
		})
	}
}

func TestEditOverlayErrors(t *testing.T) {
	w, _ := newWS(t, nil)
	if err := w.EditOverlay("nope.txt", []TextEdit{{nil, "x"}}, 1); !errors.Is(err, ErrNotOpen) {
		t.Fatalf("edit of an unopened buffer: %v; want ErrNotOpen", err)
	}
	if err := w.OpenOverlay("f.txt", []byte("ab\ncd\n"), 1); err != nil {
		t.Fatal(err)
	}
	for _, e := range [][]TextEdit{
		{{rng(1, 1, 0, 0), "x"}},                         // end before start
		{{rng(-1, 0, 0, 0), "x"}},                        // negative
		{{rng(0, 0, 0, 1), "ok"}, {rng(1, 0, 0, 0), ""}}, // second fails: all or nothing
	} {
		if err := w.EditOverlay("f.txt", e, 2); err == nil {
			t.Errorf("EditOverlay(%v) succeeded; want an error", e)
		}
	}
	got, v, _ := w.Overlay("f.txt")
	if string(got) != "ab\ncd\n" || v != 1 {
		t.Fatalf("failed edits changed the buffer: %q v%d", got, v)
	}
	if err := w.OpenOverlay("../x", nil, 1); !errors.Is(err, ErrOutsideRoot) {
		t.Fatalf("OpenOverlay outside: %v", err)
	}
}

func TestPositionOfInvertsOffset(t *testing.T) {
	texts := []string{"", "abc", "a\nb\r\nc\rd", "😀a\r\n日本\n\n", "x\r", "\r\n\r\n"}
	for _, text := range texts {
		b := []byte(text)
		for off := 0; off <= len(b); off++ {
			pos := PositionOf(b, off)
			back, err := Offset(b, pos)
			if err != nil {
				t.Fatalf("%q: Offset(PositionOf(%d) = %v): %v", text, off, pos, err)
			}
			// Offsets inside a character or between \r and \n map to the
			// start of that character / the end of the line.
			if back > off {
				t.Fatalf("%q: offset %d -> %v -> %d", text, off, pos, back)
			}
		}
	}
	if got := PositionOf([]byte("a😀b\r\nc"), 5); got != (Position{0, 3}) {
		t.Fatalf("PositionOf after the astral char = %v; want 0:3", got)
	}
	if got := PositionOf([]byte("ab\r\nc"), 4); got != (Position{1, 0}) {
		t.Fatalf("PositionOf after crlf = %v; want 1:0", got)
	}
}

func TestReadFileSeesOverlay(t *testing.T) {
	w, root := newWS(t, map[string]string{"f.txt": "disk\n"})
	ctx := t.Context()
	if got, err := w.ReadFile(ctx, "f.txt"); err != nil || string(got) != "disk\n" {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
	if err := w.OpenOverlay("file://"+uriPath(root)+"/f.txt", []byte("buffer\n"), 3); err != nil {
		t.Fatal(err)
	}
	got, err := w.ReadFile(ctx, "f.txt")
	if err != nil || string(got) != "buffer\n" {
		t.Fatalf("ReadFile with overlay = %q, %v", got, err)
	}
	got[0] = 'X' // the caller's copy
	if again, _ := w.ReadFile(ctx, root+"/f.txt"); string(again) != "buffer\n" {
		t.Fatalf("modifying ReadFile's result changed the overlay: %q", again)
	}
	w.CloseOverlay("f.txt")
	if got, _ := w.ReadFile(ctx, "f.txt"); string(got) != "disk\n" {
		t.Fatalf("after close ReadFile = %q; want the disk", got)
	}
	if _, _, ok := w.Overlay("f.txt"); ok {
		t.Fatal("overlay still open after CloseOverlay")
	}
}

func TestOverlayThroughSymlink(t *testing.T) {
	w, root := newWS(t, map[string]string{"real.txt": "disk\n"})
	if err := os.Symlink("real.txt", filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := w.OpenOverlay("link.txt", []byte("buf\n"), 1); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.ReadFile(t.Context(), "real.txt"); string(got) != "buf\n" {
		t.Fatalf("ReadFile(target) = %q; want the overlay opened through the link", got)
	}
}

func TestReadFileLimits(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "big"), bytes.Repeat([]byte("x"), 101), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "ok"), bytes.Repeat([]byte("x"), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := Open(root, Options{MaxFileSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := t.Context()
	_, err = w.ReadFile(ctx, "big")
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "big") || !strings.Contains(err.Error(), "101") {
		t.Fatalf("ReadFile(big) error = %v; want ErrTooLarge naming the file and its size", err)
	}
	if got, err := w.ReadFile(ctx, "ok"); err != nil || len(got) != 100 {
		t.Fatalf("ReadFile(ok) = %d bytes, %v", len(got), err)
	}
	if _, err := w.ReadFile(ctx, "d"); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("ReadFile(dir) error = %v; want 'is a directory'", err)
	}
	if _, err := w.ReadFile(ctx, "missing"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadFile(missing) error = %v; want ErrNotExist", err)
	}
	var pe *PathError
	if _, err := w.ReadFile(ctx, "missing"); !errors.As(err, &pe) || pe.Path != "missing" {
		t.Fatalf("ReadFile(missing) error %v does not name the path", err)
	}
}

// TestConcurrentOverlayEdits applies thousands of ordered edits to several
// buffers from their own goroutines while readers read, and checks the
// final texts against the same edits applied to a plain string.
func TestConcurrentOverlayEdits(t *testing.T) {
	w, _ := newWS(t, nil)
	const docs, edits = 4, 2000
	var wg sync.WaitGroup
	for d := range docs {
		name := fmt.Sprintf("doc%d.txt", d)
		if err := w.OpenOverlay(name, nil, 0); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			// Each edit inserts "<i>😀\r\n" at the start of line i%3 (or at
			// the end), then every 10th edit deletes the first line.
			var want []string // lines without terminators
			for i := 1; i <= edits; i++ {
				line := i % 3
				if line > len(want) {
					line = len(want)
				}
				text := fmt.Sprintf("%d😀\r\n", i)
				want = append(want[:line], append([]string{fmt.Sprintf("%d😀", i)}, want[line:]...)...)
				es := []TextEdit{{rng(line, 0, line, 0), text}}
				if i%10 == 0 {
					es = append(es, TextEdit{rng(0, 0, 1, 0), ""})
					want = want[1:]
				}
				if err := w.EditOverlay(name, es, int32(i)); err != nil {
					t.Errorf("%s edit %d: %v", name, i, err)
					return
				}
			}
			got, v, _ := w.Overlay(name)
			exp := ""
			for _, l := range want {
				exp += l + "\r\n"
			}
			if string(got) != exp || v != edits {
				t.Errorf("%s: final text differs (v%d, %d bytes, want %d bytes)", name, v, len(got), len(exp))
			}
		})
	}
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for range 300 {
				for d := range docs {
					if _, err := w.ReadFile(t.Context(), fmt.Sprintf("doc%d.txt", d)); err != nil {
						t.Error(err)
						return
					}
				}
				w.OpenOverlays()
			}
		})
	}
	wg.Wait()
	readers.Wait()
}

// BenchmarkEditOverlay edits one character per didChange in a 200 KB
// buffer. The "copy-per-edit" case is the straightforward implementation
// (scan bytes to the line, build a new slice per edit) for the ratio.
func BenchmarkEditOverlay(b *testing.B) {
	text := strings.Repeat("func main() { fmt.Println(\"héllo 😀\") }\n", 5000) // ~200 KB
	b.Run("workspace", func(b *testing.B) {
		w, _ := newWS(b, nil)
		if err := w.OpenOverlay("f.go", []byte(text), 0); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			line := i * 7919 % 5000
			if err := w.EditOverlay("f.go", []TextEdit{{rng(line, 5, line, 6), "x"}}, int32(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("copy-per-edit", func(b *testing.B) {
		buf := []byte(text)
		for i := range b.N {
			line := i * 7919 % 5000
			start := naiveOffset(buf, Position{line, 5})
			end := naiveOffset(buf, Position{line, 6})
			out := make([]byte, 0, len(buf)+1)
			out = append(out, buf[:start]...)
			out = append(out, 'x')
			buf = append(out, buf[end:]...)
		}
	})
}

// naiveOffset walks bytes to the line, then counts UTF-16 units.
func naiveOffset(text []byte, pos Position) int {
	off := 0
	for line := 0; line < pos.Line && off < len(text); off++ {
		if text[off] == '\n' || text[off] == '\r' && (off+1 == len(text) || text[off+1] != '\n') {
			line++
		}
	}
	for units := 0; off < len(text) && units < pos.Character && text[off] != '\n' && text[off] != '\r'; {
		r, size := utf8.DecodeRune(text[off:])
		units += utf16.RuneLen(r)
		off += size
	}
	return off
}
