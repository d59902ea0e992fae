package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/diff"
)

// numbered returns n lines "line 1\n".."line n\n", with the replacements
// given by 1-based line number.
func numbered(n int, repl map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if r, ok := repl[i]; ok {
			b.WriteString(r)
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func diskContent(t *testing.T, root, rel string) string {
	t.Helper()
	return readDiskFile(t, filepath.Join(root, filepath.FromSlash(rel)))
}

func mustBuild(t *testing.T, b *Builder) *ChangeSet {
	t.Helper()
	cs := b.Build()
	if cs == nil {
		t.Fatal("Build() = nil; want a change set")
	}
	return cs
}

func fileOf(t *testing.T, cs *ChangeSet, path string) *FileChange {
	t.Helper()
	for _, fc := range cs.Files {
		if fc.Path == path {
			return fc
		}
	}
	t.Fatalf("change set has no file %s (files: %v)", path, paths(cs))
	return nil
}

func paths(cs *ChangeSet) []string {
	var ps []string
	for _, fc := range cs.Files {
		ps = append(ps, string(fc.Op)+":"+fc.Path)
	}
	return ps
}

func TestBuilderOperations(t *testing.T) {
	w, _ := newWS(t, map[string]string{
		"keep.txt": "keep\n", "edit.txt": "a\nb\nc\n", "gone.txt": "bye\n",
		"move.txt": "moving\n", "moveedit.txt": "m\n", "swap.txt": "s\n",
	})
	b := w.Propose(t.Context())
	// Write, then edit what was written: later operations see earlier ones.
	if err := b.Write("edit.txt", []byte("a\nB\nc\n")); err != nil {
		t.Fatal(err)
	}
	got, err := b.Read("edit.txt")
	if err != nil || string(got) != "a\nB\nc\n" {
		t.Fatalf("Read after Write = %q, %v", got, err)
	}
	if err := b.Write("edit.txt", bytes.Replace(got, []byte("c"), []byte("C"), 1)); err != nil {
		t.Fatal(err)
	}
	if err := b.Write("new/file.txt", []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete("gone.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Read("gone.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Read of a deleted file: %v", err)
	}
	if err := b.Delete("gone.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("second Delete: %v", err)
	}
	if err := b.Move("move.txt", "moved/there.txt"); err != nil {
		t.Fatal(err)
	}
	if err := b.Move("moveedit.txt", "me1.txt"); err != nil {
		t.Fatal(err)
	}
	if err := b.Move("me1.txt", "me2.txt"); err != nil { // a chain is one move
		t.Fatal(err)
	}
	if err := b.Write("me2.txt", []byte("m2\n")); err != nil {
		t.Fatal(err)
	}
	if err := b.Move("keep.txt", "swap.txt"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Move onto an existing file: %v; want ErrExist", err)
	}
	if err := b.Write("tmp.txt", []byte("t")); err != nil { // created then deleted: nothing
		t.Fatal(err)
	}
	if err := b.Delete("tmp.txt"); err != nil {
		t.Fatal(err)
	}
	if err := b.Write("keep.txt", []byte("keep\n")); err != nil { // same content: nothing
		t.Fatal(err)
	}
	if err := b.Write(".git/config", []byte("x")); !errors.Is(err, ErrGitDir) {
		t.Fatalf("Write into .git: %v", err)
	}
	if err := b.Write("../escape", []byte("x")); !errors.Is(err, ErrOutsideRoot) {
		t.Fatalf("Write outside: %v", err)
	}

	cs := mustBuild(t, b)
	want := []string{"delete:gone.txt", "modify:edit.txt", "move:me2.txt", "move:moved/there.txt", "create:new/file.txt"}
	got2 := paths(cs)
	slices.Sort(got2)
	slices.Sort(want)
	if !slices.Equal(got2, want) {
		t.Fatalf("files = %v; want %v", got2, want)
	}
	if len(cs.ID) != 26 {
		t.Errorf("change set id %q is not ULID-like", cs.ID)
	}

	edit := fileOf(t, cs, "edit.txt")
	if edit.BaseHash != Hash([]byte("a\nb\nc\n")) || string(edit.Old) != "a\nb\nc\n" || string(edit.New) != "a\nB\nC\n" {
		t.Errorf("edit.txt: base %s old %q new %q", edit.BaseHash, edit.Old, edit.New)
	}
	if edit.Diff == nil || len(edit.Diff.Hunks) == 0 {
		t.Fatal("edit.txt has no hunks")
	}
	if edit.Diff.OldMode != 0o100644 || edit.Diff.NewMode != 0o100644 {
		t.Errorf("edit.txt modes %o -> %o", edit.Diff.OldMode, edit.Diff.NewMode)
	}
	create := fileOf(t, cs, "new/file.txt")
	if create.BaseHash != "" || create.Old != nil || create.Diff.OldPath != "" || create.Diff.NewPath != "new/file.txt" {
		t.Errorf("create: %+v / %+v", create, create.Diff)
	}
	del := fileOf(t, cs, "gone.txt")
	if del.New != nil || del.BaseHash != Hash([]byte("bye\n")) || del.Diff.NewPath != "" {
		t.Errorf("delete: %+v", del)
	}
	mv := fileOf(t, cs, "moved/there.txt")
	if mv.OldPath != "move.txt" || string(mv.New) != "moving\n" || mv.BaseHash != Hash([]byte("moving\n")) {
		t.Errorf("move: %+v", mv)
	}
	if cs.File("edit.txt") != edit || cs.File("keep.txt") != nil {
		t.Error("ChangeSet.File does not find the files by path")
	}
	if c, _ := create.ContentWith([]string{""}); string(c) != "new\n" {
		t.Errorf("whole-file ContentWith(accepted) = %q", c)
	}
	if c, _ := del.ContentWith(nil); string(c) != "bye\n" {
		t.Errorf("whole-file ContentWith(none) = %q", c)
	}
	mv2 := fileOf(t, cs, "me2.txt")
	if mv2.OldPath != "moveedit.txt" || string(mv2.Old) != "m\n" || string(mv2.New) != "m2\n" {
		t.Errorf("move+edit: %+v", mv2)
	}
}

func TestBuilderMoveBackAndRecreate(t *testing.T) {
	w, _ := newWS(t, map[string]string{"a.txt": "a\n"})
	b := w.Propose(t.Context())
	if err := b.Move("a.txt", "b.txt"); err != nil {
		t.Fatal(err)
	}
	if err := b.Move("b.txt", "a.txt"); err != nil {
		t.Fatal(err)
	}
	if cs := b.Build(); cs != nil {
		t.Fatalf("moving a file and back changes nothing; got %v", paths(cs))
	}
	// Move, then a new file at the old name: a create of the destination
	// and a modify of the source.
	b = w.Propose(t.Context())
	if err := b.Move("a.txt", "b.txt"); err != nil {
		t.Fatal(err)
	}
	if err := b.Write("a.txt", []byte("fresh\n")); err != nil {
		t.Fatal(err)
	}
	cs := mustBuild(t, b)
	got := paths(cs)
	if !slices.Equal(got, []string{"modify:a.txt", "create:b.txt"}) {
		t.Fatalf("files = %v", got)
	}
}

func TestProposeAgainstOverlay(t *testing.T) {
	w, root := newWS(t, map[string]string{"f.txt": numbered(10, nil)})
	unsaved := numbered(10, map[int]string{1: "user's unsaved line\n"})
	if err := w.OpenOverlay("f.txt", []byte(unsaved), 1); err != nil {
		t.Fatal(err)
	}
	b := w.Propose(t.Context())
	cur, err := b.Read("f.txt")
	if err != nil || string(cur) != unsaved {
		t.Fatalf("Builder.Read = %q; want the overlay", cur)
	}
	proposed := numbered(10, map[int]string{1: "user's unsaved line\n", 9: "agent\n"})
	if err := b.Write("f.txt", []byte(proposed)); err != nil {
		t.Fatal(err)
	}
	cs := mustBuild(t, b)
	fc := fileOf(t, cs, "f.txt")
	if fc.BaseHash != Hash([]byte(unsaved)) {
		t.Fatal("BaseHash is not the overlay's hash")
	}
	res, err := w.Apply(t.Context(), cs, nil, nil)
	if err != nil || len(res.Conflicts) != 0 || !slices.Equal(res.Applied, []string{"f.txt"}) {
		t.Fatalf("Apply = %+v, %v", res, err)
	}
	if got := diskContent(t, root, "f.txt"); got != proposed {
		t.Fatalf("disk = %q; want the overlay with the change", got)
	}
}

func TestApplyKeepsModeAndPartialHunks(t *testing.T) {
	w, root := newWS(t, map[string]string{"run.sh": numbered(40, nil)})
	if err := os.Chmod(filepath.Join(root, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := w.Propose(t.Context())
	proposed := numbered(40, map[int]string{3: "three\n", 20: "twenty\n", 37: "thirty-seven\n"})
	if err := b.Write("run.sh", []byte(proposed)); err != nil {
		t.Fatal(err)
	}
	cs := mustBuild(t, b)
	fc := fileOf(t, cs, "run.sh")
	if fc.Mode != 0o755 || fc.Diff.NewMode != 0o100755 {
		t.Fatalf("mode = %v / %o; want 0755", fc.Mode, fc.Diff.NewMode)
	}
	if len(fc.Diff.Hunks) != 3 {
		t.Fatalf("%d hunks; want 3", len(fc.Diff.Hunks))
	}
	// Accept the first and the last hunk only.
	skip := fc.Diff.Hunks[1].ID
	res, err := w.Apply(t.Context(), cs, func(_ *FileChange, h diff.Hunk) bool { return h.ID != skip }, nil)
	if err != nil || len(res.Applied) != 1 {
		t.Fatalf("Apply = %+v, %v", res, err)
	}
	want := numbered(40, map[int]string{3: "three\n", 37: "thirty-seven\n"})
	if got := diskContent(t, root, "run.sh"); got != want {
		t.Fatalf("disk:\n%s\nwant:\n%s", got, want)
	}
	content, err := fc.ContentWith([]string{fc.Diff.Hunks[0].ID, fc.Diff.Hunks[2].ID})
	if err != nil || string(content) != want {
		t.Fatalf("ContentWith = %q, %v", content, err)
	}
	if _, err := fc.ContentWith([]string{"no-such-hunk"}); err == nil {
		t.Fatal("ContentWith(unknown id) succeeded")
	}
	fi, err := os.Stat(filepath.Join(root, "run.sh"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode after Apply = %v, %v; want 0755", fi.Mode(), err)
	}
	// The middle hunk applies later, on top of the first two (the file no
	// longer hashes to BaseHash: a clean three-way merge).
	res, err = w.Apply(t.Context(), cs, func(_ *FileChange, h diff.Hunk) bool { return h.ID == skip }, nil)
	if err != nil || len(res.Conflicts) != 0 {
		t.Fatalf("second Apply = %+v, %v", res, err)
	}
	if got := diskContent(t, root, "run.sh"); got != proposed {
		t.Fatalf("after the second Apply:\n%s\nwant:\n%s", got, proposed)
	}
	// Rejecting everything writes nothing.
	res, err = w.Apply(t.Context(), cs, func(*FileChange, diff.Hunk) bool { return false }, nil)
	if err != nil || len(res.Applied) != 0 || len(res.Conflicts) != 0 {
		t.Fatalf("Apply rejecting all = %+v, %v", res, err)
	}
}

func TestApplyConflictsAndRebase(t *testing.T) {
	base := numbered(40, nil)
	proposed := numbered(40, map[int]string{5: "agent five\n", 30: "agent thirty\n"})
	tests := []struct {
		name      string
		user      string // the file's content when Apply runs
		overlay   bool   // the user's edit is an unsaved buffer, not the disk
		conflicts int
		want      string // disk afterwards
	}{
		{
			name: "unchanged",
			user: base, want: proposed,
		},
		{
			name: "user edited far away: clean rebase",
			user: numbered(40, map[int]string{18: "user eighteen\n"}),
			want: numbered(40, map[int]string{5: "agent five\n", 18: "user eighteen\n", 30: "agent thirty\n"}),
		},
		{
			name: "user edited the same line: conflict, untouched",
			user: numbered(40, map[int]string{5: "user five\n"}), conflicts: 1,
			want: numbered(40, map[int]string{5: "user five\n"}),
		},
		{
			name: "user already made the same change",
			user: proposed, want: proposed,
		},
		{
			name: "unsaved buffer edited far away: merged with the buffer",
			user: numbered(40, map[int]string{18: "buffer eighteen\n"}), overlay: true,
			want: numbered(40, map[int]string{5: "agent five\n", 18: "buffer eighteen\n", 30: "agent thirty\n"}),
		},
		{
			name: "unsaved buffer edited the same line: conflict",
			user: numbered(40, map[int]string{30: "buffer thirty\n"}), overlay: true, conflicts: 1,
			want: base, // disk untouched
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, root := newWS(t, map[string]string{"f.txt": base})
			b := w.Propose(t.Context())
			if err := b.Write("f.txt", []byte(proposed)); err != nil {
				t.Fatal(err)
			}
			cs := mustBuild(t, b)
			if tt.overlay {
				if err := w.OpenOverlay("f.txt", []byte(tt.user), 1); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(tt.user), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := w.Apply(t.Context(), cs, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Conflicts) != tt.conflicts {
				t.Fatalf("conflicts = %v; want %d", res.Conflicts, tt.conflicts)
			}
			if tt.conflicts > 0 {
				c := res.Conflicts[0]
				if c.Path != "f.txt" || len(c.Regions) == 0 || !strings.Contains(c.Error(), "f.txt") {
					t.Errorf("conflict = %+v", c)
				}
				if len(res.Applied) != 0 {
					t.Errorf("applied %v despite the conflict", res.Applied)
				}
			}
			if got := diskContent(t, root, "f.txt"); got != tt.want {
				t.Fatalf("disk:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestApplyWholeFileOps(t *testing.T) {
	type setup func(t *testing.T, root string)
	write := func(rel, content string) setup {
		return func(t *testing.T, root string) {
			p := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	remove := func(rel string) setup {
		return func(t *testing.T, root string) {
			if err := os.Remove(filepath.Join(root, rel)); err != nil {
				t.Fatal(err)
			}
		}
	}
	bin := "\x00\x01binary\x00"
	tests := []struct {
		name     string
		build    func(b *Builder) error
		meantime setup
		conflict bool
		files    map[string]string // expected disk content; "" = must not exist
	}{
		{"create", func(b *Builder) error { return b.Write("new.txt", []byte("n\n")) }, nil, false,
			map[string]string{"new.txt": "n\n"}},
		{"create, same content appeared", func(b *Builder) error { return b.Write("new.txt", []byte("n\n")) },
			write("new.txt", "n\n"), false, map[string]string{"new.txt": "n\n"}},
		{"create, other content appeared", func(b *Builder) error { return b.Write("new.txt", []byte("n\n")) },
			write("new.txt", "user\n"), true, map[string]string{"new.txt": "user\n"}},
		{"delete", func(b *Builder) error { return b.Delete("old.txt") }, nil, false,
			map[string]string{"old.txt": ""}},
		{"delete, file changed", func(b *Builder) error { return b.Delete("old.txt") },
			write("old.txt", "edited\n"), true, map[string]string{"old.txt": "edited\n"}},
		{"delete, already gone", func(b *Builder) error { return b.Delete("old.txt") },
			remove("old.txt"), false, map[string]string{"old.txt": ""}},
		{"move", func(b *Builder) error { return b.Move("old.txt", "sub/moved.txt") }, nil, false,
			map[string]string{"old.txt": "", "sub/moved.txt": "old\n"}},
		{"move with edit", func(b *Builder) error {
			if err := b.Move("old.txt", "moved.txt"); err != nil {
				return err
			}
			return b.Write("moved.txt", []byte("old and new\n"))
		}, nil, false, map[string]string{"old.txt": "", "moved.txt": "old and new\n"}},
		{"move, source changed", func(b *Builder) error { return b.Move("old.txt", "moved.txt") },
			write("old.txt", "edited\n"), true, map[string]string{"old.txt": "edited\n", "moved.txt": ""}},
		{"move, destination appeared", func(b *Builder) error { return b.Move("old.txt", "moved.txt") },
			write("moved.txt", "user\n"), true, map[string]string{"old.txt": "old\n", "moved.txt": "user\n"}},
		{"binary modify", func(b *Builder) error { return b.Write("blob.bin", []byte(bin+"2")) }, nil, false,
			map[string]string{"blob.bin": bin + "2"}},
		{"binary modify, changed meantime", func(b *Builder) error { return b.Write("blob.bin", []byte(bin+"2")) },
			write("blob.bin", bin+"user"), true, map[string]string{"blob.bin": bin + "user"}},
		{"delete then directory of that name", func(b *Builder) error {
			if err := b.Delete("old.txt"); err != nil {
				return err
			}
			return b.Write("old.txt/inner.txt", []byte("i\n"))
		}, nil, false, map[string]string{"old.txt/inner.txt": "i\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, root := newWS(t, map[string]string{"old.txt": "old\n", "blob.bin": bin})
			b := w.Propose(t.Context())
			if err := tt.build(b); err != nil {
				t.Fatal(err)
			}
			cs := mustBuild(t, b)
			for _, fc := range cs.Files {
				if !fc.WholeFile() {
					t.Errorf("%s %s is not whole-file", fc.Op, fc.Path)
				}
			}
			if tt.meantime != nil {
				tt.meantime(t, root)
			}
			var asked []string
			res, err := w.Apply(t.Context(), cs, func(fc *FileChange, h diff.Hunk) bool {
				if h.ID != "" || h.Lines != nil {
					t.Errorf("whole-file change asked with a non-zero hunk %+v", h)
				}
				asked = append(asked, fc.Path)
				return true
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(asked) != len(cs.Files) {
				t.Errorf("accept asked for %v; want each of %v once", asked, paths(cs))
			}
			if got := len(res.Conflicts) > 0; got != tt.conflict {
				t.Fatalf("conflicts = %v; want conflict=%v", res.Conflicts, tt.conflict)
			}
			for rel, want := range tt.files {
				data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
				if want == "" {
					if !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("%s exists (%q); want it gone", rel, data)
					}
					continue
				}
				if err != nil || string(data) != want {
					t.Errorf("%s = %q, %v; want %q", rel, data, err, want)
				}
			}
		})
	}
}

// recorder is a FileWriter that records and performs writes and removals.
type recorder struct {
	w     *Workspace
	calls []string
}

func (r *recorder) WriteFile(ctx context.Context, rel string, old, new []byte, mode fs.FileMode) error {
	r.calls = append(r.calls, fmt.Sprintf("write %s %q->%q %v", rel, old, new, mode))
	return r.w.DiskWriter().WriteFile(ctx, rel, old, new, mode)
}

func (r *recorder) RemoveFile(ctx context.Context, rel string) error {
	r.calls = append(r.calls, "remove "+rel)
	return r.w.Remove(ctx, rel)
}

func TestApplyThroughWriter(t *testing.T) {
	w, root := newWS(t, map[string]string{"a.txt": numbered(10, nil), "b.txt": "b\n"})
	b := w.Propose(t.Context())
	if err := b.Write("a.txt", []byte(numbered(10, map[int]string{1: "A\n"}))); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete("b.txt"); err != nil {
		t.Fatal(err)
	}
	cs := mustBuild(t, b)
	// The user's buffer of a.txt has an unsaved edit on another line.
	user := numbered(10, map[int]string{8: "user\n"})
	if err := w.OpenOverlay("a.txt", []byte(user), 1); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{w: w}
	res, err := w.Apply(t.Context(), cs, nil, rec)
	if err != nil || len(res.Conflicts) != 0 {
		t.Fatalf("Apply = %+v, %v", res, err)
	}
	merged := numbered(10, map[int]string{1: "A\n", 8: "user\n"})
	want := []string{"remove b.txt", fmt.Sprintf("write a.txt %q->%q -rw-r--r--", user, merged)}
	if !slices.Equal(rec.calls, want) {
		t.Fatalf("writer calls:\n%q\nwant:\n%q", rec.calls, want)
	}
	if got := diskContent(t, root, "a.txt"); got != merged {
		t.Fatalf("a.txt = %q", got)
	}
}

func TestRevertAppliedHunks(t *testing.T) {
	base := numbered(40, nil)
	proposed := numbered(40, map[int]string{5: "agent five\n", 30: "agent thirty\n"})
	w, root := newWS(t, map[string]string{"f.txt": base})
	b := w.Propose(t.Context())
	if err := b.Write("f.txt", []byte(proposed)); err != nil {
		t.Fatal(err)
	}
	cs := mustBuild(t, b)
	fc := fileOf(t, cs, "f.txt")
	if _, err := w.Apply(t.Context(), cs, nil, nil); err != nil {
		t.Fatal(err)
	}
	// The user edits line 18, then reverts the first hunk.
	user := numbered(40, map[int]string{5: "agent five\n", 18: "user\n", 30: "agent thirty\n"})
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(user), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := w.Revert(t.Context(), fc, []string{fc.Diff.Hunks[0].ID}, nil)
	if err != nil || len(res.Conflicts) != 0 {
		t.Fatalf("Revert = %+v, %v", res, err)
	}
	want := numbered(40, map[int]string{18: "user\n", 30: "agent thirty\n"})
	if got := diskContent(t, root, "f.txt"); got != want {
		t.Fatalf("after revert:\n%s\nwant:\n%s", got, want)
	}
	// Reverting the second hunk after the user rewrote its line conflicts.
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(numbered(40, map[int]string{30: "rewritten\n"})), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = w.Revert(t.Context(), fc, []string{fc.Diff.Hunks[1].ID}, nil)
	if err != nil || len(res.Conflicts) != 1 {
		t.Fatalf("Revert of an edited hunk = %+v, %v; want a conflict", res, err)
	}
	// Reverting a create removes the file if it is unchanged.
	b = w.Propose(t.Context())
	if err := b.Write("c.txt", []byte("c\n")); err != nil {
		t.Fatal(err)
	}
	cs = mustBuild(t, b)
	if _, err := w.Apply(t.Context(), cs, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Revert(t.Context(), cs.Files[0], nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "c.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("reverted create still exists")
	}
}

func TestApplyRefusesBadPaths(t *testing.T) {
	w, _ := newWS(t, map[string]string{"f": "x"})
	for _, p := range []string{"../evil", ".git/config", "/etc/passwd"} {
		cs := &ChangeSet{ID: NewID(), Files: []*FileChange{{Path: p, Op: OpCreate, New: []byte("x"), Mode: 0o644}}}
		cs.Files[0].finish(0)
		res, err := w.Apply(t.Context(), cs, nil, nil)
		if err == nil || len(res.Applied) != 0 {
			t.Errorf("Apply of %s = %+v, %v; want an error", p, res, err)
		}
	}
}

func TestNewIDUnique(t *testing.T) {
	seen := make(map[string]bool)
	prev := ""
	for range 10000 {
		id := NewID()
		if len(id) != 26 || seen[id] {
			t.Fatalf("NewID() = %q (len %d, seen %v)", id, len(id), seen[id])
		}
		if id[:10] < prev[:min(10, len(prev))] {
			t.Fatalf("ids not time-ordered: %s after %s", id, prev)
		}
		seen[id] = true
		prev = id
	}
}
