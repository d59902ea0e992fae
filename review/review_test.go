package review

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/journal"
	"github.com/agentd/agentd/workspace"
)

func numbered(n int, repl map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if r, ok := repl[i]; ok {
			b.WriteString(r)
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// fixture is a real workspace on disk with f.txt, and a change set that
// changes lines 5 and 30 of it.
type fixture struct {
	t     *testing.T
	root  string
	ws    *workspace.Workspace
	base  string
	agent string
	cs    *workspace.ChangeSet
}

func newFixture(t *testing.T) *fixture {
	root := t.TempDir()
	base := numbered(40, nil)
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	agent := numbered(40, map[int]string{5: "agent five\n", 30: "agent thirty\n"})
	b := ws.Propose(t.Context())
	if err := b.Write("f.txt", []byte(agent)); err != nil {
		t.Fatal(err)
	}
	cs := b.Build()
	if len(cs.Files) != 1 || len(cs.Files[0].Diff.Hunks) != 2 {
		t.Fatalf("fixture change set: %+v", cs.Files)
	}
	return &fixture{t: t, root: root, ws: ws, base: base, agent: agent, cs: cs}
}

func (f *fixture) disk() string {
	data, err := os.ReadFile(filepath.Join(f.root, "f.txt"))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(data)
}

// journal is a journal of runs and change sets for the fixture's workspace,
// in a state dir of its own.
func (f *fixture) journal() *journal.Journal {
	f.t.Helper()
	j, err := journal.Open(f.t.TempDir(), f.ws.Root(), nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return j
}

func (f *fixture) write(s string) {
	if err := os.WriteFile(filepath.Join(f.root, "f.txt"), []byte(s), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) resolve(b *Book, s *Set, hunk int, action Action) *Result {
	f.t.Helper()
	d := Decision{Action: action}
	if hunk >= 0 {
		d.Path, d.HunkID = "f.txt", f.cs.Files[0].Diff.Hunks[hunk].ID
	}
	res, err := b.Resolve(f.t.Context(), Files{WS: f.ws}, s, []Decision{d}, "because")
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

func TestBeforeAcceptRejectUndo(t *testing.T) {
	f := newFixture(t)
	b := NewBook()
	s := New(f.cs, Before)
	b.Put(s)

	res := f.resolve(b, s, 0, Accept)
	if len(res.Applied) != 1 || res.Status != Partial {
		t.Fatalf("accept hunk 0: %+v", res)
	}
	if got, want := f.disk(), numbered(40, map[int]string{5: "agent five\n"}); got != want {
		t.Fatalf("disk after accepting hunk 0:\n%s", got)
	}
	res = f.resolve(b, s, 1, Reject)
	if len(res.Rejected) != 1 || res.Status != Partial {
		t.Fatalf("reject hunk 1: %+v", res)
	}
	if got := f.disk(); strings.Contains(got, "agent thirty") {
		t.Fatal("a rejected hunk was written in before mode")
	}
	oc, err := b.Wait(t.Context(), s)
	if err != nil || len(oc.Applied) != 1 || len(oc.Rejected) != 1 || oc.Rejected[0].Reason != "because" {
		t.Fatalf("outcome = %+v, %v", oc, err)
	}
	// Undo the rejection: the hunk goes in after all.
	res = f.resolve(b, s, 1, Accept)
	if len(res.Applied) != 1 || res.Status != Accepted || f.disk() != f.agent {
		t.Fatalf("undo of the rejection: %+v, disk:\n%s", res, f.disk())
	}
	b.Read(func() {
		if len(s.Rejected) != 0 {
			t.Errorf("an undone rejection is still listed: %+v", s.Rejected)
		}
	})
	// Reject an accepted hunk: it is taken out, the user's edit elsewhere stays.
	f.write(strings.Replace(f.disk(), "line 1\n", "user one\n", 1))
	res = f.resolve(b, s, 0, Reject)
	want := numbered(40, map[int]string{1: "user one\n", 30: "agent thirty\n"})
	if len(res.Rejected) != 1 || f.disk() != want {
		t.Fatalf("revert of an accepted hunk: %+v, disk:\n%s", res, f.disk())
	}
}

func TestAfterRejectTakesOutAndUndo(t *testing.T) {
	f := newFixture(t)
	if _, err := f.ws.Apply(t.Context(), f.cs, nil, nil); err != nil {
		t.Fatal(err)
	}
	b := NewBook()
	s := New(f.cs, After)
	b.Put(s)
	f.resolve(b, s, 0, Accept)
	if f.disk() != f.agent {
		t.Fatal("accepting in after mode changed the file")
	}
	f.resolve(b, s, 1, Reject)
	if got, want := f.disk(), numbered(40, map[int]string{5: "agent five\n"}); got != want {
		t.Fatalf("after reject:\n%s", got)
	}
	// Reject all does not revert what was accepted; accept all does not
	// override a rejection.
	res := f.resolve(b, s, -1, Reject)
	if len(res.Rejected) != 0 || !strings.Contains(f.disk(), "agent five") {
		t.Fatalf("reject all: %+v, disk:\n%s", res, f.disk())
	}
	if res = f.resolve(b, s, -1, Accept); len(res.Applied) != 0 || strings.Contains(f.disk(), "agent thirty") {
		t.Fatalf("accept all: %+v, disk:\n%s", res, f.disk())
	}
	// Rejecting the accepted hunk by its id takes it out; accepting it by
	// its id undoes that rejection.
	if res = f.resolve(b, s, 0, Reject); len(res.Rejected) != 1 || f.disk() != f.base {
		t.Fatalf("reject hunk 0: %+v, disk:\n%s", res, f.disk())
	}
	res = f.resolve(b, s, 0, Accept)
	if len(res.Applied) != 1 || f.disk() != numbered(40, map[int]string{5: "agent five\n"}) {
		t.Fatalf("undo: %+v, disk:\n%s", res, f.disk())
	}
	res = f.resolve(b, s, 1, Accept)
	if res.Status != Accepted || f.disk() != f.agent {
		t.Fatalf("undo of the other rejection: %+v, disk:\n%s", res, f.disk())
	}
}

// The user types while hunks are pending: the far hunk is rebased (new
// position, same id), the one whose lines the user edited is stale and
// cannot be accepted, the user's text is kept.
func TestRebaseOntoUserEdits(t *testing.T) {
	f := newFixture(t)
	b := NewBook()
	s := New(f.cs, Before)
	b.Put(s)
	far, near := f.cs.Files[0].Diff.Hunks[0], f.cs.Files[0].Diff.Hunks[1]

	if changed := b.Rebase("f.txt", []byte(f.base)); changed != nil {
		t.Fatalf("rebase onto the unchanged base changed %d sets", len(changed))
	}
	user := "new top\nnew top 2\n" + numbered(40, map[int]string{30: "user thirty\n"})
	if changed := b.Rebase("f.txt", []byte(user)); len(changed) != 1 {
		t.Fatalf("rebase changed %d sets, want 1", len(changed))
	}
	var pending, stale []*Hunk
	b.Read(func() {
		for _, h := range s.Files[0].Hunks {
			switch h.Status {
			case Pending:
				pending = append(pending, h)
			case Stale:
				stale = append(stale, h)
			}
		}
	})
	if len(pending) != 1 || pending[0].ID != far.ID || pending[0].Hunk.NewStart != far.NewStart+2 {
		t.Fatalf("pending after rebase = %+v; want the far hunk moved down by 2", pending)
	}
	if len(stale) != 1 || stale[0].ID != near.ID {
		t.Fatalf("stale after rebase = %+v; want the hunk at line 30", stale)
	}
	f.write(user) // the user saved
	res, err := b.Resolve(t.Context(), Files{WS: f.ws}, s, []Decision{{Action: Accept}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) != 1 || len(res.Conflicts) != 1 || res.Conflicts[0].Unit != near.ID {
		t.Fatalf("accept all: %+v", res)
	}
	want := "new top\nnew top 2\n" + numbered(40, map[int]string{5: "agent five\n", 30: "user thirty\n"})
	if f.disk() != want {
		t.Fatalf("disk:\n%s\nwant:\n%s", f.disk(), want)
	}
	// The user's clash undone: the stale hunk merges again and is pending.
	if changed := b.Rebase("f.txt", []byte("new top\nnew top 2\n"+numbered(40, map[int]string{5: "agent five\n"}))); len(changed) != 1 {
		t.Fatal("undoing the clash did not rebase")
	}
	b.Read(func() {
		if st := s.Status(); st != Partial {
			t.Errorf("status = %s, want partial (one accepted, one pending)", st)
		}
	})
}

func TestSelectErrors(t *testing.T) {
	f := newFixture(t)
	b := NewBook()
	s := New(f.cs, Before)
	b.Put(s)
	_, err := b.Resolve(t.Context(), Files{WS: f.ws}, s, []Decision{{Action: Reject}, {HunkID: "nope", Action: Accept}}, "")
	if de, ok := err.(*DecisionError); !ok || de.Index != 1 || de.Field != "hunkId" {
		t.Fatalf("unknown hunk: %v", err)
	}
	_, err = b.Resolve(t.Context(), Files{WS: f.ws}, s, []Decision{{Action: "maybe"}}, "")
	if de, ok := err.(*DecisionError); !ok || de.Field != "action" {
		t.Fatalf("bad action: %v", err)
	}
	if f.disk() != f.base {
		t.Fatal("a refused resolve changed the file")
	}
	b.Read(func() {
		if st := s.Status(); st != Pending {
			t.Errorf("a refused resolve decided units: status %s", st)
		}
	})
}

// After a before-mode accept the accepted hunk is in the file; the user
// then types far from every hunk, twice. The pending hunk must stay
// pending both times: the first rebase takes the user's text (which holds
// the accepted hunk) as the set's Old, so the second must not apply the
// accepted hunk onto it again.
func TestRebaseAfterAcceptKeepsPendingHunks(t *testing.T) {
	f := newFixture(t)
	b := NewBook()
	s := New(f.cs, Before)
	b.Put(s)
	if res := f.resolve(b, s, 0, Accept); len(res.Applied) != 1 {
		t.Fatalf("accept hunk 0: %+v", res)
	}
	onDisk := f.disk()
	statuses := func() map[Status]int {
		n := map[Status]int{}
		b.Read(func() {
			for _, h := range s.Files[0].Hunks {
				n[h.Status]++
			}
		})
		return n
	}
	for i, top := range []string{"typed 1\n", "typed 1\ntyped 2\n", "typed 1\ntyped 2\ntyped 3\n"} {
		b.Rebase("f.txt", []byte(top+onDisk))
		if n := statuses(); n[Accepted] != 1 || n[Pending] != 1 || n[Stale] != 0 {
			t.Fatalf("after rebase %d the hunks are %v; want one accepted and one pending", i+1, n)
		}
	}
	// The pending hunk still goes in where it belongs, and the accepted
	// one can still be taken out by its id.
	user := "typed 1\ntyped 2\ntyped 3\n" + onDisk
	f.write(user)
	if res, err := b.Resolve(t.Context(), Files{WS: f.ws}, s, []Decision{{Action: Accept}}, ""); err != nil || len(res.Conflicts) != 0 || res.Status != Accepted {
		t.Fatalf("accept the rest: %+v %v", res, err)
	}
	if want := "typed 1\ntyped 2\ntyped 3\n" + f.agent; f.disk() != want {
		t.Fatalf("disk:\n%s\nwant:\n%s", f.disk(), want)
	}
	if res := f.resolve(b, s, 0, Reject); len(res.Rejected) != 1 || len(res.Conflicts) != 0 {
		t.Fatalf("taking the first accepted hunk out again: %+v", res)
	}
	if want := "typed 1\ntyped 2\ntyped 3\n" + numbered(40, map[int]string{30: "agent thirty\n"}); f.disk() != want {
		t.Errorf("disk after taking hunk 0 out:\n%s\nwant:\n%s", f.disk(), want)
	}
}

// periodic is a before-mode review of f.go, a file that repeats the same
// three lines over and over, with two hunks (blocks 2 and 15 return an
// error): a hunk's context matches at many line numbers.
type periodic struct {
	t           *testing.T
	root        string
	ws          *workspace.Workspace
	b           *Book
	s           *Set
	base, agent string // the file before and after both hunks
	hunkB       string // the second hunk's id
}

func newPeriodic(t *testing.T) *periodic {
	pf := &periodic{t: t, root: t.TempDir()}
	for i := 0; i < 20; i++ {
		b := "{\nreturn nil\n}\n"
		pf.base += b
		switch i {
		case 2:
			b = strings.Replace(b, "return nil", "return errA", 1)
		case 15:
			b = strings.Replace(b, "return nil", "return errB", 1)
		}
		pf.agent += b
	}
	pf.writeFile(pf.base)
	ws, err := workspace.Open(pf.root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	pb := ws.Propose(t.Context())
	if err := pb.Write("f.go", []byte(pf.agent)); err != nil {
		t.Fatal(err)
	}
	cs := pb.Build()
	if len(cs.Files) != 1 || len(cs.Files[0].Diff.Hunks) != 2 {
		t.Fatalf("change set: %+v", cs.Files)
	}
	pf.ws, pf.hunkB = ws, cs.Files[0].Diff.Hunks[1].ID
	pf.b, pf.s = NewBook(), New(cs, Before)
	pf.b.Put(pf.s)
	return pf
}

func (pf *periodic) writeFile(text string) {
	if err := os.WriteFile(filepath.Join(pf.root, "f.go"), []byte(text), 0o644); err != nil {
		pf.t.Fatal(err)
	}
}

func (pf *periodic) disk() string {
	data, err := os.ReadFile(filepath.Join(pf.root, "f.go"))
	if err != nil {
		pf.t.Fatal(err)
	}
	return string(data)
}

// typeText is the user's buffer becoming text, one rebase per state.
func (pf *periodic) typeText(texts ...string) {
	for _, text := range texts {
		pf.b.Rebase("f.go", []byte(text))
	}
	pf.writeFile(texts[len(texts)-1])
}

func (pf *periodic) decide(id string, a Action) *Result {
	pf.t.Helper()
	res, err := pf.b.Resolve(pf.t.Context(), Files{WS: pf.ws}, pf.s, []Decision{{Path: "f.go", HunkID: id, Action: a}}, "because")
	if err != nil {
		pf.t.Fatal(err)
	}
	return res
}

// finish accepts the pending first hunk and then rejects the second again,
// checking the file after each: both land where they belong in top+file.
func (pf *periodic) finish(top string) {
	pf.t.Helper()
	if res, err := pf.b.Resolve(pf.t.Context(), Files{WS: pf.ws}, pf.s, []Decision{{Action: Accept}}, ""); err != nil || len(res.Conflicts) != 0 || res.Status != Accepted {
		pf.t.Fatalf("accept the rest: %+v %v", res, err)
	}
	if want := top + pf.agent; pf.disk() != want {
		pf.t.Fatalf("disk after accepting the rest:\n%s\nwant:\n%s", pf.disk(), want)
	}
	if res := pf.decide(pf.hunkB, Reject); len(res.Rejected) != 1 || len(res.Conflicts) != 0 {
		pf.t.Fatalf("reject the second hunk again: %+v", res)
	}
	if want := top + strings.Replace(pf.agent, "return errB", "return nil", 1); pf.disk() != want {
		pf.t.Fatalf("disk after rejecting it again:\n%s\nwant:\n%s", pf.disk(), want)
	}
}

// A rejection undone after the user typed lines above the rejected hunk
// (and the open hunks were rebased onto that text) puts the hunk in where
// its lines are now, not at its old line numbers, where the same lines
// are too.
func TestUndoRejectionAfterRebase(t *testing.T) {
	pf := newPeriodic(t)
	if res := pf.decide(pf.hunkB, Reject); len(res.Rejected) != 1 {
		t.Fatalf("reject the second hunk: %+v", res)
	}
	// Three lines (the file's period) typed above both hunks, one at a time.
	pf.typeText("// 1\n"+pf.base, "// 1\n// 2\n"+pf.base, "// 1\n// 2\n// 3\n"+pf.base)
	top := "// 1\n// 2\n// 3\n"
	if res := pf.decide(pf.hunkB, Accept); len(res.Applied) != 1 || len(res.Conflicts) != 0 {
		t.Fatalf("undo of the rejection after the rebase: %+v", res)
	}
	if want := top + strings.Replace(pf.agent, "return errA", "return nil", 1); pf.disk() != want {
		t.Fatalf("disk after undoing the rejection:\n%s\nwant:\n%s", pf.disk(), want)
	}
	pf.finish(top)
}

// A rejected hunk the user typed into cannot follow the typing; it keeps
// the text it was computed against, and once the user takes the edit back
// an undo of the rejection merges it from there, still in its place after
// more lines were typed above it.
func TestUndoRejectionAfterEditIntoIt(t *testing.T) {
	pf := newPeriodic(t)
	if res := pf.decide(pf.hunkB, Reject); len(res.Rejected) != 1 {
		t.Fatalf("reject the second hunk: %+v", res)
	}
	into := strings.Replace(pf.base, "return nil", "return nilX", 16) // the 16th block's line: the hunk's own
	if strings.Count(into, "nilX") != 16 {
		t.Fatal("fixture")
	}
	into = strings.Replace(into, "return nilX", "return nil", 15)
	top := "// 1\n// 2\n// 3\n"
	pf.typeText(into, top+into, top+pf.base)
	if res := pf.decide(pf.hunkB, Accept); len(res.Applied) != 1 || len(res.Conflicts) != 0 {
		t.Fatalf("undo of the rejection: %+v", res)
	}
	if want := top + strings.Replace(pf.agent, "return errA", "return nil", 1); pf.disk() != want {
		t.Fatalf("disk after undoing the rejection:\n%s\nwant:\n%s", pf.disk(), want)
	}
	pf.finish(top)
}
