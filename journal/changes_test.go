package journal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ScanChanges returns the records written since the last scan, and only
// those: never a temp file being written, never one already returned and
// unchanged (also within the window where timestamps are not trusted).
func TestScanChangesReturnsWhatChanged(t *testing.T) {
	j, err := Open(t.TempDir(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var sc ChangeScan
	if got, err := j.ScanChanges(&sc); err != nil || len(got) != 0 {
		t.Fatalf("no folder yet: %v %v", got, err)
	}
	if err := j.SaveChange("cs-1", map[string]int{"rev": 1}); err != nil {
		t.Fatal(err)
	}
	// A writer's temp file, half written.
	if err := os.WriteFile(filepath.Join(j.Dir(), "changes", ".tmp-123"), []byte(`{"id":`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := j.ScanChanges(&sc)
	if err != nil || len(got) != 1 || filepath.Base(got[0].File) != "cs-1.json" {
		t.Fatalf("after a save: %+v %v, want cs-1 alone", got, err)
	}
	for range 3 {
		if again, _ := j.ScanChanges(&sc); len(again) != 0 {
			t.Fatalf("an unchanged record came back: %+v", again)
		}
	}
	if err := j.SaveChange("cs-1", map[string]int{"rev": 2}); err != nil {
		t.Fatal(err)
	}
	if got, _ := j.ScanChanges(&sc); len(got) != 1 || string(got[0].Data) != `{"rev":2}` {
		t.Fatalf("after a second save: %+v, want its new content", got)
	}
	// After a quiet spell (the scan is one stat of the folder), a save
	// is found through the folder's change.
	old := time.Now().Add(-time.Minute)
	path := filepath.Join(j.Dir(), "changes", "cs-1.json")
	_ = os.Chtimes(path, old, old)
	_ = os.Chtimes(filepath.Join(j.Dir(), "changes"), old, old)
	_, _ = j.ScanChanges(&sc)
	if err := j.SaveChange("cs-1", map[string]int{"rev": 3}); err != nil {
		t.Fatal(err)
	}
	if got, _ := j.ScanChanges(&sc); len(got) != 1 || string(got[0].Data) != `{"rev":3}` {
		t.Fatalf("after a third save: %+v", got)
	}
}

// The records' lock is one holder at a time, across open files (as
// across processes); a holder that keeps it past the wait is named.
func TestLockChangesExcludes(t *testing.T) {
	j, err := Open(t.TempDir(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := j.LockChanges(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := j.LockChanges(ctx); !errors.Is(err, ErrChangesBusy) {
		t.Fatalf("a second lock while held: %v, want ErrChangesBusy", err)
	}
	unlock()
	unlock2, err := j.LockChanges(t.Context())
	if err != nil {
		t.Fatalf("the lock after unlock: %v", err)
	}
	unlock2()
}
