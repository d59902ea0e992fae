package rpc

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentd/agentd/review"
)

// expectNoticeCounts checks the last agentd/changes/didChange of the
// scenario's change set: its set counts are the ones the script names (kv)
// and those of review's one definition (review.Set.Counts), which the
// ChangeSet carries too; each file it lists carries review.File.Counts.
// The editors take these as they are (issue 25), so they must be the
// whole set's, not a sum over the files of the notice.
func (sc *scenario) expectNoticeCounts(lineNo int, kv map[string]string) {
	t := sc.t
	t.Helper()
	sc.change() // notices are written before the answer of a later request
	var last *ChangesDidChangeParams
	sc.ed.mu.Lock()
	for _, n := range sc.ed.notes {
		var p ChangesDidChangeParams
		if n.Method == "agentd/changes/didChange" && json.Unmarshal(n.Params, &p) == nil && p.ChangeID == sc.changeID {
			last = &p
		}
	}
	sc.ed.mu.Unlock()
	if last == nil {
		t.Fatalf("line %d: no agentd/changes/didChange for %s", lineNo, sc.changeID)
	}
	want := review.Counts{}
	for k, dst := range map[string]*int{"pending": &want.Pending, "accepted": &want.Accepted, "rejected": &want.Rejected, "stale": &want.Stale, "total": &want.Total} {
		n, err := strconv.Atoi(kv[k])
		if err != nil {
			t.Fatalf("line %d: %s=%q: give every count as a number", lineNo, k, kv[k])
		}
		*dst = n
	}
	if review.Counts(last.Counts) != want {
		t.Errorf("line %d: didChange counts %+v, want %+v", lineNo, last.Counts, want)
	}
	srv := sc.ed.srv
	c, ok := srv.changes.Get(sc.changeID)
	if !ok {
		t.Fatalf("line %d: the book has no set %s", lineNo, sc.changeID)
	}
	var setCounts review.Counts
	fileCounts := map[string]review.Counts{}
	srv.changes.Read(func() {
		setCounts = c.Counts()
		for _, f := range c.Files {
			fileCounts[sc.uri(f.Path)] = f.Counts()
		}
	})
	if review.Counts(last.Counts) != setCounts {
		t.Errorf("line %d: didChange counts %+v, review's %+v", lineNo, last.Counts, setCounts)
	}
	if got := sc.change().Counts; got != last.Counts {
		t.Errorf("line %d: didChange counts %+v, the ChangeSet's %+v", lineNo, last.Counts, got)
	}
	if len(last.Files) == 0 {
		t.Errorf("line %d: the didChange lists no file", lineNo)
	}
	for _, f := range last.Files {
		if w, ok := fileCounts[f.URI]; !ok || review.Counts(f.Counts) != w {
			t.Errorf("line %d: %s: didChange counts %+v, review's %s", lineNo, sc.relOfURI(f.URI), f.Counts, fmtCounts(w, ok))
		}
	}
}

func fmtCounts(c review.Counts, ok bool) string {
	if !ok {
		return "(not in the set)"
	}
	return fmt.Sprintf("%+v", c)
}
