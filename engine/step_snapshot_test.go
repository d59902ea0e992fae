package engine

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

// Each step's snapshot records only what the step changed (both paths of
// a move; what changed on disk while a command ran), so the user's edit
// made between the steps is not the agent's: restoring the run's start
// removes the run's work and keeps the edit, as a conflict. Real tools,
// real snapshot store.
func TestStepSnapshotsRecordOnlyTheStep(t *testing.T) {
	dir := t.TempDir()
	for p, c := range map[string]string{"a.txt": "a\n", "keep.txt": "original\n"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	store, err := gitops.Open(t.Context(), ws, gitops.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	reg := tools.Builtin()
	reg.Register(userEdit{root: ws.Root()})
	e := New(Config{Tools: reg, WS: ws, Approver: approval.AllowAll{}, Snapshots: StoreSnapshotter(store)})
	p := mkPlan(t, `[
		{"id":"mv","tool":"move_file","args":{"from":"a.txt","to":"b/a.txt"}},
		{"id":"user","tool":"user_edit","args":{},"dependsOn":["mv"]},
		{"id":"cmd","tool":"run_command","args":{"command":"echo gen > gen.txt"},"dependsOn":["user"]}
	]`)
	st, _ := runPlan(t, e, p, RunOptions{Review: ReviewNone})
	if st.Status != RunCompleted {
		t.Fatalf("status %s: %s", st.Status, st.Error)
	}
	snaps, err := store.List(t.Context(), st.RunID)
	if err != nil {
		t.Fatal(err)
	}
	byStep := map[string][]gitops.FileChange{}
	for _, sn := range snaps {
		byStep[sn.StepID] = append(byStep[sn.StepID], sn.Changes...)
	}
	if want := []gitops.FileChange{{Path: "a.txt", Kind: gitops.ChangeDeleted}, {Path: "b/a.txt", Kind: gitops.ChangeAdded}}; !reflect.DeepEqual(byStep["mv"], want) {
		t.Errorf("the move's snapshot changed %+v, want %+v", byStep["mv"], want)
	}
	if want := []gitops.FileChange{{Path: "gen.txt", Kind: gitops.ChangeAdded}}; !reflect.DeepEqual(byStep["cmd"], want) {
		t.Errorf("the command's snapshots changed %+v, want %+v (keep.txt is the user's)", byStep["cmd"], want)
	}
	res, err := store.Restore(t.Context(), st.Snapshots[0], gitops.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fileIs(t, ws.Root(), "a.txt", "a\n")
	fileIs(t, ws.Root(), "b/a.txt", "")
	fileIs(t, ws.Root(), "gen.txt", "")
	fileIs(t, ws.Root(), "keep.txt", "user's edit\n")
	if !slices.ContainsFunc(res.Conflicts, func(c gitops.RestoreConflict) bool { return c.Path == "keep.txt" }) || len(res.Conflicts) != 1 {
		t.Errorf("conflicts %+v, want keep.txt alone", res.Conflicts)
	}
}
