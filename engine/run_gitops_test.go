package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

// userEdit simulates the user changing a file behind the agent's back.
type userEdit struct{ root string }

func (userEdit) Name() string             { return "user_edit" }
func (userEdit) Description() string      { return "test: the user edits keep.txt" }
func (userEdit) Category() tools.Category { return tools.CategoryRead }
func (userEdit) Risk() tools.Risk         { return tools.RiskLow }
func (userEdit) Schema() json.RawMessage  { return json.RawMessage(`{"type":"object"}`) }
func (u userEdit) Run(ctx context.Context, env *tools.Env, args json.RawMessage) (*tools.Result, error) {
	return &tools.Result{}, os.WriteFile(filepath.Join(u.root, "keep.txt"), []byte("user's edit\n"), 0o644)
}

func TestRunRollbackWithGitopsStore(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatalf("workspace.Open: %v", err)
	}
	store, err := gitops.Open(t.Context(), ws, gitops.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatalf("gitops.Open: %v (the gitops package must be implemented for this test)", err)
	}
	defer store.Close()
	h := newHarness()
	h.reg.Register(userEdit{root: ws.Root()})
	e := New(Config{Tools: h.reg, WS: ws, Approver: approval.AllowAll{}, Snapshots: StoreSnapshotter(store)})
	p := mkPlan(t, `[
		{"id":"w","tool":"write","args":{"write":"a.txt"}},
		{"id":"user","tool":"user_edit","args":{},"dependsOn":["w"]},
		{"id":"bad","tool":"op","args":{"fail":"boom"},"dependsOn":["user"]}
	]`)
	st, _ := runPlan(t, e, p, RunOptions{Review: ReviewNone, RollbackOnFailure: true})
	if st.Status != RunFailed {
		t.Fatalf("status %s", st.Status)
	}
	if len(st.Snapshots) != 2 || stepState(t, st, "w").SnapshotID != st.Snapshots[1] {
		t.Fatalf("snapshots %v, w's %q", st.Snapshots, stepState(t, st, "w").SnapshotID)
	}
	rb := st.Rollback
	if rb == nil || rb.Error != "" || rb.SnapshotID != st.Snapshots[0] {
		t.Fatalf("rollback %+v", rb)
	}
	if _, err := os.Stat(filepath.Join(ws.Root(), "a.txt")); !os.IsNotExist(err) {
		t.Errorf("a.txt, created by the run, survived the rollback: %v", err)
	}
	if !slices.Contains(rb.Restored, "a.txt") {
		t.Errorf("restored %v", rb.Restored)
	}
	fileIs(t, ws.Root(), "keep.txt", "user's edit\n")
	if !slices.Contains(rb.Conflicts, "keep.txt") {
		t.Errorf("conflicts %v; the user's edit must be reported", rb.Conflicts)
	}
	snaps, err := store.List(t.Context(), st.RunID)
	if err != nil || len(snaps) < 2 {
		t.Errorf("store lists %d snapshots of the run: %v", len(snaps), err)
	}
}

// TestRunReportsFilesLeftOutOfSnapshots: a file over the snapshot size
// limit is named in the run's state and in its summary (issue 10: nothing
// is left out silently).
func TestRunReportsFilesLeftOutOfSnapshots(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatalf("workspace.Open: %v", err)
	}
	store, err := gitops.Open(t.Context(), ws, gitops.Options{StateDir: t.TempDir(), MaxFileSize: 1024})
	if err != nil {
		t.Fatalf("gitops.Open: %v", err)
	}
	defer store.Close()
	h := newHarness()
	e := New(Config{Tools: h.reg, WS: ws, Approver: approval.AllowAll{}, Snapshots: StoreSnapshotter(store)})
	p := mkPlan(t, `[{"id":"w","tool":"write","args":{"write":"a.txt"}}]`)
	st, _ := runPlan(t, e, p, RunOptions{Review: ReviewNone})
	if st.Status != RunCompleted {
		t.Fatalf("status %s", st.Status)
	}
	if len(st.SkippedFiles) != 1 || st.SkippedFiles[0].Path != "big.bin" {
		t.Fatalf("skipped files %+v, want big.bin once", st.SkippedFiles)
	}
	sum := Summary(p, st)
	if !strings.Contains(sum, "Left out of snapshots") || !strings.Contains(sum, "`big.bin`") {
		t.Fatalf("summary does not name big.bin:\n%s", sum)
	}
}
