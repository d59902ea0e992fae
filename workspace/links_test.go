package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/diff"
)

func symlink(t *testing.T, root, name, target string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(name))); err != nil {
		t.Fatal(err)
	}
}

func readLink(t *testing.T, root, name string) string {
	t.Helper()
	target, err := os.Readlink(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		t.Fatalf("%s is not a link: %v", name, err)
	}
	return target
}

// recordingWriter is a FileWriter (like the editor's) that records what it
// is asked to do and does it on disk.
type recordingWriter struct {
	w     *Workspace
	calls []string
}

func (r *recordingWriter) WriteFile(ctx context.Context, rel string, old, new []byte, mode fs.FileMode) error {
	r.calls = append(r.calls, "write "+rel)
	return r.w.WriteFile(ctx, rel, new, mode)
}

func (r *recordingWriter) RemoveFile(ctx context.Context, rel string) error {
	r.calls = append(r.calls, "remove "+rel)
	return r.w.Remove(ctx, rel)
}

// A change to a link is applied on disk to the link itself, never through
// the writer (which would write through the link), and Revert undoes it.
func TestLinkChangesApplyAndRevert(t *testing.T) {
	ctx := context.Background()
	w, root := newWS(t, map[string]string{"a.txt": "a\n", "d/x": "x\n"})
	symlink(t, root, "la", "a.txt")
	symlink(t, root, "ld", "d")
	symlink(t, root, "lx", "missing")

	b := w.Propose(ctx)
	if err := b.Delete("la"); err != nil {
		t.Fatal(err)
	}
	if err := b.Move("ld", "sub/ld"); err != nil {
		t.Fatal(err)
	}
	if err := b.Write("lx", []byte("file now\n")); err != nil {
		t.Fatal(err)
	}
	cs := b.Build()
	rw := &recordingWriter{w: w}
	ar, err := w.Apply(ctx, cs, nil, rw)
	if err != nil || len(ar.Conflicts) > 0 || len(ar.Applied) != 3 {
		t.Fatalf("Apply = %+v, %v", ar, err)
	}
	if len(rw.calls) != 0 {
		t.Errorf("link changes went through the writer: %v", rw.calls)
	}
	if _, err := os.Lstat(filepath.Join(root, "la")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("la not deleted")
	}
	if readLink(t, root, "sub/ld") != "d" {
		t.Error("moved link lost its text")
	}
	if fi, err := os.Lstat(filepath.Join(root, "lx")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("lx not replaced by a file: %v %v", fi, err)
	}
	if got := readDiskFile(t, filepath.Join(root, "a.txt")); got != "a\n" {
		t.Errorf("a.txt = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(root, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("the dangling link's target was created")
	}

	for _, fc := range cs.Files {
		res, err := w.Revert(ctx, fc, nil, rw)
		if err != nil || len(res.Conflicts) > 0 {
			t.Fatalf("Revert(%s %s) = %+v, %v", fc.Op, fc.Path, res, err)
		}
	}
	for name, target := range map[string]string{"la": "a.txt", "ld": "d", "lx": "missing"} {
		if got := readLink(t, root, name); got != target {
			t.Errorf("after revert %s -> %q; want %q", name, got, target)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "sub", "ld")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("sub/ld still there after the move was reverted")
	}
}

// Apply never writes through a link: a file that became a link since its
// change was computed is a conflict, and a link that was retargeted is not
// deleted.
func TestApplyNeverWritesThroughALink(t *testing.T) {
	ctx := context.Background()
	w, root := newWS(t, map[string]string{"f.txt": "old\n", "other.txt": "other\n", "g.txt": "g\n"})
	symlink(t, root, "lg", "g.txt")

	b := w.Propose(ctx)
	if err := b.Write("f.txt", []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete("lg"); err != nil {
		t.Fatal(err)
	}
	cs := b.Build()
	// Meanwhile f.txt becomes a link to other.txt and lg is retargeted.
	if err := os.Remove(filepath.Join(root, "f.txt")); err != nil {
		t.Fatal(err)
	}
	symlink(t, root, "f.txt", "other.txt")
	if err := os.Remove(filepath.Join(root, "lg")); err != nil {
		t.Fatal(err)
	}
	symlink(t, root, "lg", "other.txt")

	for _, writer := range []FileWriter{nil, &recordingWriter{w: w}} {
		ar, err := w.Apply(ctx, cs, nil, writer)
		if err != nil {
			t.Fatal(err)
		}
		if len(ar.Conflicts) != 2 || len(ar.Applied) != 0 {
			t.Fatalf("Apply = applied %v, conflicts %v; want both changes in conflict", ar.Applied, ar.Conflicts)
		}
		for _, c := range ar.Conflicts {
			if !strings.Contains(c.Reason, "link") {
				t.Errorf("conflict %q does not say a link is in the way", c.Reason)
			}
		}
		if got := readDiskFile(t, filepath.Join(root, "other.txt")); got != "other\n" {
			t.Fatalf("other.txt = %q: written through a link", got)
		}
		if readLink(t, root, "f.txt") != "other.txt" || readLink(t, root, "lg") != "other.txt" {
			t.Fatal("a link was changed")
		}
	}
}

// A change to a link reviewed hunk by hunk (a front end that rebuilt it
// without modes) is applied whole or not at all.
func TestLinkReplacementIsWholeOrNothing(t *testing.T) {
	ctx := context.Background()
	w, root := newWS(t, nil)
	// A link's text may hold newlines: two far-apart edits give two hunks.
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf("line%d", i))
	}
	target := strings.Join(lines, "\n")
	symlink(t, root, "la", target)
	lines[1], lines[18] = "changed1", "changed18"
	b := w.Propose(ctx)
	if err := b.Write("la", []byte(strings.Join(lines, "\n"))); err != nil {
		t.Fatal(err)
	}
	fc := b.Build().Files[0]
	if !fc.WholeFile() || !fc.IsLink() {
		t.Fatalf("replacing a link is not whole-file: %+v", fc)
	}
	// Rebuilt as the server rebuilds change sets: no modes in the diff.
	rebuilt := *fc
	d := *fc.Diff
	d.OldMode, d.NewMode = 0, 0
	rebuilt.Diff = &d
	if len(d.Hunks) < 2 {
		t.Fatalf("want two hunks, got %+v", d.Hunks)
	}
	cs := &ChangeSet{ID: "x", Files: []*FileChange{&rebuilt}}
	ar, err := w.Apply(ctx, cs, func(_ *FileChange, h diff.Hunk) bool { return h.ID == d.Hunks[0].ID }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ar.Conflicts) != 1 || len(ar.Applied) != 0 {
		t.Errorf("part of a link replacement accepted: %+v", ar)
	}
	if readLink(t, root, "la") != target {
		t.Fatal("the link changed on a partial or empty acceptance")
	}
	ar, err = w.Apply(ctx, cs, func(*FileChange, diff.Hunk) bool { return true }, nil)
	if err != nil || len(ar.Applied) != 1 {
		t.Fatalf("Apply all = %+v, %v", ar, err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "la")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("la = %v, %v; want a regular file", fi, err)
	}
}

// Temporary names are short and fixed: a file whose own name is 255 bytes
// (the usual limit) can be written, created and replaced.
func TestLongFileNames(t *testing.T) {
	ctx := context.Background()
	w, root := newWS(t, nil)
	name := strings.Repeat("n", 251) + ".txt"
	if len(name) != 255 {
		t.Fatal(len(name))
	}
	if err := w.WriteFile(ctx, "deep/"+name, []byte("one\n"), 0); err != nil {
		t.Fatalf("WriteFile of a 255-byte name: %v", err)
	}
	b := w.Propose(ctx)
	if err := b.Write("deep/"+name, []byte("two\n")); err != nil {
		t.Fatal(err)
	}
	other := strings.Repeat("m", 255)
	if err := b.Write(other, []byte("three\n")); err != nil {
		t.Fatal(err)
	}
	ar, err := w.Apply(ctx, b.Build(), nil, nil)
	if err != nil || len(ar.Applied) != 2 {
		t.Fatalf("Apply with 255-byte names = %+v, %v", ar, err)
	}
	if got := readDiskFile(t, filepath.Join(root, "deep", name)); got != "two\n" {
		t.Errorf("content = %q", got)
	}
	if tmpNameLen > 64 {
		t.Errorf("temporary names are %d bytes long", tmpNameLen)
	}
}
