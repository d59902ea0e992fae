package gitops

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// fileAt reads one file of a snapshot.
func fileAt(t *testing.T, s *Store, id, p string) (string, bool) {
	t.Helper()
	files, err := s.snapshotFiles(id)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := files[p]
	if !ok {
		return "", false
	}
	data, err := s.readBlob(f.hash)
	if err != nil {
		t.Fatal(err)
	}
	return string(data), true
}

func TestSnapshotContents(t *testing.T) {
	for _, watch := range []bool{false, true} {
		t.Run(map[bool]string{false: "walk", true: "watch"}[watch], func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, map[string]string{"a.txt": "disk\n", "sub/b.sh": "#!/bin/sh\n", "keep": "k\n"})
			os.Chmod(filepath.Join(root, "sub/b.sh"), 0o755)
			s := openTestStore(t, root, Options{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if watch {
				if err := s.Watch(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r"}); err != nil {
				t.Fatal(err)
			}
			// The agent's edits sit in unsaved buffers: a.txt, sub/b.sh, and
			// new/c.txt that is not on disk at all.
			snap, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r", StepID: "s1", Contents: map[string][]byte{
				"a.txt": []byte("buffer\n"), "sub/b.sh": []byte("#!/bin/sh\necho buffer\n"), "new/c.txt": []byte("c\n")}})
			if err != nil {
				t.Fatal(err)
			}
			for p, want := range map[string]string{"a.txt": "buffer\n", "sub/b.sh": "#!/bin/sh\necho buffer\n", "new/c.txt": "c\n", "keep": "k\n"} {
				if got, ok := fileAt(t, s, snap.ID, p); !ok || got != want {
					t.Errorf("%s in the snapshot = %q (%v), want %q", p, got, ok, want)
				}
			}
			files, _ := s.snapshotFiles(snap.ID)
			if files["sub/b.sh"].mode.String() != "0100755" || files["new/c.txt"].mode.String() != "0100644" {
				t.Errorf("modes: b.sh %v, c.txt %v", files["sub/b.sh"].mode, files["new/c.txt"].mode)
			}
			got := map[string]ChangeKind{}
			for _, c := range snap.Changes {
				got[c.Path] = c.Kind
			}
			if want := map[string]ChangeKind{"a.txt": ChangeModified, "sub/b.sh": ChangeModified, "new/c.txt": ChangeAdded}; !reflect.DeepEqual(got, want) {
				t.Errorf("changes %v, want %v", got, want)
			}
			// The next snapshot records the disk again: the cache was not
			// poisoned by the buffer contents.
			next, err := s.Snapshot(ctx, SnapshotOptions{RunID: "r"})
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := fileAt(t, s, next.ID, "a.txt"); got != "disk\n" {
				t.Errorf("a.txt after the Contents snapshot = %q, want the disk's", got)
			}
			if _, ok := fileAt(t, s, next.ID, "new/c.txt"); ok {
				t.Errorf("new/c.txt (only in a buffer) is in the next snapshot")
			}
			// In a new process too (the persisted cache).
			s.Close()
			s2 := openTestStore(t, root, s.opts)
			third, err := s2.Snapshot(context.Background(), SnapshotOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := fileAt(t, s2, third.ID, "sub/b.sh"); got != "#!/bin/sh\n" {
				t.Errorf("b.sh in a new process = %q", got)
			}
			if _, err := s2.Snapshot(context.Background(), SnapshotOptions{Contents: map[string][]byte{"../x": nil}}); err == nil {
				t.Errorf("a Contents path outside the workspace was accepted")
			}
			if _, err := s2.Snapshot(context.Background(), SnapshotOptions{Contents: map[string][]byte{".git/config": nil}}); err == nil {
				t.Errorf("a Contents path inside .git was accepted")
			}
		})
	}
}

func TestProtectionBase(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a": "a\n", "b": "b\n", "c": "c\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	manual, _ := s.Snapshot(ctx, SnapshotOptions{Label: "mine"})
	if _, err := s.ProtectionBase(ctx, manual.ID); !errors.Is(err, ErrNoProtectionBase) {
		t.Fatalf("no run snapshot yet: %v", err)
	}
	r1, _ := s.Snapshot(ctx, SnapshotOptions{RunID: "r1"})
	writeTree(t, root, map[string]string{"a": "agent r1\n"})
	r1end, _ := s.Snapshot(ctx, SnapshotOptions{RunID: "r1", StepID: "s"})
	// A manual snapshot later does not count: it is the user's.
	writeTree(t, root, map[string]string{"b": "user\n"})
	if _, err := s.Snapshot(ctx, SnapshotOptions{Label: "user"}); err != nil {
		t.Fatal(err)
	}
	if base, err := s.ProtectionBase(ctx, r1.ID); err != nil || base != r1end.ID {
		t.Fatalf("base = %s, %v; want the run's last snapshot %s", base, err, r1end.ID)
	}
	// A later run counts, across runs.
	writeTree(t, root, map[string]string{"c": "agent r2\n"})
	r2, _ := s.Snapshot(ctx, SnapshotOptions{RunID: "r2"})
	if base, _ := s.ProtectionBase(ctx, r1.ID); base != r2.ID {
		t.Fatalf("base = %s, want r2's %s", base, r2.ID)
	}
	// The user edits b again; restoring r1's start keeps it (a conflict)
	// and restores a and c.
	writeTree(t, root, map[string]string{"b": "user again\n"})
	res, err := s.Restore(ctx, r1.ID, RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(res.Restored)
	if res.ProtectionBase != r2.ID || !reflect.DeepEqual(res.Restored, []string{"a", "c"}) || len(res.Conflicts) != 1 || res.Conflicts[0].Path != "b" {
		t.Fatalf("restore: %+v", res)
	}
	// The result is the next base, with b recorded as the agent left it,
	// so the user's b stays a conflict at the next restore too.
	if base, _ := s.ProtectionBase(ctx, r1.ID); base != res.ResultSnapshot {
		t.Fatalf("base after restore = %s, want its result %s", base, res.ResultSnapshot)
	}
	if got, _ := fileAt(t, s, res.ResultSnapshot, "b"); got != "user\n" {
		t.Fatalf("result snapshot's b = %q, want the base's", got)
	}
	// Undo: everything the restore wrote comes back; b is still the user's.
	undo, err := s.Restore(ctx, res.UndoSnapshot, RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(undo.Restored)
	if !reflect.DeepEqual(undo.Restored, []string{"a", "c"}) || len(undo.Conflicts) != 0 {
		t.Fatalf("undo: %+v", undo)
	}
	for p, want := range map[string]string{"a": "agent r1\n", "b": "user again\n", "c": "agent r2\n"} {
		if b, _ := os.ReadFile(filepath.Join(root, p)); string(b) != want {
			t.Fatalf("%s = %q, want %q", p, b, want)
		}
	}
	// The safety snapshot is never a base.
	list, _ := s.List(ctx, "")
	for _, sn := range list {
		if sn.Kind == "" {
			t.Fatalf("snapshot %s has no kind", sn.ID)
		}
	}
}

func TestRestoreWithoutBaseRefuses(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a": "a\n"})
	s := openTestStore(t, root, Options{})
	ctx := context.Background()
	snap, _ := s.Snapshot(ctx, SnapshotOptions{})
	writeTree(t, root, map[string]string{"a": "mine\n"})
	_, err := s.Restore(ctx, snap.ID, RestoreOptions{})
	if !errors.Is(err, ErrNoProtectionBase) || !strings.Contains(err.Error(), short(snap.ID)) || !strings.Contains(err.Error(), "overwrite") {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a")); string(b) != "mine\n" {
		t.Fatalf("a = %q: overwritten without a base", b)
	}
}

// TestLoggerPassedIn: the store and its file set log through the logger
// given, never through the global one.
func TestLoggerPassedIn(t *testing.T) {
	var global, mine bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&global, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(prev)
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a": "a\n", "locked/f": "f\n"})
	os.Chmod(filepath.Join(root, "locked"), 0o000) // unreadable for non-root: fileset logs it
	defer os.Chmod(filepath.Join(root, "locked"), 0o755)
	state := t.TempDir()
	s := openTestStore(t, root, Options{StateDir: state, Logger: slog.New(slog.NewTextHandler(&mine, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	// A damaged journal is logged at the next open.
	os.WriteFile(filepath.Join(s.Dir(), journalName), []byte("{damaged"), 0o644)
	s.Close()
	s = openTestStore(t, root, Options{StateDir: state, Logger: slog.New(slog.NewTextHandler(&mine, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if _, err := s.Snapshot(context.Background(), SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(mine.String(), "damaged restore journal") {
		t.Errorf("the store's logger got: %q", mine.String())
	}
	if global.Len() != 0 {
		t.Errorf("the global logger got lines: %q", global.String())
	}
}
