package review

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/workspace"
)

// edits records what the book's decisions write, or fails.
type edits struct {
	got  []workspace.Edit
	who  []string // run/step of each edit
	fail error
}

func (e *edits) RecordEdits(ctx context.Context, runID, stepID string, ed []workspace.Edit) error {
	if e.fail != nil {
		return e.fail
	}
	for range ed {
		e.who = append(e.who, runID+"/"+stepID)
	}
	e.got = append(e.got, ed...)
	return nil
}

func (f *fixture) owned() {
	f.cs.RunID, f.cs.StepID = "r1", "s1"
}

// A line the user typed into the editor's buffer of the file while a
// `before` hunk was pending is in the recorded Before of the accept's
// write: a revert of the agent's edit keeps it (issue 38, point 1).
func TestAcceptRecordsTheUsersBufferLineAsBefore(t *testing.T) {
	f := newFixture(t)
	f.owned()
	b := NewBook()
	rec := &edits{}
	b.RecordEdits(rec)
	s := New(f.cs, Before)
	b.Put(s)
	typed := strings.Replace(f.base, "line 3\n", "line 3\n// USER-TYPED-DURING-RUN\n", 1)
	if err := f.ws.OpenOverlay("f.txt", []byte(typed), 1); err != nil {
		t.Fatal(err)
	}
	if res := f.resolve(b, s, 0, Accept); len(res.Applied) != 1 {
		t.Fatalf("accept: %+v", res)
	}
	if len(rec.got) != 1 || rec.who[0] != "r1/s1" {
		t.Fatalf("recorded %d edit(s) as %v, want one of r1/s1", len(rec.got), rec.who)
	}
	e := rec.got[0]
	if e.Path != "f.txt" || e.Before == nil || string(e.Before.Data) != typed {
		t.Fatalf("recorded Before is not the buffer with the user's line: %+v", e.Before)
	}
	if e.After == nil || !strings.Contains(string(e.After.Data), "// USER-TYPED-DURING-RUN") || !strings.Contains(string(e.After.Data), "agent five") {
		t.Fatalf("recorded After: %q", e.After.Data)
	}
}

// In `after` mode, rejecting a hunk takes it out of the file: that write
// is recorded too (from the agent's text to the text without the hunk);
// accepting the rejected hunk again records its putting back.
func TestAfterRejectAndUndoAreRecorded(t *testing.T) {
	f := newFixture(t)
	f.owned()
	if _, err := f.ws.Apply(t.Context(), f.cs, nil, nil); err != nil {
		t.Fatal(err)
	}
	b := NewBook()
	rec := &edits{}
	b.RecordEdits(rec)
	s := New(f.cs, After)
	b.Put(s)
	f.resolve(b, s, 1, Reject)
	without := numbered(40, map[int]string{5: "agent five\n"})
	if len(rec.got) != 1 || string(rec.got[0].Before.Data) != f.agent || string(rec.got[0].After.Data) != without {
		t.Fatalf("take-out recorded as %+v", rec.got)
	}
	f.resolve(b, s, 1, Accept)
	if len(rec.got) != 2 || string(rec.got[1].Before.Data) != without || string(rec.got[1].After.Data) != f.agent {
		t.Fatalf("putting back recorded as %+v", rec.got)
	}
}

// A change edited with `e` goes through Resolve like any other: what is
// written is the edited text, recorded as the run's (issue 38, point 7).
func TestEditedChangeIsRecorded(t *testing.T) {
	f := newFixture(t)
	f.owned()
	patch := strings.Replace(diff.Unified(f.cs.Files[0].Diff), "+agent five", "+edited five", 1)
	set, decisions, err := Edited(f.cs, patch)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBook()
	rec := &edits{}
	b.RecordEdits(rec)
	s := New(set, Before)
	b.Put(s)
	if _, err := b.Resolve(t.Context(), Files{WS: f.ws}, s, decisions, EditReason); err != nil {
		t.Fatal(err)
	}
	if len(rec.got) != 1 || rec.who[0] != "r1/s1" || !strings.Contains(string(rec.got[0].After.Data), "edited five") ||
		string(rec.got[0].After.Data) != f.disk() {
		t.Fatalf("the edited change is recorded as %+v; disk:\n%s", rec.got, f.disk())
	}
}

// A write that cannot be recorded is not made: the unit stays pending
// and the conflict says why.
func TestUnrecordableAcceptIsNotWritten(t *testing.T) {
	f := newFixture(t)
	f.owned()
	b := NewBook()
	b.RecordEdits(&edits{fail: errors.New("store closed")})
	s := New(f.cs, Before)
	b.Put(s)
	res := f.resolve(b, s, 0, Accept)
	if len(res.Applied) != 0 || len(res.Conflicts) != 1 || !strings.Contains(res.Conflicts[0].Message, "could not be recorded for undo") {
		t.Fatalf("accept: %+v", res)
	}
	if f.disk() != f.base {
		t.Fatalf("written although not recorded:\n%s", f.disk())
	}
	b.Read(func() {
		if st := s.Status(); st != Pending {
			t.Errorf("set status %s, want pending", st)
		}
	})
}
