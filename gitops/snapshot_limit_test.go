package gitops

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A step's snapshot limited to its paths records the user's edits made
// meanwhile as they were in the run's previous snapshot, so restoring the
// run's start keeps them (as conflicts) and removes only the step's work.
func TestSnapshotLimit(t *testing.T) {
	for _, watch := range []bool{false, true} {
		t.Run(map[bool]string{false: "walk", true: "watch"}[watch], func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, map[string]string{"a.txt": "a0\n", "b.txt": "b0\n", "dir/x.txt": "x0\n"})
			s := openTestStore(t, root, Options{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if watch {
				if err := s.Watch(ctx); err != nil {
					t.Fatal(err)
				}
			}
			start, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r", Label: "run start"})
			if err != nil {
				t.Fatal(err)
			}
			// The step edits a.txt and creates dir/new.txt; meanwhile the
			// user edits b.txt and creates u.txt.
			writeTree(t, root, map[string]string{"a.txt": "a1\n", "dir/new.txt": "n\n", "b.txt": "b-user\n", "u.txt": "user\n"})
			s1, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r", StepID: "edit",
				Limit: &SnapshotLimit{Base: start.ID, Paths: []string{"a.txt", "dir"}}})
			if err != nil {
				t.Fatal(err)
			}
			for p, want := range map[string]string{"a.txt": "a1\n", "dir/new.txt": "n\n", "b.txt": "b0\n", "dir/x.txt": "x0\n"} {
				if got, ok := fileAt(t, s, s1.ID, p); !ok || got != want {
					t.Errorf("%s in the step's snapshot = %q (%v), want %q", p, got, ok, want)
				}
			}
			if _, ok := fileAt(t, s, s1.ID, "u.txt"); ok {
				t.Errorf("the user's new u.txt is in the step's snapshot")
			}
			want := []FileChange{{Path: "a.txt", Kind: ChangeModified}, {Path: "dir/new.txt", Kind: ChangeAdded}}
			if !reflect.DeepEqual(s1.Changes, want) {
				t.Errorf("changes = %+v, want %+v", s1.Changes, want)
			}

			// A command step: a snapshot at its start takes nothing new
			// (the user's edits stay out), the one after it takes what
			// changed on disk while it ran.
			pre, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r", StepID: "cmd", Limit: &SnapshotLimit{Base: s1.ID}})
			if err != nil {
				t.Fatal(err)
			}
			if len(pre.Changes) != 0 {
				t.Errorf("the snapshot before the command recorded %+v", pre.Changes)
			}
			writeTree(t, root, map[string]string{"cmd.txt": "c\n"})
			if err := os.Remove(filepath.Join(root, "dir/x.txt")); err != nil {
				t.Fatal(err)
			}
			post, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r", StepID: "cmd", Limit: &SnapshotLimit{Base: pre.ID, ChangedOnDisk: true}})
			if err != nil {
				t.Fatal(err)
			}
			want = []FileChange{{Path: "cmd.txt", Kind: ChangeAdded}, {Path: "dir/x.txt", Kind: ChangeDeleted}}
			if !reflect.DeepEqual(post.Changes, want) {
				t.Errorf("command's changes = %+v, want %+v", post.Changes, want)
			}
			if got, _ := fileAt(t, s, post.ID, "b.txt"); got != "b0\n" {
				t.Errorf("b.txt in the command's snapshot = %q, want the run's b0", got)
			}

			// Restoring the run's start: the run's files go, the user's stay
			// and are conflicts.
			res, err := s.Restore(ctx, start.ID, RestoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := treeState(t, root, true)
			for p, want := range map[string]string{"a.txt": "a0\n", "b.txt": "b-user\n", "u.txt": "user\n", "dir/x.txt": "x0\n"} {
				data, err := os.ReadFile(filepath.Join(root, p))
				if err != nil || string(data) != want {
					t.Errorf("after restore %s = %q (%v), want %q", p, data, err, want)
				}
			}
			for _, p := range []string{"dir/new.txt", "cmd.txt"} {
				if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
					t.Errorf("after restore %s (the run's) is still there: %v", p, got)
				}
			}
			conflicts := map[string]bool{}
			for _, c := range res.Conflicts {
				conflicts[c.Path] = true
			}
			if !conflicts["b.txt"] || !conflicts["u.txt"] || len(conflicts) != 2 {
				t.Errorf("conflicts = %+v, want b.txt and u.txt", res.Conflicts)
			}
		})
	}
}

func TestSnapshotLimitNeedsBase(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\n"})
	s := openTestStore(t, root, Options{})
	if _, err := s.Snapshot(context.Background(), SnapshotOptions{RunID: "r", Limit: &SnapshotLimit{Paths: []string{"a.txt"}}}); err == nil {
		t.Fatal("a limited snapshot without a base was taken")
	}
	if _, err := s.Snapshot(context.Background(), SnapshotOptions{RunID: "r"}); err != nil {
		t.Fatalf("the store is unusable after a refused limited snapshot: %v", err)
	}
}

// Issue 38 point 11: a file too large for snapshots at the target and
// changed since is named by the restore, not passed over in silence.
func TestRestoreNamesTooLargeFile(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a.txt": "a\n", "big.bin": strings.Repeat("x", 2000)})
	s := openTestStore(t, root, Options{MaxFileSize: 1000})
	ctx := context.Background()
	s0, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, map[string]string{"a.txt": "A\n", "big.bin": strings.Repeat("y", 3000)})
	for _, dry := range []bool{true, false} {
		res, err := s.Restore(ctx, s0.ID, RestoreOptions{Overwrite: true, DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.LeftAlone) != 1 || res.LeftAlone[0].Path != "big.bin" || !strings.Contains(res.LeftAlone[0].Message, "too large") {
			t.Fatalf("dry run %v: left alone %+v", dry, res.LeftAlone)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "big.bin")); len(b) != 3000 {
		t.Fatal("big.bin changed")
	}
}
