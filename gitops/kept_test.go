package gitops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Ignored files the agent's tools change are revertible (issue 24, point
// 1): the step keeps their pre-images (Store.Keep) before it writes, and
// restoring the run's start, the step's snapshot or a snapshot taken
// before the run brings them back; files the agent never touched stay out.
func TestKeptIgnoredFilesAreRestored(t *testing.T) {
	for _, watch := range []bool{false, true} {
		t.Run(map[bool]string{false: "walk", true: "watch"}[watch], func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, map[string]string{
				".gitignore":                    ".env\nnode_modules/\nbuild/\n",
				".env":                          "SECRET=hunter2\n",
				"node_modules/leftpad/index.js": "module.exports = 1\n",
				"node_modules/other.js":         "untouched\n",
				"build/old.o":                   "obj\n",
				"main.go":                       "package main\n",
			})
			s := openTestStore(t, root, Options{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if watch {
				if err := s.Watch(ctx); err != nil {
					t.Fatal(err)
				}
			}
			manual, err := s.Snapshot(ctx, SnapshotOptions{Label: "before the run"})
			if err != nil {
				t.Fatal(err)
			}
			start, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r", Label: "run start"})
			if err != nil {
				t.Fatal(err)
			}
			paths := []string{".env", "node_modules/leftpad/index.js", "build/agent.txt", "main.go"}
			added, err := s.Keep(ctx, paths)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{".env", "build/agent.txt", "node_modules/leftpad/index.js"}; !slices.Equal(added, want) {
				t.Errorf("kept %v, want %v (main.go is in every snapshot already)", added, want)
			}
			writeTree(t, root, map[string]string{".env": "SECRET=changed\n", "node_modules/leftpad/index.js": "module.exports = 2\n",
				"build/agent.txt": "agent\n", "main.go": "package main // edited\n"})
			step, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r", StepID: "s1", Limit: &SnapshotLimit{Base: start.ID, Paths: paths}})
			if err != nil {
				t.Fatal(err)
			}
			if step.FilesChanged != 4 {
				t.Errorf("the step's snapshot records %d changes (%+v), want 4", step.FilesChanged, step.Changes)
			}
			for _, p := range []string{"node_modules/other.js", "build/old.o"} {
				if _, ok := fileAt(t, s, step.ID, p); ok {
					t.Errorf("%s, which the agent never touched, is in the step's snapshot", p)
				}
			}
			res, err := s.Restore(ctx, start.ID, RestoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Conflicts) > 0 || len(res.LeftAlone) > 0 {
				t.Errorf("conflicts %+v, left alone %+v", res.Conflicts, res.LeftAlone)
			}
			want := map[string]string{".env": "SECRET=hunter2\n", "node_modules/leftpad/index.js": "module.exports = 1\n",
				"main.go": "package main\n", "node_modules/other.js": "untouched\n", "build/old.o": "obj\n"}
			checkFiles(t, root, want, []string{"build/agent.txt"})

			// Undo the undo: the agent's versions come back.
			if _, err := s.Restore(ctx, res.UndoSnapshot, RestoreOptions{}); err != nil {
				t.Fatal(err)
			}
			checkFiles(t, root, map[string]string{".env": "SECRET=changed\n", "build/agent.txt": "agent\n",
				"node_modules/leftpad/index.js": "module.exports = 2\n"}, nil)
			// The step's own snapshot, then the one before the run.
			if _, err := s.Restore(ctx, step.ID, RestoreOptions{}); err != nil {
				t.Fatal(err)
			}
			checkFiles(t, root, map[string]string{".env": "SECRET=changed\n", "build/agent.txt": "agent\n"}, nil)
			if _, err := s.Restore(ctx, manual.ID, RestoreOptions{Overwrite: true}); err != nil {
				t.Fatal(err)
			}
			checkFiles(t, root, want, []string{"build/agent.txt"})
		})
	}
}

// A kept file the user changes after the agent is a conflict, as any other.
func TestKeptFileEditedByUserIsConflict(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{".gitignore": ".env\n", ".env": "A=1\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	start, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Keep(ctx, []string{".env"}); err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, map[string]string{".env": "A=agent\n"})
	if _, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r", StepID: "s", Limit: &SnapshotLimit{Base: start.ID, Paths: []string{".env"}}}); err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, map[string]string{".env": "A=user\n"})
	res, err := s.Restore(ctx, start.ID, RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Conflicts) != 1 || res.Conflicts[0].Path != ".env" {
		t.Errorf("conflicts = %+v, want .env", res.Conflicts)
	}
	checkFiles(t, root, map[string]string{".env": "A=user\n"}, nil)
}

// A file too large to keep is refused before the agent changes it.
func TestKeepRefusesWhatItCannotSave(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{".gitignore": "big.bin\n", "big.bin": strings.Repeat("x", 2048)})
	s := openTestStore(t, root, Options{MaxFileSize: 1024})
	_, err := s.Keep(context.Background(), []string{"big.bin"})
	if !errors.Is(err, ErrCannotKeep) || !strings.Contains(err.Error(), "big.bin") {
		t.Fatalf("err = %v, want ErrCannotKeep naming big.bin", err)
	}
	if k, _ := s.loadKept(); len(k) != 0 {
		t.Errorf("kept %v after a refusal", k)
	}
}

func checkFiles(t *testing.T, root string, want map[string]string, gone []string) {
	t.Helper()
	for p, w := range want {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil || string(b) != w {
			t.Errorf("%s = %q (%v), want %q", p, b, err, w)
		}
	}
	for _, p := range gone {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s still exists", p)
		}
	}
}

// An overwrite never destroys what it cannot undo (issue 24, point 3): a
// file that grew past the size limit after the snapshot is left alone and
// named, even with Overwrite, and the undo snapshot restores everything
// the restore changed.
func TestOverwriteLeavesWhatSafetyCannotHold(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{".gitignore": "*.log\n", "big.dat": "small\n", "a.txt": "a0\n", "huge.log": "old log\n"})
	s := openTestStore(t, root, Options{MaxFileSize: 1024})
	ctx := context.Background()
	snap, err := s.Snapshot(ctx, SnapshotOptions{Label: "small"})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("user's big version\n", 200)
	writeTree(t, root, map[string]string{"big.dat": big, "a.txt": "a1\n"})
	res, err := s.Restore(ctx, snap.ID, RestoreOptions{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, root, map[string]string{"big.dat": big, "a.txt": "a0\n"}, nil)
	named := false
	for _, l := range res.LeftAlone {
		named = named || l.Path == "big.dat" && strings.Contains(l.Message, "saved for undo")
	}
	if !named {
		t.Errorf("big.dat is not named as left alone: %+v", res.LeftAlone)
	}
	if _, err := s.Restore(ctx, res.UndoSnapshot, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, root, map[string]string{"big.dat": big, "a.txt": "a1\n"}, nil)
}
