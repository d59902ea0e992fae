package review

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A hunk made stale by the user's edit of the line it changes is proposed
// again against the user's text: a pending hunk from the user's line to
// the agent's, which accepting writes; the other hunk keeps its state.
func TestReproposeStaleHunk(t *testing.T) {
	f := newFixture(t)
	b := NewBook()
	s := New(f.cs, Before)
	b.Put(s)
	user := numbered(40, map[int]string{5: "user five\n"})
	f.write(user)
	f.ws.OpenOverlay("f.txt", []byte(user), 1)
	b.Rebase("f.txt", []byte(user))
	var staleID string
	b.Read(func() {
		for _, h := range s.Files[0].Hunks {
			if h.Status == Stale {
				staleID = h.ID
			}
		}
	})
	if staleID == "" {
		t.Fatal("the edit of line 5 did not make its hunk stale")
	}
	if _, err := b.Resolve(t.Context(), Files{WS: f.ws}, s, []Decision{{Path: "f.txt", HunkID: staleID, Action: Accept}}, ""); err != nil {
		t.Fatal(err)
	}
	ids, err := b.Repropose(t.Context(), f.ws, s, "f.txt", staleID)
	if err != nil || len(ids) != 2 {
		t.Fatalf("Repropose = %v, %v; want both open hunks proposed (again) against the user's text", ids, err)
	}
	var old, nw string
	var pending int
	b.Read(func() {
		for _, h := range s.Files[0].Hunks {
			if h.Status == Stale {
				t.Errorf("hunk %s still stale after Repropose", h.ID)
			}
			if h.Status == Pending {
				pending++
			}
			if h.Hunk.NewStart < 20 {
				old, nw = h.Hunk.OldText(), h.Hunk.NewText()
			}
		}
	})
	if pending != 2 || !strings.Contains(old, "user five\n") || strings.Contains(nw, "user five") || !strings.Contains(nw, "agent five\n") {
		t.Fatalf("after Repropose: %d pending; hunk %q -> %q; want 2 pending, the first from the user's line 5 to the agent's", pending, old, nw)
	}
	res, err := b.Resolve(t.Context(), Files{WS: f.ws}, s, []Decision{{Path: "f.txt", Action: Accept}}, "")
	if err != nil || len(res.Conflicts) != 0 || len(res.Applied) != 2 {
		t.Fatalf("accept all after Repropose: %+v, %v", res, err)
	}
	if got, want := f.disk(), numbered(40, map[int]string{5: "agent five\n", 30: "agent thirty\n"}); got != want {
		t.Fatalf("disk:\n%s\nwant:\n%s", got, want)
	}
}

// Repropose says so when there is nothing open to propose again.
func TestReproposeNothingOpen(t *testing.T) {
	f := newFixture(t)
	b := NewBook()
	s := New(f.cs, Before)
	b.Put(s)
	f.resolve(b, s, -1, Reject)
	if _, err := b.Repropose(t.Context(), f.ws, s, "", ""); !errors.Is(err, ErrNothingToRepropose) {
		t.Fatalf("Repropose of a decided set: %v; want ErrNothingToRepropose", err)
	}
	after := New(f.cs, After)
	b.Put(after)
	if _, err := b.Repropose(t.Context(), f.ws, after, "", ""); !errors.Is(err, ErrNothingToRepropose) {
		t.Fatalf("Repropose of an after set: %v; want ErrNothingToRepropose", err)
	}
}

// A set whose only open hunk was stale counts as decided (Wait returns);
// reproposing that hunk makes it pending again, and the set undecided:
// a Wait from then on waits for the new decision.
func TestReproposeReopensTheSet(t *testing.T) {
	f := newFixture(t)
	b := NewBook()
	s := New(f.cs, Before)
	b.Put(s)
	user := numbered(40, map[int]string{5: "user five\n"})
	f.write(user)
	f.ws.OpenOverlay("f.txt", []byte(user), 1)
	b.Rebase("f.txt", []byte(user))
	var staleID, otherID string
	b.Read(func() {
		for _, h := range s.Files[0].Hunks {
			switch h.Status {
			case Stale:
				staleID = h.ID
			case Pending:
				otherID = h.ID
			}
		}
	})
	if staleID == "" || otherID == "" {
		t.Fatal("the edit of line 5 did not make one hunk stale and leave the other pending")
	}
	if _, err := b.Resolve(t.Context(), Files{WS: f.ws}, s, []Decision{{Path: "f.txt", HunkID: otherID, Action: Accept}}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Wait(t.Context(), s); err != nil {
		t.Fatalf("with only a stale hunk open the set is decided: Wait = %v", err)
	}
	if _, err := b.Repropose(t.Context(), f.ws, s, "f.txt", staleID); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if oc, err := b.Wait(ctx, s); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait after Repropose = %+v, %v; want it to wait for the reproposed hunk", oc, err)
	}
	if _, err := b.Resolve(t.Context(), Files{WS: f.ws}, s, []Decision{{Path: "f.txt", Action: Accept}}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Wait(t.Context(), s); err != nil {
		t.Fatalf("decided again: Wait = %v", err)
	}
}

// A creation whose file the user made first: empty, the accept writes it;
// with other content, the unit is stale, and Repropose turns it into a
// change of the user's file (hunks from the user's text to the agent's)
// that accepting writes; never a dead stale unit.
func TestCreationOverTheUsersFile(t *testing.T) {
	f := newFixture(t)
	prop := f.ws.Propose(t.Context())
	if err := prop.Write("new.txt", []byte("one\ntwo\n")); err != nil {
		t.Fatal(err)
	}
	cs := prop.Build()
	for _, content := range []string{"", "mine\n"} {
		b := NewBook()
		s := New(cs, Before)
		b.Put(s)
		path := filepath.Join(f.root, "new.txt")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := b.Resolve(t.Context(), Files{WS: f.ws}, s, []Decision{{Action: Accept}}, "")
		if err != nil {
			t.Fatal(err)
		}
		if content == "" {
			if len(res.Conflicts) != 0 || readString(t, path) != "one\ntwo\n" {
				t.Fatalf("accept over an empty file: %+v, file %q", res, readString(t, path))
			}
			continue
		}
		var st Status
		b.Read(func() { st = s.Status() })
		if len(res.Conflicts) != 1 || st != Stale {
			t.Fatalf("accept over a file with other content: %+v, status %s; want one conflict, stale", res, st)
		}
		ids, err := b.Repropose(t.Context(), f.ws, s, "new.txt", "")
		if err != nil || len(ids) == 0 {
			t.Fatalf("Repropose of the stale creation = %v, %v", ids, err)
		}
		res, err = b.Resolve(t.Context(), Files{WS: f.ws}, s, []Decision{{Action: Accept}}, "")
		if err != nil || len(res.Conflicts) != 0 {
			t.Fatalf("accept after Repropose = %+v, %v", res, err)
		}
		b.Read(func() { st = s.Status() })
		if got := readString(t, path); got != "one\ntwo\n" || st != Accepted {
			t.Fatalf("after Repropose and accept: %q, status %s", got, st)
		}
	}
}

func readString(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
