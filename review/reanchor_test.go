package review

import (
	"testing"
)

// An edit to a context line of a pending hunk (the lines around the lines
// it changes) re-anchors the hunk: it stays pending, and accepting it keeps
// the user's edit beside the agent's. Only an edit to the changed lines
// themselves makes it stale, and taking that edit back clears the mark.
func TestContextEditReanchors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		line  int // the line of f.txt the user edits (hunk 0 changes line 5)
		stale bool
	}{
		{"context line just above", 4, false},
		{"context line two above", 3, false},
		{"context line three above", 2, false},
		{"context line just below", 6, false},
		{"context line three below", 8, false},
		{"the changed line", 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			b := NewBook()
			s := New(f.cs, Before)
			b.Put(s)
			hunk := f.cs.Files[0].Diff.Hunks[0]
			user := numbered(40, map[int]string{tc.line: "user edit\n"})
			b.Rebase("f.txt", []byte(user))
			var st Status
			var id string
			b.Read(func() {
				for _, h := range s.Files[0].Hunks {
					if h.Hunk.NewStart < 20 {
						st, id = h.Status, h.ID
					}
				}
			})
			if tc.stale {
				if st != Stale {
					t.Fatalf("hunk after an edit of its changed line: %s, want stale", st)
				}
				b.Rebase("f.txt", []byte(f.base)) // undo (u)
				b.Read(func() {
					for _, h := range s.Files[0].Hunks {
						if h.Hunk.NewStart < 20 && h.Status != Pending {
							t.Errorf("after the edit was taken back the hunk is %s, want pending", h.Status)
						}
					}
				})
				return
			}
			if st != Pending {
				t.Fatalf("hunk after an edit of context line %d: %s, want pending (re-anchored)", tc.line, st)
			}
			f.write(user)
			res, err := b.Resolve(t.Context(), Files{WS: f.ws}, s, []Decision{{Path: "f.txt", HunkID: id, Action: Accept}}, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Applied) != 1 || len(res.Conflicts) != 0 {
				t.Fatalf("accept the re-anchored hunk (was %s): %+v", hunk.ID, res)
			}
			want := numbered(40, map[int]string{tc.line: "user edit\n", 5: "agent five\n"})
			if got := f.disk(); got != want {
				t.Fatalf("disk:\n%s\nwant the user's line %d and the agent's line 5:\n%s", got, tc.line, want)
			}
		})
	}
}

// A file's only hunk made stale by an edit of its changed line is pending
// again once the user takes the edit back (u), although the text is then
// the very text the hunk was computed on.
func TestUndoOfEditClearsStaleOfOnlyHunk(t *testing.T) {
	f := newFixture(t)
	b := NewBook()
	// One hunk only: no other hunk's rebase moves the file's base along.
	agent := numbered(40, map[int]string{5: "agent five\n"})
	bl := f.ws.Propose(t.Context())
	if err := bl.Write("f.txt", []byte(agent)); err != nil {
		t.Fatal(err)
	}
	cs := bl.Build()
	s := New(cs, Before)
	b.Put(s)
	b.Rebase("f.txt", []byte(numbered(40, map[int]string{5: "user five\n"})))
	status := func() Status {
		var st Status
		b.Read(func() { st = s.Files[0].Hunks[0].Status })
		return st
	}
	if st := status(); st != Stale {
		t.Fatalf("after an edit of the changed line: %s, want stale", st)
	}
	b.Rebase("f.txt", []byte(f.base))
	if st := status(); st != Pending {
		t.Fatalf("after the edit was taken back: %s, want pending", st)
	}
}
