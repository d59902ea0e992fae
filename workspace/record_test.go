package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRecorder keeps what it is asked to record, or fails.
type fakeRecorder struct {
	runID, stepID string
	edits         []Edit
	fail          error
}

func (f *fakeRecorder) RecordEdits(ctx context.Context, runID, stepID string, edits []Edit) error {
	if f.fail != nil {
		return f.fail
	}
	f.runID, f.stepID = runID, stepID
	f.edits = append(f.edits, edits...)
	return nil
}

func (f *fakeRecorder) summary() string {
	var b strings.Builder
	st := func(s *FileState) string {
		if s == nil {
			return "absent"
		}
		return strings.TrimSuffix(string(s.Data), "\n")
	}
	for _, e := range f.edits {
		b.WriteString(e.Path + ": " + st(e.Before) + " -> " + st(e.After) + "\n")
	}
	return b.String()
}

func diskText(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A line the user typed into the editor's buffer while the change waited
// is in the recorded Before (what the write was merged against), not in
// the agent's change: an undo of the edit keeps it.
func TestRecordingWriterBeforeHoldsTheUsersBufferEdit(t *testing.T) {
	ctx := context.Background()
	w, root := newWS(t, map[string]string{"a.go": "one\ntwo\nthree\nfour\nfive\n"})
	b := w.Propose(ctx)
	if err := b.Write("a.go", []byte("one\ntwo\nthree\nfour\nFIVE\n")); err != nil {
		t.Fatal(err)
	}
	cs := b.Build()
	// The user types a line while the change is pending.
	if err := w.OpenOverlay("a.go", []byte("one\n// USER\ntwo\nthree\nfour\nfive\n"), 1); err != nil {
		t.Fatal(err)
	}
	rec := &fakeRecorder{}
	ar, err := w.Apply(ctx, cs, nil, w.RecordingWriter(nil, rec, "r1", "s1"))
	if err != nil || len(ar.Conflicts) > 0 {
		t.Fatalf("apply: %v %v", err, ar.Conflicts)
	}
	if rec.runID != "r1" || rec.stepID != "s1" || len(rec.edits) != 1 {
		t.Fatalf("recorded %q %q %v", rec.runID, rec.stepID, rec.summary())
	}
	e := rec.edits[0]
	if e.Before == nil || !strings.Contains(string(e.Before.Data), "// USER") {
		t.Fatalf("the recorded Before lacks the user's line: %s", rec.summary())
	}
	if e.After == nil || string(e.After.Data) != "one\n// USER\ntwo\nthree\nfour\nFIVE\n" || e.After.Mode != 0o644 {
		t.Fatalf("recorded After: %+v", e.After)
	}
	if got := diskText(t, root, "a.go"); got != string(e.After.Data) {
		t.Fatalf("disk holds %q, recorded %q", got, e.After.Data)
	}
}

// Creates, deletes and moves are recorded: a move as the old path deleted
// and the new one created; every edit before the write is made.
func TestRecordingWriterCreateDeleteMove(t *testing.T) {
	ctx := context.Background()
	w, root := newWS(t, map[string]string{"del.txt": "gone\n", "old.txt": "moved\n"})
	b := w.Propose(ctx)
	if err := b.Write("new.txt", []byte("created\n")); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete("del.txt"); err != nil {
		t.Fatal(err)
	}
	if err := b.Move("old.txt", "sub/new.txt"); err != nil {
		t.Fatal(err)
	}
	rec := &fakeRecorder{}
	if _, err := w.Apply(ctx, b.Build(), nil, w.RecordingWriter(nil, rec, "r1", "s1")); err != nil {
		t.Fatal(err)
	}
	want := "del.txt: gone -> absent\nold.txt: moved -> absent\nsub/new.txt: absent -> moved\nnew.txt: absent -> created\n"
	if got := rec.summary(); got != want {
		t.Fatalf("recorded:\n%s\nwant:\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(root, "old.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("old.txt still there: %v", err)
	}
}

// A change taken out again (Revert) is recorded as the write it is.
func TestRecordingWriterRevertRecordsTheTakeOut(t *testing.T) {
	ctx := context.Background()
	w, _ := newWS(t, map[string]string{"a.txt": "a\nb\nc\n"})
	b := w.Propose(ctx)
	if err := b.Write("a.txt", []byte("a\nB\nc\n")); err != nil {
		t.Fatal(err)
	}
	cs := b.Build()
	if _, err := w.Apply(ctx, cs, nil, nil); err != nil {
		t.Fatal(err)
	}
	rec := &fakeRecorder{}
	if _, err := w.Revert(ctx, cs.Files[0], []string{cs.Files[0].Diff.Hunks[0].ID}, w.RecordingWriter(nil, rec, "r1", "s1")); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.summary(), "a.txt: a\nB\nc -> a\nb\nc\n"; got != want {
		t.Fatalf("recorded %q, want %q", got, want)
	}
}

// A write that cannot be recorded is not made.
func TestRecordingWriterFailureBlocksTheWrite(t *testing.T) {
	ctx := context.Background()
	w, root := newWS(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	b := w.Propose(ctx)
	if err := b.Write("a.txt", []byte("changed\n")); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete("b.txt"); err != nil {
		t.Fatal(err)
	}
	if err := b.Write("c.txt", []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	rec := &fakeRecorder{fail: errors.New("disk full")}
	_, err := w.Apply(ctx, b.Build(), nil, w.RecordingWriter(nil, rec, "r1", "s1"))
	if !errors.Is(err, ErrNotRecorded) || !strings.Contains(err.Error(), "a.txt") || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v, want ErrNotRecorded naming a.txt and the cause", err)
	}
	if got := diskText(t, root, "a.txt"); got != "a\n" {
		t.Fatalf("a.txt written although not recorded: %q", got)
	}
	if got := diskText(t, root, "b.txt"); got != "b\n" {
		t.Fatalf("b.txt removed although not recorded: %q", got)
	}
	if _, err := os.Stat(filepath.Join(root, "c.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("c.txt created although not recorded: %v", err)
	}
}

// A link the change creates goes to disk directly, not through the
// writer, and is recorded all the same.
func TestRecordingWriterRecordsLinks(t *testing.T) {
	ctx := context.Background()
	w, _ := newWS(t, map[string]string{"a.txt": "a\n"})
	symlink(t, w.Root(), "la", "a.txt")
	b := w.Propose(ctx)
	if err := b.Delete("la"); err != nil {
		t.Fatal(err)
	}
	rec := &fakeRecorder{}
	if _, err := w.Apply(ctx, b.Build(), nil, w.RecordingWriter(nil, rec, "r1", "s1")); err != nil {
		t.Fatal(err)
	}
	if len(rec.edits) != 1 || rec.edits[0].Path != "la" || rec.edits[0].Before == nil ||
		rec.edits[0].Before.Mode != fs.ModeSymlink || string(rec.edits[0].Before.Data) != "a.txt" || rec.edits[0].After != nil {
		t.Fatalf("recorded %s", rec.summary())
	}
}
