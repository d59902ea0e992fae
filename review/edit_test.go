package review

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/workspace"
)

func editFixture() *workspace.ChangeSet {
	old := []byte("one\ntwo\nthree\n")
	nw := []byte("one\nTWO\nthree\n")
	other := []byte("x\n")
	return &workspace.ChangeSet{ID: "cs-1", Files: []*workspace.FileChange{
		{Path: "a.txt", Op: workspace.OpModify, Old: old, New: nw, Diff: diff.Compute("a.txt", "a.txt", old, nw)},
		{Path: "b.txt", Op: workspace.OpModify, Old: other, New: []byte("y\n"), Diff: diff.Compute("b.txt", "b.txt", other, []byte("y\n"))},
	}}
}

// Lines added past a hunk's original count are kept, with the header
// recounted, as git add -p does; the file left out is recorded as
// rejected, not dropped from the set.
func TestEditedRecountsAddedLines(t *testing.T) {
	cs := editFixture()
	patch := diff.Unified(cs.Files[0].Diff)
	patch = strings.Replace(patch, "+TWO\n", "+TWO\n+two and a half\n+two and three quarters\n", 1)
	set, decisions, err := Edited(cs, patch) // b.txt's section deleted
	if err != nil {
		t.Fatal(err)
	}
	if got := string(set.Files[0].New); got != "one\nTWO\ntwo and a half\ntwo and three quarters\nthree\n" {
		t.Fatalf("a.txt would be written as %q: the added lines were dropped", got)
	}
	if len(set.Files) != 2 || len(decisions) != 2 || decisions[0].Action != Accept || decisions[1].Path != "b.txt" || decisions[1].Action != Reject {
		t.Fatalf("decisions %+v over %d files: want a.txt accepted and b.txt rejected, both recorded", decisions, len(set.Files))
	}
}

// A line that is not a hunk line is refused with its line number.
func TestEditedRefusesBadLine(t *testing.T) {
	cs := editFixture()
	patch := strings.Replace(diff.Unified(cs.Files[0].Diff), "+TWO\n", "+TWO\nTWO again\n", 1)
	_, _, err := Edited(cs, patch)
	var ee *EditError
	if !errors.As(err, &ee) || ee.Line == 0 || !strings.Contains(ee.Error(), "TWO again") {
		t.Fatalf("err %v: want an EditError naming the line", err)
	}
}

// Book.Edit decides by the user's edit in both modes, through the same
// path as an accept: in `before` mode the edited hunk is written, merged
// onto the file as it is now (the user's edit elsewhere stays); in `after`
// mode the edit is written over the agent's hunk, merged likewise. The
// edited hunk keeps the id of the hunk it replaces, so what the step
// reports applied names the file; the other hunk stays pending.
func TestBookEditAppliesTheEditInEveryMode(t *testing.T) {
	for _, mode := range []Mode{Before, After} {
		t.Run(string(mode), func(t *testing.T) {
			fx := newFixture(t)
			if mode == After {
				fx.write(fx.agent) // applied when proposed
			}
			b := NewBook()
			s := New(fx.cs, mode)
			b.Put(s)
			first := fx.cs.Files[0].Diff.Hunks[0]
			// The user edits line 20 while the prompt is open.
			user := strings.Replace(fx.disk(), "line 20\n", "user twenty\n", 1)
			fx.write(user)
			var patch string
			b.Read(func() { patch = diff.Unified(s.PendingChangeOf("f.txt", first.ID).Files[0].Diff) })
			patch = strings.Replace(patch, "+agent five\n", "+edited five\n", 1)
			res, err := b.Edit(t.Context(), Files{WS: fx.ws}, s, "f.txt", first.ID, patch, EditReason)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Conflicts) > 0 || len(res.Applied) != 1 || res.Applied[0] != first.ID {
				t.Fatalf("edit: %+v (want hunk %s applied, under its own id)", res, first.ID)
			}
			got := fx.disk()
			for _, want := range []string{"edited five\n", "user twenty\n"} {
				if !strings.Contains(got, want) {
					t.Errorf("the file lacks %q:\n%s", want, got)
				}
			}
			if strings.Contains(got, "agent five") {
				t.Errorf("the agent's line is still there beside the edit:\n%s", got)
			}
			if thirty := strings.Contains(got, "agent thirty"); thirty != (mode == After) {
				t.Errorf("the other hunk (pending) is on disk: %v, want %v", thirty, mode == After)
			}
			var c Counts
			b.Read(func() { c = s.Counts() })
			if c.Pending != 1 || c.Accepted != 1 {
				t.Errorf("counts after editing one hunk: %+v", c)
			}
		})
	}
}

// An edit of a set applied already (`after` mode) whose lines the user
// changed since clashes: nothing is written and the hunk stays pending.
func TestBookEditAfterKeepsAClashingUserEdit(t *testing.T) {
	fx := newFixture(t)
	user := strings.Replace(fx.agent, "agent five\n", "user five\n", 1)
	fx.write(user)
	b := NewBook()
	s := New(fx.cs, After)
	b.Put(s)
	var patch string
	b.Read(func() { patch = diff.Unified(s.PendingChange().Files[0].Diff) })
	patch = strings.Replace(patch, "+agent five\n", "+edited five\n", 1)
	res, err := b.Edit(t.Context(), Files{WS: fx.ws}, s, "", "", patch, EditReason)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Conflicts) != 1 {
		t.Fatalf("want one conflict, got %+v", res)
	}
	if got := fx.disk(); got != user {
		t.Errorf("the user's edit was overwritten:\n%s", got)
	}
	var c Counts
	b.Read(func() { c = s.Counts() })
	if c.Pending != 2 {
		t.Errorf("counts after a clashing edit: %+v, want both pending", c)
	}
}
