package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

// fakeLedger keeps what the engine records and reverts.
type fakeLedger struct {
	mu        sync.Mutex
	edits     []string // "owner step path: before -> after"
	snapEdits []string // "owner step from..to"
	reverts   []gitops.RevertOptions
	revert    *gitops.RevertResult
	fail      error
}

func state(s *gitops.FileState) string {
	if s == nil {
		return "absent"
	}
	return strings.TrimSuffix(string(s.Data), "\n")
}

func (f *fakeLedger) RecordEdits(ctx context.Context, owner, step string, edits []gitops.Edit) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	for _, e := range edits {
		f.edits = append(f.edits, owner+" "+step+" "+e.Path+": "+state(e.Before)+" -> "+state(e.After))
	}
	return nil
}

func (f *fakeLedger) RecordSnapshotEdits(ctx context.Context, owner, step, from, to string, paths []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snapEdits = append(f.snapEdits, owner+" "+step+" "+from+".."+to)
	return nil
}

func (f *fakeLedger) Revert(ctx context.Context, owners []string, opts gitops.RevertOptions) (*gitops.RevertResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reverts = append(f.reverts, opts)
	return f.revert, nil
}

func ledgerWS(t *testing.T, files map[string]string) *workspace.Workspace {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

// A change set the engine applies (review none or after) is recorded as
// the run's edit of its step, before it is written; a command's effect is
// recorded from the snapshot taken before it to the one after its step.
func TestRunRecordsAppliedChangesAndCommands(t *testing.T) {
	ws := ledgerWS(t, map[string]string{"a.txt": "old\n"})
	store, err := gitops.Open(t.Context(), ws, gitops.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	led := &fakeLedger{}
	e := New(Config{Tools: tools.Builtin(), WS: ws, Approver: approval.AllowAll{}, Snapshots: StoreSnapshotter(store), Ledger: led})
	p := mkPlan(t, `[
		{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"new\n"}},
		{"id":"cmd","tool":"run_command","args":{"command":"echo gen > gen.txt"},"dependsOn":["w"]}
	]`)
	st, _ := runPlan(t, e, p, RunOptions{Review: ReviewNone})
	if st.Status != RunCompleted {
		t.Fatalf("status %s: %s", st.Status, st.Error)
	}
	owner := "run/" + st.RunID
	if want := []string{owner + " w a.txt: old -> new"}; !slices.Equal(led.edits, want) {
		t.Errorf("recorded edits %q, want %q", led.edits, want)
	}
	// Snapshots: start, after w, before the command, after cmd.
	if len(st.Snapshots) != 4 || stepState(t, st, "cmd").SnapshotID != st.Snapshots[3] {
		t.Fatalf("snapshots %v", st.Snapshots)
	}
	if want := []string{owner + " cmd " + st.Snapshots[2] + ".." + st.Snapshots[3]}; !slices.Equal(led.snapEdits, want) {
		t.Errorf("recorded command effects %q, want %q", led.snapEdits, want)
	}
}

// A change the ledger cannot record is not written, and the step fails
// saying so.
func TestRunDoesNotWriteWhatCannotBeRecorded(t *testing.T) {
	ws := ledgerWS(t, map[string]string{"a.txt": "old\n"})
	led := &fakeLedger{fail: errors.New("store is read-only")}
	e := New(Config{Tools: tools.Builtin(), WS: ws, Approver: approval.AllowAll{}, Snapshots: &fakeSnaps{}, Ledger: led})
	p := mkPlan(t, `[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"new\n"}}]`)
	st, _ := runPlan(t, e, p, RunOptions{Review: ReviewNone})
	if s := stepState(t, st, "w"); s.Status != StepFailed || !strings.Contains(s.Error, "could not be recorded for undo") {
		t.Fatalf("step w: %s %q", s.Status, s.Error)
	}
	fileIs(t, ws.Root(), "a.txt", "old\n")
}

// --rollback-on-failure reverts the run's ledger as undo does (keeping
// what the user changed, recorded so it can be undone), and the summary
// names every file it changed and every file it kept, with the command
// that overwrites them.
func TestRollbackRevertsTheLedgerAndNamesEveryFile(t *testing.T) {
	ws := ledgerWS(t, map[string]string{"a.txt": "old\n"})
	led := &fakeLedger{revert: &gitops.RevertResult{Applied: true, Reverted: []string{"a.txt"}, Deleted: []string{"gen.txt"},
		Conflicts:  []gitops.RevertConflict{{Path: "keep.txt", Reason: "you changed lines the agent wrote"}},
		RecordedAs: "undo/x"}}
	snaps := &fakeSnaps{}
	h := newHarness()
	e := New(Config{Tools: h.reg, WS: ws, Approver: approval.AllowAll{}, Snapshots: snaps, Ledger: led})
	p := mkPlan(t, `[
		{"id":"w","tool":"write","args":{"write":"b.txt"}},
		{"id":"bad","tool":"op","args":{"fail":"boom"},"dependsOn":["w"]}
	]`)
	st, _ := runPlan(t, e, p, RunOptions{Review: ReviewNone, RollbackOnFailure: true})
	if st.Status != RunFailed {
		t.Fatalf("status %s", st.Status)
	}
	if len(led.reverts) != 1 || led.reverts[0].OnConflict != gitops.KeepConflicts || led.reverts[0].RecordAs != RollbackOwner(st.RunID) {
		t.Fatalf("reverts %+v", led.reverts)
	}
	if len(snaps.restores) != 0 {
		t.Errorf("the rollback also restored a snapshot: %+v", snaps.restores)
	}
	rb := st.Rollback
	if rb == nil || !rb.Reverted || !slices.Equal(rb.Restored, []string{"a.txt", "gen.txt"}) || !slices.Equal(rb.Conflicts, []string{"keep.txt"}) {
		t.Fatalf("rollback %+v", rb)
	}
	hint := "agentd undo " + st.RunID + " --overwrite"
	for _, want := range []string{"`a.txt`", "`gen.txt`", "`keep.txt`: you changed lines the agent wrote", hint} {
		if !strings.Contains(st.Summary, want) {
			t.Errorf("the summary lacks %q:\n%s", want, st.Summary)
		}
	}
}
