package review

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/journal"
	"github.com/agentd/agentd/workspace"
)

// syncedLog is a journal's log the test reads.
type syncedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// twoBooks is one journal held by two books (two agentd processes): a
// holds the set s, b loaded it.
func twoBooks(t *testing.T, f *fixture, mode Mode) (a, b *Book, s *Set, log *syncedLog) {
	t.Helper()
	if mode == After { // the change is on disk already
		if err := os.WriteFile(filepath.Join(f.root, "f.txt"), []byte(f.agent), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log = &syncedLog{}
	dir := t.TempDir()
	open := func() *journal.Journal {
		j, err := journal.Open(dir, f.ws.Root(), slog.New(slog.NewTextHandler(log, nil)))
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	a, b = NewBook(), NewBook()
	a.Keep(open(), func(id string, err error) { t.Errorf("a: save of %s: %v", id, err) })
	s = New(f.cs, mode)
	a.Put(s)
	b.Keep(open(), func(id string, err error) { t.Errorf("b: save of %s: %v", id, err) })
	if _, err := b.Load(); err != nil {
		t.Fatal(err)
	}
	return a, b, s, log
}

func (f *fixture) decide(bk *Book, id string, ds ...Decision) *Result {
	f.t.Helper()
	s, ok := bk.Get(id)
	if !ok {
		f.t.Fatalf("the book has no %s", id)
	}
	res, err := bk.Resolve(f.t.Context(), Files{WS: f.ws}, s, ds, "")
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

// A decision recorded by another book is taken by Sync, once, with the
// file whose units changed; the book's own records never come back.
func TestSyncTakesAnotherBooksDecision(t *testing.T) {
	f := newFixture(t)
	a, b, s, _ := twoBooks(t, f, After)
	var heard []Synced
	a.OnSync(func(sy []Synced) { heard = append(heard, sy...) })
	if got, err := a.Sync(); err != nil || len(got) != 0 {
		t.Fatalf("Sync with nothing new: %+v %v", got, err)
	}
	hunk := s.Files[0].Hunks[0].ID
	f.decide(b, s.ID, Decision{Path: "f.txt", HunkID: hunk, Action: Reject})
	got, err := a.Sync()
	if err != nil || len(got) != 1 || got[0].Set != s || got[0].Added || len(got[0].Paths) != 1 || got[0].Paths[0] != "f.txt" {
		t.Fatalf("Sync after the other book's decision: %+v %v, want the held set with f.txt", got, err)
	}
	if len(heard) != 1 {
		t.Errorf("OnSync heard %d sets, want 1", len(heard))
	}
	if len(got[0].Wrote) != 1 || got[0].Wrote[0] != "f.txt" {
		t.Errorf("Wrote = %v, want f.txt (the rejection took the hunk out of it)", got[0].Wrote)
	}
	a.Read(func() {
		if s.Files[0].Hunks[0].Status != Rejected || s.Status() != Partial {
			t.Errorf("the held set is %s with hunk 0 %s, want the other book's rejection", s.Status(), s.Files[0].Hunks[0].Status)
		}
	})
	if again, _ := a.Sync(); len(again) != 0 {
		t.Errorf("a second Sync took %d sets again", len(again))
	}
	// The book's own decision: recorded, and never taken back.
	f.decide(a, s.ID, Decision{Action: Accept})
	for range 3 {
		if own, _ := a.Sync(); len(own) != 0 {
			t.Fatalf("Sync took the book's own record: %+v", own)
		}
	}
	// The other book takes it before deciding, and its Wait ends.
	if got, _ := b.Sync(); len(got) != 1 || got[0].Set.Status() != Partial || got[0].Set.Counts().Pending != 0 {
		t.Fatalf("the other book's Sync: %+v", got)
	}
	bs, _ := b.Get(s.ID)
	if _, err := b.Wait(t.Context(), bs); err != nil {
		t.Fatal(err)
	}
}

// A rebase the book holds back is not recorded over another book's
// decision made since: the decision stands and the book takes it.
func TestHeldBackRebaseNeverOverwritesADecision(t *testing.T) {
	f := newFixture(t)
	a, b, s, _ := twoBooks(t, f, Before)
	if changed := a.Rebase("f.txt", []byte("user's first line\n"+f.base)); len(changed) != 1 {
		t.Fatalf("rebase changed %d sets", len(changed))
	}
	f.decide(b, s.ID, Decision{Action: Reject})
	a.Flush() // the held back rebase
	recs, err := Recorded(a.Journal(), "")
	if err != nil || len(recs) != 1 || recs[0].Status() != Rejected {
		t.Fatalf("the journal holds %+v (%v), want the other book's rejection", recs, err)
	}
	got, _ := a.Sync()
	if len(got) != 1 {
		t.Fatalf("Sync took %d sets, want the rejected one", len(got))
	}
	if len(got[0].Wrote) != 0 {
		t.Errorf("Wrote = %v, want none (a rejection before applying writes nothing)", got[0].Wrote)
	}
	a.Read(func() {
		if s.Status() != Rejected {
			t.Errorf("the held set is %s, want rejected", s.Status())
		}
	})
}

// A hunk another book applied (review before) is a file it wrote: an
// editor's buffer of it does not hold the hunk until it is reloaded.
func TestSyncSaysWhichFilesTheOtherBookWrote(t *testing.T) {
	f := newFixture(t)
	a, b, s, _ := twoBooks(t, f, Before)
	f.decide(b, s.ID, Decision{Path: "f.txt", HunkID: s.Files[0].Hunks[0].ID, Action: Accept})
	got, err := a.Sync()
	if err != nil || len(got) != 1 || len(got[0].Wrote) != 1 || got[0].Wrote[0] != "f.txt" {
		t.Fatalf("Sync after the other book applied a hunk: %+v %v, want f.txt written", got, err)
	}
}

// A damaged record is never taken (the held set keeps its state) and is
// reported once, naming its file; the next good record is taken.
func TestSyncLeavesDamagedRecordOut(t *testing.T) {
	f := newFixture(t)
	a, b, s, log := twoBooks(t, f, After)
	path := filepath.Join(a.Journal().Dir(), "changes", journal.RecordName(s.ID)+".json")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, good[:len(good)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got, _ := a.Sync(); len(got) != 0 {
			t.Fatalf("Sync took a damaged record: %+v", got)
		}
	}
	if n := strings.Count(log.String(), "damaged"); n != 1 || !strings.Contains(log.String(), path) {
		t.Errorf("damaged record reported %d times (want once, naming %s):\n%s", n, path, log)
	}
	a.Read(func() {
		if s.Status() != Pending {
			t.Errorf("the held set is %s after a damaged record, want pending", s.Status())
		}
	})
	// The other book records over it (a damaged record has no revision).
	f.decide(b, s.ID, Decision{Action: Accept})
	if got, _ := a.Sync(); len(got) != 1 || got[0].Set.Status() != Accepted {
		t.Fatalf("Sync after a good record: %+v", got)
	}
}

// Two books deciding the same hunk: the later one, made on a view older
// than the record, is refused once with the set and the unit named, and
// nothing is done; the same decision again goes through.
func TestDecisionOnAnOlderViewRefusedOnce(t *testing.T) {
	f := newFixture(t)
	a, b, s, _ := twoBooks(t, f, After)
	hunk := s.Files[0].Hunks[0].ID
	f.decide(b, s.ID, Decision{Path: "f.txt", HunkID: hunk, Action: Reject})
	disk := f.disk()
	_, err := a.Resolve(t.Context(), Files{WS: f.ws}, s, []Decision{{Path: "f.txt", HunkID: hunk, Action: Accept}}, "")
	var ce *ChangedError
	if !errors.As(err, &ce) || ce.ID != s.ID || !strings.Contains(err.Error(), hunk) || !strings.Contains(err.Error(), "rejected") {
		t.Fatalf("the decision on the older view: %v, want a ChangedError naming %s and %s", err, s.ID, hunk)
	}
	if f.disk() != disk {
		t.Errorf("the refused decision changed the file")
	}
	if recs, _ := Recorded(a.Journal(), ""); recs[0].Files[0].Hunks[0].Status != Rejected {
		t.Errorf("the refused decision changed the record")
	}
	// Deciding the whole set goes on: only what is still open is decided.
	if res, err := a.Resolve(t.Context(), Files{WS: f.ws}, s, []Decision{{Action: Accept}}, ""); err != nil || res.Status != Partial {
		t.Fatalf("accept all: %+v %v, want partial (the rejection stands)", res, err)
	}
	res, err := a.Resolve(t.Context(), Files{WS: f.ws}, s, []Decision{{Path: "f.txt", HunkID: hunk, Action: Accept}}, "")
	if err != nil || res.Status != Accepted {
		t.Fatalf("the same decision again: %+v %v, want it to go through", res, err)
	}
}

// The cost of the daemon's look for other processes' records while
// nothing changes (every ChangesSyncInterval), against reading the
// records to compare them (what a look without the folder's stat would
// do): 200 recorded sets.
func BenchmarkSyncIdle(b *testing.B) {
	for _, full := range []bool{false, true} {
		name := "stat"
		if full {
			name = "read-all"
		}
		b.Run(name, func(b *testing.B) {
			root := b.TempDir()
			if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(numbered(40, nil)), 0o644); err != nil {
				b.Fatal(err)
			}
			ws, err := workspace.Open(root, workspace.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer ws.Close()
			pr := ws.Propose(b.Context())
			if err := pr.Write("f.txt", []byte(numbered(40, map[int]string{5: "five\n", 30: "thirty\n"}))); err != nil {
				b.Fatal(err)
			}
			cs := pr.Build()
			j, err := journal.Open(b.TempDir(), ws.Root(), nil)
			if err != nil {
				b.Fatal(err)
			}
			bk := NewBook()
			bk.Keep(j, nil)
			for i := range 200 {
				s := New(cs, Before)
				s.ID = fmt.Sprintf("cs-%03d", i)
				bk.Put(s)
			}
			// Older than the racy window, as on a daemon idle for seconds.
			old := time.Now().Add(-time.Minute)
			ents, _ := os.ReadDir(filepath.Join(j.Dir(), "changes"))
			for _, e := range ents {
				_ = os.Chtimes(filepath.Join(j.Dir(), "changes", e.Name()), old, old)
			}
			_ = os.Chtimes(filepath.Join(j.Dir(), "changes"), old, old)
			if _, err := bk.Sync(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if full {
					_, _ = j.ChangesExcept(nil)
				} else if got, _ := bk.Sync(); len(got) != 0 {
					b.Fatal("took a set")
				}
			}
		})
	}
}
