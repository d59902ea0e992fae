package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// An editor that opens a file the agent is about to create (from a
// quickfix list, a hunk jump) holds an empty buffer of a file that is not on
// disk. That is the editor showing the file, not the user creating it: the
// proposed create is still a create, and accepting it writes it, whether
// the buffer was opened before the change was computed or after.
func TestCreateWithEmptyBufferOpen(t *testing.T) {
	for _, openFirst := range []bool{false, true} {
		name := "opened after the change"
		if openFirst {
			name = "opened before the change"
		}
		t.Run(name, func(t *testing.T) {
			w, root := newWS(t, map[string]string{"a.txt": "a\n"})
			if openFirst {
				if err := w.OpenOverlay("new.go", nil, 1); err != nil {
					t.Fatal(err)
				}
			}
			b := w.Propose(t.Context())
			if err := b.Write("new.go", []byte("package x\n")); err != nil {
				t.Fatal(err)
			}
			cs := mustBuild(t, b)
			if fc := fileOf(t, cs, "new.go"); fc.Op != OpCreate {
				t.Fatalf("op = %s; want create (an empty buffer of a missing file is not a file)", fc.Op)
			}
			if !openFirst {
				if err := w.OpenOverlay("new.go", nil, 1); err != nil {
					t.Fatal(err)
				}
			}
			rec := &recorder{w: w}
			res, err := w.Apply(t.Context(), cs, nil, rec)
			if err != nil || len(res.Conflicts) != 0 || !slices.Equal(res.Applied, []string{"new.go"}) {
				t.Fatalf("Apply = %+v, %v; want new.go written", res, err)
			}
			if got := diskContent(t, root, "new.go"); got != "package x\n" {
				t.Fatalf("new.go on disk = %q", got)
			}
		})
	}
}

// A buffer of a missing file that the user typed into is the user's new
// file: a create of the same path is a conflict, never an overwrite.
func TestCreateOverUsersUnsavedNewFile(t *testing.T) {
	w, root := newWS(t, map[string]string{"a.txt": "a\n"})
	b := w.Propose(t.Context())
	if err := b.Write("new.go", []byte("package x\n")); err != nil {
		t.Fatal(err)
	}
	cs := mustBuild(t, b)
	if err := w.OpenOverlay("new.go", []byte("package mine\n"), 1); err != nil {
		t.Fatal(err)
	}
	res, err := w.Apply(t.Context(), cs, nil, &recorder{w: w})
	if err != nil || len(res.Conflicts) != 1 || len(res.Applied) != 0 {
		t.Fatalf("Apply = %+v, %v; want one conflict", res, err)
	}
	if got := readDiskFileMaybe(root, "new.go"); got != "" {
		t.Fatalf("new.go was written: %q", got)
	}
}

func readDiskFileMaybe(root, rel string) string {
	data, _ := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	return string(data)
}

// A file the user created empty on disk (touch, an editor's New File
// saved) before accepting the agent's creation of it takes the creation:
// nothing of the user's is in it. One with other content is a conflict
// that says how to go on, and is left alone.
func TestCreateOverAnEmptyFileOnDisk(t *testing.T) {
	w, root := newWS(t, map[string]string{"a.txt": "a\n"})
	b := w.Propose(t.Context())
	if err := b.Write("new.go", []byte("package x\n")); err != nil {
		t.Fatal(err)
	}
	cs := mustBuild(t, b)
	if err := os.WriteFile(filepath.Join(root, "new.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := w.Apply(t.Context(), cs, nil, nil)
	if err != nil || len(res.Conflicts) != 0 || !slices.Equal(res.Applied, []string{"new.go"}) {
		t.Fatalf("Apply onto an empty file = %+v, %v; want new.go written", res, err)
	}
	if got := diskContent(t, root, "new.go"); got != "package x\n" {
		t.Fatalf("new.go on disk = %q", got)
	}

	if err := os.WriteFile(filepath.Join(root, "new.go"), []byte("user\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = w.Apply(t.Context(), cs, nil, nil)
	if err != nil || len(res.Conflicts) != 1 || res.Conflicts[0].Reason != CreatedMeanwhile {
		t.Fatalf("Apply onto a file with other content = %+v, %v; want the conflict %q", res, err, CreatedMeanwhile)
	}
	if got := diskContent(t, root, "new.go"); got != "user\n" {
		t.Fatalf("the user's new.go was overwritten: %q", got)
	}
}

// The same empty file open in an editor that holds it as one empty line
// (Neovim sends an empty buffer as "\n") takes the creation too; a buffer
// with text of the user's is still a conflict.
func TestCreateOverAnEmptyFileOpenAsOneEmptyLine(t *testing.T) {
	w, root := newWS(t, map[string]string{"a.txt": "a\n"})
	b := w.Propose(t.Context())
	if err := b.Write("new.go", []byte("package x\n")); err != nil {
		t.Fatal(err)
	}
	cs := mustBuild(t, b)
	if err := os.WriteFile(filepath.Join(root, "new.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.OpenOverlay("new.go", []byte("\n"), 1); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{w: w}
	res, err := w.Apply(t.Context(), cs, nil, rec)
	if err != nil || len(res.Conflicts) != 0 || !slices.Equal(res.Applied, []string{"new.go"}) {
		t.Fatalf("Apply onto an empty file open as one empty line = %+v, %v; want new.go written", res, err)
	}
	if err := w.OpenOverlay("new.go", []byte("\nmine\n"), 2); err != nil {
		t.Fatal(err)
	}
	res, err = w.Apply(t.Context(), cs, nil, rec)
	if err != nil || len(res.Conflicts) != 1 || res.Conflicts[0].Reason != CreatedMeanwhile {
		t.Fatalf("Apply onto a buffer with the user's text = %+v, %v; want the conflict %q", res, err, CreatedMeanwhile)
	}
}
