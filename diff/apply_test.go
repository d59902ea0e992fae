package diff

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// expectSubset builds the expected result of applying the chosen hunks of a
// computed diff: each hunk's region of old becomes its new side.
func expectSubset(old []byte, hunks []Hunk, chosen []bool) []byte {
	lines := splitLines(string(old))
	var b strings.Builder
	pos := 0
	for i := range hunks {
		h := &hunks[i]
		at := oldPos(h)
		b.WriteString(strings.Join(lines[pos:at], ""))
		if chosen[i] {
			b.WriteString(h.NewText())
		} else {
			b.WriteString(h.OldText())
		}
		pos = at + h.OldLines
	}
	b.WriteString(strings.Join(lines[pos:], ""))
	return []byte(b.String())
}

func TestApplySubsetsAnyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tried := 0
	for c := 0; c < 400; c++ {
		old := genText(rng, 80, 0, "mixed")
		nw := mutate(rng, old, 0, "mixed")
		nw = mutate(rng, nw, 0, "mixed")
		fd := Compute("f", "f", old, nw)
		n := len(fd.Hunks)
		if n == 0 || n > 6 {
			continue
		}
		for mask := 0; mask < 1<<n; mask++ {
			chosen := make([]bool, n)
			var sub []Hunk
			for i := 0; i < n; i++ {
				if mask&(1<<i) != 0 {
					chosen[i] = true
					sub = append(sub, fd.Hunks[i])
				}
			}
			rng.Shuffle(len(sub), func(i, j int) { sub[i], sub[j] = sub[j], sub[i] })
			want := expectSubset(old, fd.Hunks, chosen)
			got, err := Apply(old, sub)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("case %d mask %b: Apply = %q, %v; want %q", c, mask, got, err, want)
			}
			back, err := Revert(got, sub)
			if err != nil || !bytes.Equal(back, old) {
				t.Fatalf("case %d mask %b: Revert = %q, %v; want %q", c, mask, back, err, old)
			}
			tried++
		}
	}
	if tried < 500 {
		t.Fatalf("only %d subsets tried", tried)
	}
}

func TestApplyOffset(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 40; i++ {
		b.WriteString("line " + strings.Repeat("*", i) + "\n")
	}
	old := b.String()
	nw := strings.Replace(old, "line "+strings.Repeat("*", 20)+"\n", "changed\n", 1)
	nw = strings.Replace(nw, "line "+strings.Repeat("*", 35)+"\n", "", 1)
	fd := Compute("f", "f", []byte(old), []byte(nw))
	if len(fd.Hunks) != 2 {
		t.Fatalf("%d hunks", len(fd.Hunks))
	}
	// The user added lines at the top and removed some between the hunks
	// meanwhile: the hunks are found where their lines moved to.
	moved := "new 1\nnew 2\nnew 3\n" + strings.Replace(old, "line "+strings.Repeat("*", 28)+"\n", "", 1)
	want := "new 1\nnew 2\nnew 3\n" + strings.Replace(nw, "line "+strings.Repeat("*", 28)+"\n", "", 1)
	got, err := Apply([]byte(moved), fd.Hunks)
	if err != nil || string(got) != want {
		t.Fatalf("Apply with offset = %q, %v", got, err)
	}
	back, err := Revert(got, fd.Hunks)
	if err != nil || string(back) != moved {
		t.Fatalf("Revert with offset = %q, %v", back, err)
	}
}

func TestApplyFailures(t *testing.T) {
	old := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\n"
	nw := "a\nb\nc\nd\ne\nF\ng\nh\ni\nj\nk\nl\nm\n"
	fd := Compute("f", "f", []byte(old), []byte(nw))
	h := fd.Hunks[0]

	// Its context changed: no fuzz, so it does not apply.
	_, err := Apply([]byte(strings.Replace(old, "e\n", "E\n", 1)), fd.Hunks)
	var he *HunkError
	if !errors.As(err, &he) || he.ID != h.ID {
		t.Fatalf("changed context: err = %v, want a HunkError for %s", err, h.ID)
	}
	if !strings.Contains(err.Error(), h.ID) {
		t.Errorf("error %q does not name the hunk", err)
	}
	// Applying the same hunk twice overlaps.
	if _, err := Apply([]byte(old), []Hunk{h, h}); !errors.As(err, &he) || !strings.Contains(he.Reason, "overlaps") {
		t.Errorf("overlap: err = %v", err)
	}
	// Reverting a hunk that was not applied fails.
	if _, err := Revert([]byte(old), fd.Hunks); err == nil {
		t.Error("Revert of an unapplied hunk succeeded")
	}
	// A hunk ending with a line without newline only matches at the end.
	fd2 := Compute("f", "f", []byte("x\ny"), []byte("x\nz"))
	if _, err := Apply([]byte("x\ny\nmore\n"), fd2.Hunks); err == nil {
		t.Error("no-newline hunk applied in the middle of a file")
	}
}

func TestApplyParsedZeroContext(t *testing.T) {
	// `diff -U0` style: an insertion with no context after line 2.
	fds, err := Parse("--- a/f\n+++ b/f\n@@ -2,0 +3 @@\n+new\n@@ -4 +4,0 @@\n-d\n")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Apply([]byte("a\nb\nc\nd\ne\n"), fds[0].Hunks)
	if err != nil || string(got) != "a\nb\nnew\nc\ne\n" {
		t.Fatalf("Apply = %q, %v", got, err)
	}
}
