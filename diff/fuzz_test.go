package diff

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzParse feeds arbitrary text to Parse. Whatever it accepts must render
// and parse back to the same hunks, and applying them to arbitrary data must
// not panic.
func FuzzParse(f *testing.F) {
	f.Add("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n")
	f.Add("diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n")
	f.Fuzz(func(t *testing.T, patch string) {
		fds, err := Parse(patch)
		if err != nil {
			return
		}
		for _, fd := range fds {
			for _, h := range fd.Hunks {
				if countSide(&h, Insert) != h.OldLines || countSide(&h, Delete) != h.NewLines {
					t.Fatalf("hunk counts %d,%d disagree with its lines %#v", h.OldLines, h.NewLines, h.Lines)
				}
			}
			if len(fd.Hunks) == 0 {
				continue
			}
			clean := &FileDiff{OldPath: "f", NewPath: "f", Hunks: fd.Hunks}
			again, err := Parse(Unified(clean))
			if err != nil || len(again) != 1 {
				t.Fatalf("re-parse of rendered hunks: %v, %d files\n%s", err, len(again), Unified(clean))
			}
			if !reflect.DeepEqual(again[0].Hunks, fd.Hunks) {
				t.Fatalf("hunks changed in a render/parse round trip:\n%#v\n%#v", fd.Hunks, again[0].Hunks)
			}
			_, _ = Apply([]byte(patch), fd.Hunks)
			_, _ = Revert([]byte(patch), fd.Hunks)
		}
	})
}

// FuzzRoundTrip checks Compute against Apply, Revert, Parse and the
// minimality reference.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nc\nd"))
	f.Add([]byte(""), []byte("x\r\ny\n"))
	f.Fuzz(func(t *testing.T, old, nw []byte) {
		fd := Compute("f", "f", old, nw)
		if fd.Binary {
			if !IsBinary(old) && !IsBinary(nw) {
				t.Fatal("text reported binary")
			}
			return
		}
		got, err := Apply(old, fd.Hunks)
		if err != nil || !bytes.Equal(got, nw) {
			t.Fatalf("Apply(old, all hunks) = %q, %v; want %q", got, err, nw)
		}
		back, err := Revert(nw, fd.Hunks)
		if err != nil || !bytes.Equal(back, old) {
			t.Fatalf("Revert(new, all hunks) = %q, %v; want %q", back, err, old)
		}
		a, b := splitLines(string(old)), splitLines(string(nw))
		if len(a)*len(b) <= 1<<16 {
			if got, want := editCount(fd), len(a)+len(b)-2*lcsLen(a, b); got != want {
				t.Fatalf("%d edited lines, minimum %d", got, want)
			}
		}
		if len(fd.Hunks) > 0 {
			fds, err := Parse(Unified(fd))
			if err != nil || len(fds) != 1 || !reflect.DeepEqual(fds[0].Hunks, fd.Hunks) {
				t.Fatalf("Parse(Unified) round trip: %v\n%s", err, Unified(fd))
			}
		}
		// Every line of a word diff is consistent.
		if len(a) > 0 && len(b) > 0 {
			oa, _ := cutEOL(a[0])
			ob, _ := cutEOL(b[0])
			spans := Words(oa, ob)
			if keep(oa, spans, Delete) != keep(ob, spans, Insert) {
				t.Fatalf("Words(%q, %q) = %v leaves different texts", oa, ob, spans)
			}
		}
		merged, conflicts := Merge3(old, nw, old)
		if !bytes.Equal(merged, nw) || len(conflicts) != 0 {
			t.Fatalf("Merge3(base, ours, base) = %q, %v", merged, conflicts)
		}
	})
}
