package tools

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/workspace"
)

// linkTree is a workspace beside a folder "outside" with a link of each
// kind: to a file, to a directory, dangling, and to a file outside.
type linkTree struct {
	ws      *workspace.Workspace
	env     *Env
	root    string
	outside string
	before  map[string]string // outside's files, to check nothing changed there
}

func newLinkTree(t *testing.T) *linkTree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	writeFiles(t, root, map[string]string{
		"a.txt":      "a\n",
		"b.txt":      "b\n",
		"conf.json":  "{\n  \"v\": 1\n}\n",
		"d/inner.go": "package d\n",
		"d/lb":       "", // replaced by a link below
		"e/keep":     "",
	})
	writeFiles(t, outside, map[string]string{"secret": "secret\n"})
	if err := os.Remove(filepath.Join(root, "d", "lb")); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"la":    "a.txt",
		"lj":    "conf.json",
		"ld":    "d",
		"lx":    "missing.txt",
		"lo":    "../outside/secret",
		"d/lb":  "../b.txt",
		"lloop": "lloop",
	} {
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.Open(root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return &linkTree{ws: ws, env: &Env{WS: ws, RunID: "r", StepID: "s"}, root: root, outside: outside, before: snapshotDir(t, outside)}
}

// run runs a tool as a plan step with review "none" does: Run, then Apply
// of the whole change set through the default disk writer.
func (lt *linkTree) run(t *testing.T, name string, args any) (*Result, error) {
	t.Helper()
	res, err := call(t, lt.env, name, args)
	if err != nil {
		return nil, err
	}
	ar, err := lt.ws.Apply(context.Background(), res.Changes, nil, nil)
	if err != nil {
		t.Fatalf("%s: Apply: %v", name, err)
	}
	if len(ar.Conflicts) > 0 {
		t.Fatalf("%s: Apply conflicts: %v", name, ar.Conflicts[0])
	}
	return res, nil
}

func (lt *linkTree) linkText(t *testing.T, rel string) string {
	t.Helper()
	target, err := os.Readlink(filepath.Join(lt.root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("%s is not a link any more: %v", rel, err)
	}
	return target
}

func (lt *linkTree) gone(t *testing.T, rel string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(lt.root, filepath.FromSlash(rel))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s still exists (%v)", rel, err)
	}
}

// intact checks that every link target and everything outside is as it was.
func (lt *linkTree) intact(t *testing.T) {
	t.Helper()
	for rel, want := range map[string]string{"a.txt": "a\n", "b.txt": "b\n", "conf.json": "{\n  \"v\": 1\n}\n", "d/inner.go": "package d\n"} {
		if got := readDisk(t, lt.root, rel); got != want {
			t.Errorf("link target %s = %q; want %q untouched", rel, got, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(lt.root, "missing.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a dangling link's target was created: %v", err)
	}
	assertUnchanged(t, lt.outside, lt.before)
}

// onlyChange returns the one change of a result's change set.
func onlyChange(t *testing.T, res *Result) *workspace.FileChange {
	t.Helper()
	if res.Changes == nil || len(res.Changes.Files) != 1 {
		t.Fatalf("change set %+v; want exactly one file", res.Changes)
	}
	return res.Changes.Files[0]
}

func TestDeleteFileDeletesTheLink(t *testing.T) {
	for _, c := range []struct{ link, target string }{
		{"la", "a.txt"}, {"ld", "d"}, {"lx", "missing.txt"}, {"lo", "../outside/secret"}, {"d/lb", "../b.txt"}, {"lloop", "lloop"},
	} {
		t.Run(c.link, func(t *testing.T) {
			lt := newLinkTree(t)
			res, err := lt.run(t, "delete_file", DeleteFileArgs{Path: c.link})
			if err != nil {
				t.Fatal(err)
			}
			fc := onlyChange(t, res)
			if fc.Path != c.link || fc.Op != workspace.OpDelete || fc.Mode&fs.ModeSymlink == 0 || string(fc.Old) != c.target {
				t.Errorf("change = %s %s mode %v old %q; want delete of the link %s (to %s)", fc.Op, fc.Path, fc.Mode, fc.Old, c.link, c.target)
			}
			if fc.Diff == nil || fc.Diff.OldMode != 0o120000 {
				t.Errorf("diff of the delete does not say it is a link: %+v", fc.Diff)
			}
			sum := output[ChangeSummary](t, res)
			if !strings.Contains(sum.Summary, "delete symbolic link "+c.link+" (to "+c.target+")") || sum.Files[0].Link != c.target {
				t.Errorf("summary %q / %+v does not say the link is deleted", sum.Summary, sum.Files[0])
			}
			lt.gone(t, c.link)
			lt.intact(t)
		})
	}
}

func TestMoveFileMovesTheLink(t *testing.T) {
	for _, c := range []struct{ from, to, target string }{
		{"la", "la2", "a.txt"}, {"ld", "ld2", "d"}, {"lx", "lx2", "missing.txt"}, {"lo", "lo2", "../outside/secret"},
		// The case: d/lb -> ../b.txt, moved where its text still
		// leads to b.txt.
		{"d/lb", "e/lb", "../b.txt"},
	} {
		t.Run(c.from, func(t *testing.T) {
			lt := newLinkTree(t)
			res, err := lt.run(t, "move_file", MoveFileArgs{From: c.from, To: c.to})
			if err != nil {
				t.Fatal(err)
			}
			fc := onlyChange(t, res)
			if fc.Op != workspace.OpMove || fc.OldPath != c.from || fc.Path != c.to || fc.Mode&fs.ModeSymlink == 0 {
				t.Errorf("change = %s %s -> %s mode %v; want a move of the link", fc.Op, fc.OldPath, fc.Path, fc.Mode)
			}
			if sum := output[ChangeSummary](t, res); !strings.Contains(sum.Summary, "move symbolic link "+c.from+" -> "+c.to) {
				t.Errorf("summary %q does not say the link moves", sum.Summary)
			}
			lt.gone(t, c.from)
			if got := lt.linkText(t, c.to); got != c.target {
				t.Errorf("moved link points to %q; want its text %q kept", got, c.target)
			}
			lt.intact(t)
		})
	}
	t.Run("would-leave", func(t *testing.T) {
		lt := newLinkTree(t)
		_, err := lt.run(t, "move_file", MoveFileArgs{From: "d/lb", To: "lb"})
		te := wantCode(t, err, CodeSymlink)
		if !strings.Contains(te.Message, "d/lb") || !strings.Contains(te.Message, "../b.txt") {
			t.Errorf("message %q does not name the link and its target", te.Message)
		}
		if lt.linkText(t, "d/lb") != "../b.txt" {
			t.Error("refused move changed the link")
		}
		lt.intact(t)
	})
	t.Run("onto-a-link", func(t *testing.T) {
		lt := newLinkTree(t)
		_, err := lt.run(t, "move_file", MoveFileArgs{From: "b.txt", To: "lx"})
		wantCode(t, err, CodeExists)
		lt.intact(t)
	})
}

func TestWriteFileReplacesTheLink(t *testing.T) {
	for _, c := range []struct{ link, target string }{
		{"la", "a.txt"}, {"ld", "d"}, {"lx", "missing.txt"}, {"lo", "../outside/secret"},
	} {
		t.Run(c.link, func(t *testing.T) {
			lt := newLinkTree(t)
			res, err := lt.run(t, "write_file", WriteFileArgs{Path: c.link, Content: "now a file\n"})
			if err != nil {
				t.Fatal(err)
			}
			fc := onlyChange(t, res)
			if fc.Path != c.link || fc.Op != workspace.OpModify || string(fc.Old) != c.target || fc.Diff == nil ||
				fc.Diff.OldMode != 0o120000 || fc.Diff.NewMode != 0o100644 || !fc.WholeFile() {
				t.Errorf("change = %s %s old %q diff %+v; want the link %s replaced by a file, as a whole", fc.Op, fc.Path, fc.Old, fc.Diff, c.link)
			}
			if sum := output[ChangeSummary](t, res); !strings.Contains(sum.Summary, "replace symbolic link "+c.link) {
				t.Errorf("summary %q does not say the link is replaced", sum.Summary)
			}
			fi, err := os.Lstat(filepath.Join(lt.root, c.link))
			if err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("%s after write_file: %v, %v; want a regular file", c.link, fi, err)
			}
			if got := readDisk(t, lt.root, c.link); got != "now a file\n" {
				t.Errorf("%s = %q", c.link, got)
			}
			lt.intact(t)
		})
	}
}

// edit_file, json_patch and apply_patch edit a file's content: through a
// link to a regular file inside the workspace they edit that file (and the
// change names it); any other link is refused, naming the link and target.
func TestEditToolsOnLinks(t *testing.T) {
	type editCase struct {
		tool string
		args func(path string) any
	}
	edits := []editCase{
		{"edit_file", func(p string) any {
			return EditFileArgs{Path: p, Edits: []Edit{{OldText: "a\n", NewText: "A\n"}}}
		}},
		{"json_patch", func(p string) any {
			return JSONPatchArgs{Path: p, Ops: []JSONPatchOp{{Op: "replace", Path: "/v", Value: mustJSON(t, 2)}}}
		}},
		{"apply_patch", func(p string) any {
			return ApplyPatchArgs{Patch: "--- a/" + p + "\n+++ b/" + p + "\n@@ -1 +1 @@\n-a\n+A\n"}
		}},
	}
	for _, e := range edits {
		t.Run(e.tool, func(t *testing.T) {
			lt := newLinkTree(t)
			link, target, want := "la", "a.txt", "A\n"
			if e.tool == "json_patch" {
				link, target, want = "lj", "conf.json", "{\n  \"v\": 2\n}\n"
			}
			res, err := lt.run(t, e.tool, e.args(link))
			if err != nil {
				t.Fatal(err)
			}
			if fc := onlyChange(t, res); fc.Path != target || fc.Op != workspace.OpModify {
				t.Errorf("change = %s %s; want a modify of the link's target %s", fc.Op, fc.Path, target)
			}
			if sum := output[ChangeSummary](t, res); !strings.Contains(sum.Note, link) || !strings.Contains(sum.Note, target) {
				t.Errorf("note %q does not say the link was followed", sum.Note)
			}
			if got := readDisk(t, lt.root, target); got != want {
				t.Errorf("%s = %q; want %q", target, got, want)
			}
			if lt.linkText(t, link) != target {
				t.Error("the link changed")
			}
			for _, c := range []struct{ link, code string }{
				{"ld", CodeIsDir}, {"lx", CodeSymlink}, {"lo", CodeSymlink}, {"lloop", CodeSymlink},
			} {
				_, err := lt.run(t, e.tool, e.args(c.link))
				te := wantCode(t, err, c.code)
				if !strings.Contains(te.Message, c.link) {
					t.Errorf("%s on %s: message %q does not name the link", e.tool, c.link, te.Message)
				}
				if c.link == "lx" && !strings.Contains(te.Message, "missing.txt") {
					t.Errorf("message %q does not name the dangling link's target", te.Message)
				}
			}
			assertUnchanged(t, lt.outside, lt.before)
		})
	}
	t.Run("apply_patch-delete-link", func(t *testing.T) {
		lt := newLinkTree(t)
		_, err := lt.run(t, "apply_patch", ApplyPatchArgs{Patch: "--- a/la\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n"})
		wantCode(t, err, CodeSymlink)
		lt.linkText(t, "la")
		lt.intact(t)
	})
}
