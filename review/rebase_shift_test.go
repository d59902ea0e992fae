package review

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/workspace"
)

// bigSet is an n-line file with a pending hunk on every 10th line.
func bigSet(t testing.TB, n int) (string, *Book, *Set) {
	root := t.TempDir()
	var base, agent strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&base, "line %d\n", i)
		if i%10 == 6 {
			fmt.Fprintf(&agent, "line %d changed\n", i)
		} else {
			fmt.Fprintf(&agent, "line %d\n", i)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(base.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	p := ws.Propose(t.Context())
	if err := p.Write("f.txt", []byte(agent.String())); err != nil {
		t.Fatal(err)
	}
	b := NewBook()
	s := New(p.Build(), Before)
	b.Put(s)
	return base.String(), b, s
}

// The fast path of a rebase (edits away from every hunk) gives the text
// and hunks the hunk-by-hunk three-way merge gives, and keeps hunk ids; an
// edit near a hunk takes the three-way merge. Random edits, both paths
// compared on the same state.
func TestShiftMergeAgreesWithMerge3(t *testing.T) {
	base, b, s := bigSet(t, 400)
	f := s.Files[0]
	rng := rand.New(rand.NewPCG(1, 2))
	lines := strings.SplitAfter(base, "\n")
	lines = lines[:len(lines)-1]
	fast, slow := 0, 0
	for round := 0; round < 200; round++ {
		// One random line edit: insert, delete or change a line.
		user := append([]string(nil), lines...)
		i := rng.IntN(len(user))
		switch rng.IntN(3) {
		case 0:
			user = append(user[:i], append([]string{fmt.Sprintf("typed %d\n", round)}, user[i:]...)...)
		case 1:
			user = append(user[:i], user[i+1:]...)
		default:
			user[i] = strings.TrimSuffix(user[i], "\n") + " x\n"
		}
		text := []byte(strings.Join(user, ""))
		var open []*Hunk
		for _, h := range f.Hunks {
			if h.Status == Pending {
				open = append(open, h)
			}
		}
		got, ok := f.shiftMerge(text, open)
		if !ok {
			slow++
			continue
		}
		fast++
		var hunks []diff.Hunk
		for _, h := range open {
			hunks = append(hunks, h.Hunk)
		}
		theirs, err := diff.Apply(f.Old, hunks)
		if err != nil {
			t.Fatal(err)
		}
		want, conflicts := diff.Merge3(f.Old, text, theirs)
		if len(conflicts) != 0 || string(got) != string(want) {
			t.Fatalf("round %d (line %d): fast path\n%s\nthree-way merge (%d conflicts)\n%s", round, i, got, len(conflicts), want)
		}
	}
	if fast < 20 || slow < 20 {
		t.Fatalf("edits: %d fast, %d slow; want both paths exercised", fast, slow)
	}
	// Through Rebase: typing a line at the top keeps every id and moves every hunk.
	var ids []string
	for _, h := range f.Hunks {
		ids = append(ids, h.ID)
	}
	if ch := b.Rebase("f.txt", []byte("typed\n"+base)); len(ch) != 1 {
		t.Fatalf("rebase changed %d sets", len(ch))
	}
	for i, h := range f.Hunks {
		if h.ID != ids[i] || h.Status != Pending || h.Hunk.OldStart != 10*i+3+1 {
			t.Fatalf("hunk %d after typing above: id %s (was %s) %s at %d", i, h.ID, ids[i], h.Status, h.Hunk.OldStart)
		}
	}
}

// BenchmarkRebaseTypingAbove is one keystroke above 200 pending hunks in a
// 2,000-line file: the fast path (go test -bench RebaseTyping ./review/).
func BenchmarkRebaseTypingAbove(b *testing.B) {
	base, bk, _ := bigSet(b, 2000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if ch := bk.Rebase("f.txt", []byte(fmt.Sprintf("r%d\n", i)+base)); len(ch) != 1 {
			b.Fatal("no change")
		}
	}
}
