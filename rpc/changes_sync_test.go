package rpc

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// afterSet runs the proposal plan in review "after" (the change is on
// disk) and returns the scenario, holding the set, and its two hunks.
func afterSet(t *testing.T) (sc *scenario, first, second string) {
	t.Helper()
	sc = proposalScenario(t, "after", false)
	sc.do(0, "start")
	sc.do(0, "answer-approval allow_once step=edit")
	p := sc.waitEvent("changeProposed", map[string]string{"step": "edit"})
	sc.changeID = p.Event.ChangeID
	sc.do(0, "expect-run completed")
	var cs ChangeSetInfo
	sc.ed.mustCall("agentd/changes/get", map[string]any{"changeId": sc.changeID}, &cs)
	if len(cs.Files) != 1 || len(cs.Files[0].Hunks) != 2 {
		t.Fatalf("the change set is not one file with two hunks: %+v", cs)
	}
	return sc, cs.Files[0].Hunks[0].ID, cs.Files[0].Hunks[1].ID
}

// otherProcess is a second agentd process on the scenario's workspace and
// state dir (agentd review at a terminal): its own journal, book and
// workspace, deciding on disk as the terminal does.
type otherProcess struct {
	t    *testing.T
	book *review.Book
	ws   *workspace.Workspace
}

func newOtherProcess(t *testing.T, sc *scenario) *otherProcess {
	t.Helper()
	root, err := filepath.EvalSymlinks(sc.root)
	if err != nil {
		t.Fatal(err)
	}
	j, err := session.OpenJournal(sc.stateDir, root, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	b := session.NewBook(j, func(id string, err error) { t.Errorf("the other process could not record %s: %v", id, err) })
	t.Cleanup(b.Close)
	if _, err := b.Load(); err != nil {
		t.Fatal(err)
	}
	return &otherProcess{t: t, book: b, ws: ws}
}

// decide makes decisions on the set with the given id, as agentd review.
func (o *otherProcess) decide(id string, ds ...review.Decision) *review.Result {
	o.t.Helper()
	s, ok := o.book.Get(id)
	if !ok {
		o.t.Fatalf("the other process does not see change set %s", id)
	}
	res, err := o.book.Resolve(o.t.Context(), review.Files{WS: o.ws}, s, ds, "rejected at the terminal")
	if err != nil {
		o.t.Fatalf("the other process's decision: %v", err)
	}
	return res
}

// changeNotes returns the agentd/changes/didChange notices of set id
// received from index from on.
func changeNotes(ed *editor, from int, id string) []ChangesDidChangeParams {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	var out []ChangesDidChangeParams
	for _, n := range ed.notes[min(from, len(ed.notes)):] {
		var p ChangesDidChangeParams
		if n.Method == "agentd/changes/didChange" && json.Unmarshal(n.Params, &p) == nil && p.ChangeID == id {
			out = append(out, p)
		}
	}
	return out
}

func noteCount(ed *editor) int {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	return len(ed.notes)
}

// waitChangeNote waits for a didChange of set id from index from on.
func waitChangeNote(t *testing.T, ed *editor, from int, id string) ChangesDidChangeParams {
	t.Helper()
	n, _ := ed.waitNote(from, func(n note) bool {
		var p ChangesDidChangeParams
		return n.Method == "agentd/changes/didChange" && json.Unmarshal(n.Params, &p) == nil && p.ChangeID == id
	})
	var p ChangesDidChangeParams
	if err := json.Unmarshal(n.Params, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// A hunk taken out at the terminal (agentd review, another process) while
// the editor's daemon holds its set reaches the editor on its own (no
// request of the editor's; the daemon looks every ChangesSyncInterval;
// no timing is asserted): the set's new status and counts, the file with the hunk
// rejected, and `at` placing the hunks in the file as it now is on disk
// (which the other process changed). The daemon's own decision after that
// is not echoed back as a second notice.
func TestDecisionInAnotherProcessReachesEditor(t *testing.T) {
	sc, first, second := afterSet(t)

	other := newOtherProcess(t, sc)
	from := noteCount(sc.ed)
	other.decide(sc.changeID, review.Decision{Path: "notes.txt", HunkID: first, Action: review.Reject})
	n := waitChangeNote(t, sc.ed, from, sc.changeID)
	if n.Status != review.Partial || review.Counts(n.Counts) != (review.Counts{Pending: 1, Rejected: 1, Total: 2}) {
		t.Fatalf("notice: status %s counts %+v, want partial with one rejected and one pending", n.Status, n.Counts)
	}
	if len(n.Files) != 1 || len(n.Files[0].Hunks) != 2 || n.Files[0].Hunks[0].Status != review.Rejected || n.Files[0].Hunks[1].Status != review.Pending {
		t.Fatalf("notice files: %+v, want notes.txt with %s rejected and %s pending", n.Files, first, second)
	}
	if disk := sc.disk("notes.txt"); !strings.Contains(disk, "line 2\n") || !strings.Contains(disk, "line nineteen\n") {
		t.Fatalf("the other process did not take the hunk out on disk:\n%s", disk)
	}
	// The notice's `at` is where the hunks are in the file as it now is.
	sc.expectAt(0, "notes.txt", map[string]string{"moved": "no"})
	// agentd/changes/get agrees with the notice.
	var cs ChangeSetInfo
	sc.ed.mustCall("agentd/changes/get", map[string]any{"changeId": sc.changeID}, &cs)
	if cs.Status != review.Partial || cs.Files[0].Hunks[0].Status != review.Rejected {
		t.Errorf("agentd/changes/get after the notice: %s, %+v", cs.Status, cs.Files[0].Hunks)
	}

	// The editor keeps the second hunk: the set is decided, and no notice
	// follows the daemon's own record.
	from = noteCount(sc.ed)
	var res ResolveResult
	sc.ed.mustCall("agentd/changes/resolve", map[string]any{"changeId": sc.changeID,
		"decisions": []map[string]any{{"uri": sc.uri("notes.txt"), "hunkId": second, "action": "accept"}}}, &res)
	if res.Status != review.Partial || len(res.Applied) != 1 {
		t.Fatalf("resolve in the editor: %+v", res)
	}
	time.Sleep(3 * ChangesSyncInterval)
	if got := changeNotes(sc.ed, from, sc.changeID); len(got) != 0 {
		t.Errorf("the daemon's own record came back as %d notice(s): %+v", len(got), got)
	}
	// And the terminal's book takes the editor's decision before its next
	// one: both decisions are in the journal.
	recs, err := review.Recorded(other.book.Journal(), "")
	if err != nil || len(recs) != 1 {
		t.Fatalf("recorded: %v %v", recs, err)
	}
	if got := recs[0].Counts(); got != (review.Counts{Accepted: 1, Rejected: 1, Total: 2}) {
		t.Errorf("the journal holds %+v, want both decisions", got)
	}
}

// A set a run waits on (review before) that another process decides in
// full is finished in the daemon too: the editor is told it is accepted,
// and the run goes on.
func TestSetFinishedInAnotherProcessEndsTheWait(t *testing.T) {
	sc := proposalScenario(t, "before", false)
	sc.do(0, "start")
	p := sc.waitEvent("changeProposed", map[string]string{"step": "edit"})
	sc.changeID = p.Event.ChangeID
	other := newOtherProcess(t, sc)
	from := noteCount(sc.ed)
	if res := other.decide(sc.changeID, review.Decision{Action: review.Accept}); res.Status != review.Accepted {
		t.Fatalf("the other process: %+v", res)
	}
	n := waitChangeNote(t, sc.ed, from, sc.changeID)
	if n.Status != review.Accepted || review.Counts(n.Counts) != (review.Counts{Accepted: 2, Total: 2}) || len(n.Files) != 1 {
		t.Fatalf("notice: %+v, want the set accepted", n)
	}
	sc.do(0, "expect-run completed")
	if disk := sc.disk("notes.txt"); !strings.Contains(disk, "line two\n") || !strings.Contains(disk, "line nineteen\n") {
		t.Fatalf("the accepted change is not on disk:\n%s", disk)
	}
}

// Two processes decide one set: the editor's decision made on a view
// older than the terminal's is refused once (-32005, naming the set and
// the hunk), nothing is done, and the editor has the new state; made
// again, it goes through. A decision on the other hunk never overwrites
// the terminal's in the journal.
func TestStaleDecisionRefusedOnce(t *testing.T) {
	old := ChangesSyncInterval
	ChangesSyncInterval = time.Hour // the editor decides before the daemon looks
	t.Cleanup(func() { ChangesSyncInterval = old })
	sc, first, second := afterSet(t)
	other := newOtherProcess(t, sc)
	other.decide(sc.changeID, review.Decision{Path: "notes.txt", HunkID: first, Action: review.Reject})
	afterTerminal := sc.disk("notes.txt")

	// Keep the first hunk, from the editor that still shows it pending.
	from := noteCount(sc.ed)
	keepFirst := map[string]any{"changeId": sc.changeID,
		"decisions": []map[string]any{{"uri": sc.uri("notes.txt"), "hunkId": first, "action": "accept"}}}
	err := sc.ed.call("agentd/changes/resolve", keepFirst, nil)
	if errCode(err) != CodeConflict || !strings.Contains(err.Error(), sc.changeID) || !strings.Contains(err.Error(), first) ||
		!strings.Contains(err.Error(), "another agentd process") {
		t.Fatalf("a decision on a hunk the terminal decided: %v, want -32005 naming the set and the hunk", err)
	}
	if got := sc.disk("notes.txt"); got != afterTerminal {
		t.Errorf("the refused decision changed the file:\n%s", got)
	}
	if n := waitChangeNote(t, sc.ed, from, sc.changeID); review.Counts(n.Counts) != (review.Counts{Pending: 1, Rejected: 1, Total: 2}) {
		t.Errorf("the editor was told %+v, want the terminal's rejection", n.Counts)
	}
	recs, _ := review.Recorded(other.book.Journal(), "")
	if got := recs[0].Counts(); got != (review.Counts{Pending: 1, Rejected: 1, Total: 2}) {
		t.Errorf("after the refusal the journal holds %+v, want the terminal's decision", got)
	}
	// The other hunk is decided at once, on the set as the terminal left it.
	var res ResolveResult
	sc.ed.mustCall("agentd/changes/resolve", map[string]any{"changeId": sc.changeID,
		"decisions": []map[string]any{{"uri": sc.uri("notes.txt"), "hunkId": second, "action": "reject"}}}, &res)
	recs, _ = review.Recorded(other.book.Journal(), "")
	if got := recs[0].Counts(); got != (review.Counts{Rejected: 2, Total: 2}) {
		t.Errorf("after the editor's decision the journal holds %+v, want both rejections", got)
	}
	// Asked again, the first decision goes through: the user has seen it.
	sc.ed.mustCall("agentd/changes/resolve", keepFirst, &res)
	if len(res.Applied) != 1 || res.Applied[0] != first {
		t.Errorf("the repeated decision: %+v", res)
	}
	// The terminal's own next decision, on its older view, is refused too.
	s, _ := other.book.Get(sc.changeID)
	_, err = other.book.Resolve(t.Context(), review.Files{WS: other.ws}, s,
		[]review.Decision{{Path: "notes.txt", HunkID: second, Action: review.Accept}}, "")
	var ce *review.ChangedError
	if !errors.As(err, &ce) || ce.ID != sc.changeID {
		t.Errorf("the terminal's decision on its older view: %v, want a ChangedError", err)
	}
}

// provokeChangedElsewhere answers -32005: the editor rejects a hunk the
// terminal accepted a moment before (TestEveryDocumentedErrorCode).
func provokeChangedElsewhere(t *testing.T) int64 {
	old := ChangesSyncInterval
	ChangesSyncInterval = time.Hour
	defer func() { ChangesSyncInterval = old }()
	sc, hunk, _ := afterSet(t)
	newOtherProcess(t, sc).decide(sc.changeID, review.Decision{Path: "notes.txt", HunkID: hunk, Action: review.Accept})
	var we *jsonrpc2.Error
	errors.As(sc.ed.call("agentd/changes/revert", map[string]any{"changeId": sc.changeID, "hunkId": hunk}, nil), &we)
	if we == nil {
		return 0
	}
	if !strings.Contains(string(we.Data), sc.changeID) {
		t.Errorf("-32005 data %s does not name the set %s", we.Data, sc.changeID)
	}
	return int64(we.Code)
}
