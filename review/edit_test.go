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
