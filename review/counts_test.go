package review

import (
	"io/fs"
	"testing"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/workspace"
)

// whole and counts come from one definition: a create is one unit even
// though its hunks are listed, a symbolic link is one unit as
// workspace.FileChange.WholeFile says, and the counts count units.
func TestWholeAndCounts(t *testing.T) {
	old, nw := []byte("one\ntwo\n"), []byte("one\nTWO\n")
	cs := &workspace.ChangeSet{ID: "cs", Files: []*workspace.FileChange{
		{Path: "new.txt", Op: workspace.OpCreate, New: []byte("x\ny\n"), Diff: diff.Compute("", "new.txt", nil, []byte("x\ny\n"))},
		{Path: "link", Op: workspace.OpModify, Mode: fs.ModeSymlink | 0o777, Old: []byte("a"), New: []byte("b"), Diff: diff.Compute("link", "link", []byte("a"), []byte("b"))},
		{Path: "m.txt", Op: workspace.OpModify, Old: old, New: nw, Diff: diff.Compute("m.txt", "m.txt", old, nw)},
	}}
	s := New(cs, Before)
	for i, want := range []bool{true, true, false} {
		if got := s.Files[i].WholeFile(); got != want || got != cs.Files[i].WholeFile() {
			t.Errorf("%s: whole %v, want %v (workspace says %v)", s.Files[i].Path, got, want, cs.Files[i].WholeFile())
		}
	}
	if len(s.Files[0].Hunks) == 0 {
		t.Errorf("a create's hunks are listed for display")
	}
	s.Files[0].Status = Accepted
	if c := s.Counts(); c != (Counts{Pending: 2, Accepted: 1, Total: 3}) {
		t.Fatalf("set counts %+v", c)
	}
	if c := s.Files[0].Counts(); c != (Counts{Accepted: 1, Total: 1}) {
		t.Fatalf("a whole file counts as one unit: %+v", c)
	}
}
