package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
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

func openStore(t *testing.T, dir string) (*workspace.Workspace, *gitops.Store) {
	t.Helper()
	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatalf("workspace.Open: %v", err)
	}
	store, err := gitops.Open(t.Context(), ws, gitops.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatalf("gitops.Open: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	return ws, store
}

// A command's files are the agent's work: the step gets a snapshot that
// names it, and a rollback removes what the command wrote while keeping
// the edit the user made after it.
func TestCommandStepsSnapshottedAndRolledBack(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, store := openStore(t, dir)
	reg := tools.Builtin()
	reg.Register(userEdit{root: ws.Root()})
	e := New(Config{Tools: reg, WS: ws, Approver: approval.AllowAll{}, Snapshots: StoreSnapshotter(store)})
	p := mkPlan(t, `[
		{"id":"cmd","tool":"run_command","args":{"command":"echo hi > cmd.txt && mkdir -p out && echo x > out/gen.txt"}},
		{"id":"user","tool":"user_edit","args":{},"dependsOn":["cmd"]},
		{"id":"bad","kind":"validation","checks":[{"expr":"1 == 2"}],"dependsOn":["user"]}
	]`)
	pol := approval.AllowAllPolicy()
	st, _ := runPlan(t, e, p, RunOptions{Review: ReviewNone, RollbackOnFailure: true, Approval: &pol})
	if st.Status != RunFailed {
		t.Fatalf("status %s, want failed", st.Status)
	}
	cmdSnap := stepState(t, st, "cmd").SnapshotID
	if cmdSnap == "" {
		t.Fatalf("the command step has no snapshot after it (snapshots %v)", st.Snapshots)
	}
	if stepState(t, st, "user").SnapshotID != "" {
		t.Errorf("a read step got a snapshot")
	}
	// Every snapshot says what it is, in the state and in the summary
	// (the one taken as the command started too).
	labels := []string{"run start", "before a command of cmd", "after cmd"}
	if len(st.Snapshots) != len(labels) {
		t.Fatalf("snapshots %v (%v); want %q", st.Snapshots, st.SnapshotLabels, labels)
	}
	for i, id := range st.Snapshots {
		if st.SnapshotLabels[id] != labels[i] {
			t.Errorf("snapshot %d (%s) is labelled %q; want %q", i, id, st.SnapshotLabels[id], labels[i])
		}
		if line := fmt.Sprintf("- `%s` %s\n", id, labels[i]); !strings.Contains(st.Summary, line) {
			t.Errorf("the summary does not list %q:\n%s", line, st.Summary)
		}
	}
	sn, err := store.Get(t.Context(), cmdSnap)
	if err != nil || sn.RunID != st.RunID || sn.StepID != "cmd" ||
		!slices.ContainsFunc(sn.Changes, func(c gitops.FileChange) bool { return c.Path == "cmd.txt" && c.Kind == gitops.ChangeAdded }) {
		t.Errorf("snapshot after cmd: %+v, %v; want run %s, step cmd, cmd.txt added", sn, err, st.RunID)
	}
	rb := st.Rollback
	if rb == nil || rb.Error != "" {
		t.Fatalf("rollback %+v", rb)
	}
	for _, f := range []string{"cmd.txt", "out/gen.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s, written by the run's command, survived the rollback (%v); rollback %+v", f, err, rb)
		}
	}
	fileIs(t, dir, "keep.txt", "user's edit\n")
	if !slices.Contains(rb.Conflicts, "keep.txt") {
		t.Errorf("conflicts %v; the user's edit must be reported", rb.Conflicts)
	}
}

// The failed command's own files are undone too.
func TestFailedCommandRolledBack(t *testing.T) {
	dir := t.TempDir()
	ws, store := openStore(t, dir)
	e := New(Config{Tools: tools.Builtin(), WS: ws, Approver: approval.AllowAll{}, Snapshots: StoreSnapshotter(store)})
	p := mkPlan(t, `[{"id":"bad","tool":"run_command","args":{"command":"echo partial > bad.txt; exit 3"}}]`)
	pol := approval.AllowAllPolicy()
	st, _ := runPlan(t, e, p, RunOptions{Review: ReviewNone, RollbackOnFailure: true, Approval: &pol})
	if st.Status != RunFailed {
		t.Fatalf("status %s, want failed", st.Status)
	}
	if stepState(t, st, "bad").SnapshotID == "" {
		t.Errorf("the failed command step has no snapshot after it")
	}
	if rb := st.Rollback; rb == nil || rb.Error != "" {
		t.Fatalf("rollback %+v", rb)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.txt")); !os.IsNotExist(err) {
		t.Errorf("bad.txt, written by the failed command, survived the rollback (%v)", err)
	}
}

// recordingApprover allows everything and remembers what it was asked.
type recordingApprover struct {
	mu   sync.Mutex
	reqs []approval.ApprovalRequest
}

func (r *recordingApprover) Approve(ctx context.Context, req approval.ApprovalRequest) (approval.ApprovalDecision, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	return approval.ApprovalDecision{Allow: true}, nil
}

// git's per-call risk is what the policy sees: a commit is high risk and
// asks under requireApprovalForRisk "high" even when git is allowed, a
// status is low and does not.
func TestGitCommitAsksUnderHighRisk(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed for this test")
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, store := openStore(t, dir)
	ap := &recordingApprover{}
	e := New(Config{Tools: tools.Builtin(), WS: ws, Approver: ap, Snapshots: StoreSnapshotter(store)})
	p := mkPlan(t, `[
		{"id":"status","tool":"git","args":{"action":"status"}},
		{"id":"commit","tool":"git","args":{"action":"commit","message":"m","paths":["a.txt"]},"dependsOn":["status"]}
	]`)
	pol := approval.ApprovalPolicy{Git: approval.PolicyAllow, RequireApprovalForRisk: tools.RiskHigh}
	st, _ := runPlan(t, e, p, RunOptions{Review: ReviewNone, Approval: &pol})
	if st.Status != RunCompleted {
		t.Fatalf("status %s: %s", st.Status, st.Error)
	}
	if len(ap.reqs) != 1 || ap.reqs[0].StepID != "commit" || ap.reqs[0].Risk != tools.RiskHigh {
		t.Fatalf("approval requests %+v; want one, for the commit, at high risk", ap.reqs)
	}
	if stepState(t, st, "status").SnapshotID != "" {
		t.Errorf("git status got a snapshot; it changes nothing")
	}
	if stepState(t, st, "commit").SnapshotID == "" {
		t.Errorf("git commit got no snapshot after it")
	}
}

// An agent step whose model ran a command gets a snapshot after it, so a
// rollback removes what the command wrote; an llm step that changed
// nothing does not.
func TestAgentStepSnapshottedAndRolledBack(t *testing.T) {
	dir := t.TempDir()
	ws, store := openStore(t, dir)
	m := &fakeModel{run: func(ctx context.Context, call ModelCall) (*ModelResult, error) {
		if call.Exec == nil {
			return &ModelResult{Text: "thought"}, nil
		}
		r, err := call.Exec(ctx, "run_command", json.RawMessage(`{"command":"echo agent > agent.txt"}`))
		if err != nil || r.Error != "" {
			return nil, fmt.Errorf("exec: %v %s", err, r.Error)
		}
		return &ModelResult{Text: "done"}, nil
	}}
	e := New(Config{Tools: tools.Builtin(), WS: ws, Approver: approval.AllowAll{}, Model: m, Snapshots: StoreSnapshotter(store)})
	p := mkPlan(t, `[
		{"id":"think","kind":"llm","prompt":"think"},
		{"id":"ag","kind":"agent","prompt":"write","tools":["run_command"],"dependsOn":["think"]},
		{"id":"bad","kind":"validation","checks":[{"expr":"1 == 2"}],"dependsOn":["ag"]}
	]`)
	pol := approval.AllowAllPolicy()
	st, _ := runPlan(t, e, p, RunOptions{Review: ReviewNone, RollbackOnFailure: true, Approval: &pol})
	if st.Status != RunFailed {
		t.Fatalf("status %s: %s", st.Status, st.Error)
	}
	if stepState(t, st, "think").SnapshotID != "" {
		t.Errorf("an llm step that changed nothing got a snapshot")
	}
	snap := stepState(t, st, "ag").SnapshotID
	if snap == "" {
		t.Fatalf("the agent step that ran a command got no snapshot")
	}
	if sn, err := store.Get(t.Context(), snap); err != nil || sn.StepID != "ag" || !slices.ContainsFunc(sn.Changes, func(c gitops.FileChange) bool { return c.Path == "agent.txt" }) {
		t.Errorf("snapshot after ag: %+v, %v; want it to name step ag and agent.txt", sn, err)
	}
	if rb := st.Rollback; rb == nil || rb.Error != "" {
		t.Fatalf("rollback %+v", rb)
	}
	if _, err := os.Stat(filepath.Join(dir, "agent.txt")); !os.IsNotExist(err) {
		t.Errorf("agent.txt, written by the agent's command, survived the rollback (%v)", err)
	}
}
