package review

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The book records every set and every decision in the journal itself, so
// every front end that holds a book keeps the journal; a new book (a
// restarted daemon) loads the sets with their state.
func TestBookKeepsJournal(t *testing.T) {
	f := newFixture(t)
	j := f.journal()
	b := NewBook()
	var errs []error
	b.Keep(j, func(id string, err error) { errs = append(errs, err) })
	s := New(f.cs, Before)
	s.RunID = "run-1"
	b.Put(s)
	if got, err := Recorded(j, "run-1"); err != nil || len(got) != 1 || got[0].Status() != Pending {
		t.Fatalf("after Put the journal holds %+v (%v), want the set pending", got, err)
	}
	hunk := s.Files[0].Hunks[0].ID
	if _, err := b.Resolve(t.Context(), Files{WS: f.ws}, s, []Decision{{HunkID: hunk, Action: Accept}}, ""); err != nil {
		t.Fatal(err)
	}
	got, err := Recorded(j, "run-1")
	if err != nil || len(got) != 1 || got[0].Status() != Partial || got[0].Files[0].Hunks[0].Status != Accepted {
		t.Fatalf("after accepting one hunk the journal holds %+v (%v), want it partial with hunk 0 accepted", got, err)
	}
	if other, _ := Recorded(j, "run-2"); len(other) != 0 {
		t.Errorf("Recorded(run-2) = %+v, want nothing", other)
	}

	// A restarted daemon loads the set and can finish its review.
	b2 := NewBook()
	b2.Keep(j, nil)
	added, err := b2.Load()
	if err != nil || len(added) != 1 || added[0].ID != s.ID {
		t.Fatalf("Load = %+v, %v; want the set", added, err)
	}
	if again, _ := b2.Load(); len(again) != 0 {
		t.Errorf("a second Load added %d sets it holds already", len(again))
	}
	if _, err := b2.Resolve(t.Context(), Files{WS: f.ws}, added[0], []Decision{{Action: Reject}}, "no"); err != nil {
		t.Fatal(err)
	}
	if got, _ := Recorded(j, "run-1"); len(got) != 1 || got[0].Status() != Partial || got[0].Files[0].Hunks[1].Status != Rejected {
		t.Errorf("after the restarted review the journal holds %+v", got)
	}
	if len(errs) != 0 {
		t.Errorf("save errors: %v", errs)
	}

	// A rebase onto the user's typing is recorded too.
	s3 := New(f.cs, Before)
	s3.ID = "cs-rebase"
	b.Put(s3)
	b.Rebase("f.txt", []byte("user's first line\n"+f.base))
	b.Close() // a rebase is recorded after RecordDelay, or at Close
	got, _ = Recorded(j, "")
	found := false
	for _, r := range got {
		if r.ID == "cs-rebase" {
			found = true
			if string(r.Files[0].Old) != "user's first line\n"+f.base {
				t.Errorf("the rebased set is recorded against %.30q, want the user's text", r.Files[0].Old)
			}
		}
	}
	if !found {
		t.Errorf("the rebased set is not in the journal")
	}
}

// A record that cannot be saved is reported with the set's id and the
// file, and the decision still holds.
func TestBookKeepReportsFailedSave(t *testing.T) {
	f := newFixture(t)
	j := f.journal()
	if err := os.WriteFile(filepath.Join(j.Dir(), "changes"), []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := NewBook()
	var ids []string
	var last error
	b.Keep(j, func(id string, err error) { ids, last = append(ids, id), err })
	s := New(f.cs, Before)
	b.Put(s)
	res, err := b.Resolve(t.Context(), Files{WS: f.ws}, s, []Decision{{Action: Accept}}, "")
	if err != nil || res.Status != Accepted {
		t.Fatalf("resolve: %+v %v", res, err)
	}
	if len(ids) != 2 || ids[0] != s.ID || last == nil || !strings.Contains(last.Error(), filepath.Join(j.Dir(), "changes")) {
		t.Fatalf("save failures reported: %v, last %v; want two for %s naming the file", ids, last, s.ID)
	}
	if f.disk() != f.agent {
		t.Errorf("the accepted change is not on disk")
	}
}

// A burst of rebases (the user typing) is recorded once, when the timer
// fires, not once a keystroke; a decision is recorded at once with the
// latest positions; Close records what waits. The timer is fired by hand
// and the writes are counted where the book hands them to the journal.
func TestBookCoalescesRebaseRecords(t *testing.T) {
	f := newFixture(t)
	j := f.journal()
	b := NewBook()
	b.Keep(j, func(id string, err error) { t.Errorf("save of %s: %v", id, err) })
	writes := 0
	b.keep.saveChange = func(id string, v any) error { writes++; return j.SaveChange(id, v) }
	type timer struct {
		f              func()
		fired, stopped bool
	}
	var timers []*timer
	b.keep.after = func(d time.Duration, f func()) func() bool {
		tm := &timer{f: f}
		timers = append(timers, tm)
		return func() bool {
			was := !tm.fired && !tm.stopped
			tm.stopped = true
			return was
		}
	}
	armed := func() int {
		n := 0
		for _, tm := range timers {
			if !tm.fired && !tm.stopped {
				n++
			}
		}
		return n
	}
	fireAll := func() {
		for _, tm := range timers {
			if !tm.fired && !tm.stopped {
				tm.fired = true
				tm.f()
			}
		}
	}
	recordedOld := func() string {
		t.Helper()
		got, err := Recorded(j, "")
		if err != nil || len(got) != 1 {
			t.Fatalf("the journal holds %+v (%v), want one set", got, err)
		}
		return string(got[0].Files[0].Old)
	}
	s := New(f.cs, Before)
	b.Put(s)
	if writes != 1 {
		t.Fatalf("Put: %d writes, want 1 (at once)", writes)
	}
	text := func(i int) string { return fmt.Sprintf("typed %d\n", i) + f.base }
	for i := range 100 {
		if ch := b.Rebase("f.txt", []byte(text(i))); len(ch) != 1 {
			t.Fatalf("rebase %d changed %d sets", i, len(ch))
		}
	}
	if writes != 1 || armed() != 1 {
		t.Fatalf("100 rebases: %d writes and %d timers, want no write yet and one timer", writes-1, armed())
	}
	fireAll()
	if writes != 2 || recordedOld() != text(99) {
		t.Fatalf("after the timer: %d writes, recorded against %.20q; want one write of the last rebase", writes-1, recordedOld())
	}

	// A decision is recorded at once, with the positions of the rebases
	// before it; the timer they armed then has nothing to write.
	for i := 100; i < 150; i++ {
		b.Rebase("f.txt", []byte(text(i)))
	}
	f.write(text(149))
	f.resolve(b, s, 0, Accept)
	if writes != 3 {
		t.Fatalf("accept: %d writes in all, want 3", writes)
	}
	got, _ := Recorded(j, "")
	if got[0].Files[0].Hunks[0].Status != Accepted || !strings.HasPrefix(string(got[0].Files[0].Old), "typed 149\n") {
		t.Errorf("after accept the journal holds %+v", got[0].Files[0])
	}
	fireAll()
	if writes != 3 {
		t.Errorf("the timer wrote again a set the decision recorded: %d writes", writes)
	}

	// Close records what waits; after it, rebases record at once.
	after := f.disk()
	b.Rebase("f.txt", []byte("closing\n"+after))
	b.Close()
	if writes != 4 || recordedOld() != "closing\n"+after {
		t.Fatalf("Close: %d writes, recorded against %.20q", writes, recordedOld())
	}
	b.Rebase("f.txt", []byte("after close\n"+after))
	if writes != 5 || armed() != 0 {
		t.Errorf("a rebase after Close: %d writes, %d timers armed; want it written at once", writes, armed())
	}
}
