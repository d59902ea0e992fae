package diff

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

type applyCase struct {
	fd       *FileDiff
	old, new []byte
	hasOld   bool
	hasNew   bool
}

// TestUnifiedGitApply renders several hundred generated file pairs into one
// patch, has the real `git apply --check` accept it, applies it with
// `git apply` and compares every resulting file byte for byte. It also
// checks that Parse reads the patch back into the same diffs.
func TestUnifiedGitApply(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	blobs := filepath.Join(dir, "blobs")
	for _, d := range []string{work, blobs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git(t, work, nil, "init", "-q", ".")

	rng := rand.New(rand.NewPCG(42, 7))
	styles := []string{"\n", "\r\n", "mixed"}
	var cases []applyCase
	var blobFiles []string
	for k := 0; len(cases) < 240; k++ {
		style := styles[k%3]
		vocab := []int{3, 20, 0}[k%3]
		name := caseName(k)
		c := applyCase{hasOld: true, hasNew: true}
		c.old = genText(rng, 60, vocab, style)
		c.new = mutate(rng, c.old, vocab, style)
		oldPath, newPath := name, name
		var oldMode, newMode uint32 = 0o100644, 0o100644
		switch k % 12 {
		case 1: // creation
			oldPath, c.hasOld, c.old = "", false, nil
		case 2: // deletion
			newPath, c.hasNew, c.new = "", false, nil
		case 3: // to or from an empty file
			if k%24 == 3 {
				c.old = nil
			} else {
				c.new = nil
			}
		case 4: // binary on one or both sides
			c.new = append(append([]byte{}, c.new...), 0, byte(k), '\n')
			if k%24 == 4 {
				c.old = append([]byte("\x00bin"), c.old...)
			}
		case 5: // mode change, with or without a content change
			newMode = 0o100755
			if k%24 == 5 {
				c.new = c.old
			}
		case 6: // rename with a change
			newPath = "renamed/" + name
		case 7: // creation of an empty file
			oldPath, c.hasOld, c.old, c.new = "", false, nil, nil
		case 8: // the whole file rewritten
			c.new = genText(rng, 60, vocab, style)
		}
		fd := Compute(oldPath, newPath, c.old, c.new)
		fd.OldMode, fd.NewMode = oldMode, newMode
		if !c.hasOld {
			fd.OldMode = 0
		}
		if !c.hasNew {
			fd.NewMode = 0
		}
		c.fd = fd
		if Unified(fd) == "" {
			continue // nothing changed
		}
		if c.hasOld {
			writeFile(t, filepath.Join(work, oldPath), c.old, oldMode)
		}
		if fd.Binary && c.hasNew && fd.bin == nil {
			p := filepath.Join(blobs, fmt.Sprintf("b%d", k))
			writeFile(t, p, c.new, 0o100644)
			blobFiles = append(blobFiles, p)
		}
		cases = append(cases, c)
	}
	// A binary file too large for a literal patch: "Binary files differ"
	// with full ids, and the new blob in git's object store.
	{
		big := make([]byte, maxLiteral/2+1)
		for i := range big {
			big[i] = byte(rng.UintN(256))
		}
		c := applyCase{hasOld: true, hasNew: true, old: big, new: append(slices.Clone(big[:len(big)/2]), 1, 2, 3)}
		c.new = append(c.new, big...)
		c.fd = Compute("large.bin", "large.bin", c.old, c.new)
		c.fd.OldMode, c.fd.NewMode = 0o100644, 0o100644
		if c.fd.bin != nil || !strings.Contains(Unified(c.fd), "Binary files a/large.bin and b/large.bin differ") {
			t.Fatalf("a %d-byte binary diff should not be written out:\n%.300s", len(c.old)+len(c.new), Unified(c.fd))
		}
		writeFile(t, filepath.Join(work, "large.bin"), c.old, 0o100644)
		for i, data := range [][]byte{c.new, c.old} { // the old one for git apply -R
			p := filepath.Join(blobs, fmt.Sprintf("large%d", i))
			writeFile(t, p, data, 0o100644)
			blobFiles = append(blobFiles, p)
		}
		cases = append(cases, c)
	}
	binaries := 0
	for _, c := range cases {
		if c.fd.bin != nil {
			binaries++
		}
	}
	if binaries < 20 {
		t.Fatalf("only %d binary diffs written out as literals", binaries)
	}
	// Only the large binary's new blob is in git's object store: the other
	// binary diffs must apply from their literal patches alone.
	git(t, work, nil, append([]string{"hash-object", "-w", "--"}, blobFiles...)...)

	var sb strings.Builder
	for _, c := range cases {
		WriteUnifiedBinary(&sb, c.fd)
		if plain := Unified(c.fd); c.fd.bin != nil && (strings.Contains(plain, "GIT binary patch") || !strings.Contains(plain, "Binary files ")) {
			t.Fatalf("Unified should not write binary content:\n%s", plain)
		}
	}
	patch := sb.String()
	if err := os.WriteFile(filepath.Join(dir, "all.patch"), []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, work, nil, "apply", "--check", "--whitespace=nowarn", "../all.patch")
	git(t, work, nil, "apply", "--whitespace=nowarn", "../all.patch")

	for i, c := range cases {
		fd := c.fd
		if c.hasNew {
			p := filepath.Join(work, fd.NewPath)
			got, err := os.ReadFile(p)
			if err != nil || !bytes.Equal(got, c.new) {
				t.Errorf("case %d %q: git apply gave %q, %v; want %q\npatch:\n%s", i, fd.NewPath, got, err, c.new, Unified(fd))
				continue
			}
			st, _ := os.Stat(p)
			if exec := st.Mode()&0o100 != 0; exec != (fd.NewMode == 0o100755) {
				t.Errorf("case %d %q: executable=%v, want mode %o", i, fd.NewPath, exec, fd.NewMode)
			}
		}
		if c.hasOld && (!c.hasNew || fd.OldPath != fd.NewPath) {
			if _, err := os.Stat(filepath.Join(work, fd.OldPath)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("case %d: %q should be gone: %v", i, fd.OldPath, err)
			}
		}
		if !fd.Binary {
			got, err := Apply(c.old, fd.Hunks)
			if err != nil || !bytes.Equal(got, c.new) {
				t.Errorf("case %d: Apply = %q, %v; want %q", i, got, err, c.new)
			}
		}
	}

	// Reversed, the patch gives back every old file (binary ones from the
	// reverse literals).
	git(t, work, nil, "apply", "-R", "--whitespace=nowarn", "../all.patch")
	for i, c := range cases {
		if !c.hasOld {
			continue
		}
		if got, err := os.ReadFile(filepath.Join(work, c.fd.OldPath)); err != nil || !bytes.Equal(got, c.old) {
			t.Errorf("case %d %q: git apply -R gave %.80q, %v; want %.80q", i, c.fd.OldPath, got, err, c.old)
		}
	}

	parsed, err := Parse(patch)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(parsed) != len(cases) {
		t.Fatalf("Parse found %d files, want %d", len(parsed), len(cases))
	}
	for i, c := range cases {
		want := *c.fd
		want.bin = nil // Parse skips the payload of binary patches
		if !want.Binary {
			want.OldOID, want.NewOID = "", ""
		}
		if want.OldPath == "" {
			want.OldMode = 0
		}
		if want.NewPath == "" {
			want.NewMode = 0
		}
		got := *parsed[i]
		if want.OldMode == want.NewMode && !want.Binary {
			// Without a mode change a text diff names no mode.
			want.OldMode, want.NewMode = got.OldMode, got.NewMode
		}
		if !reflect.DeepEqual(normHunks(got), normHunks(want)) {
			t.Errorf("case %d: Parse gave\n%#v\nwant\n%#v", i, got, want)
		}
	}
}

func normHunks(fd FileDiff) FileDiff {
	if len(fd.Hunks) == 0 {
		fd.Hunks = nil
	}
	return fd
}

func caseName(k int) string {
	switch k % 10 {
	case 3:
		return fmt.Sprintf("dir with space/f %d.txt", k)
	case 6:
		return fmt.Sprintf("unicodé/naïve-%d.txt", k)
	case 9:
		return fmt.Sprintf("odd\tname \"%d\".txt", k)
	}
	return fmt.Sprintf("src/f%03d.txt", k)
}

func writeFile(t *testing.T, path string, data []byte, mode uint32) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	perm := os.FileMode(0o644)
	if mode == 0o100755 {
		perm = 0o755
	}
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}
