//go:build unix

package engine

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/gitops"
)

// An ignored file a command creates is in no snapshot: it is recorded as
// the step's create all the same, and an ignored file it changes (whose
// old content was never kept) is named in the step's state (issue 38,
// point 8).
func TestCommandsIgnoredFilesAreRecordedOrNamed(t *testing.T) {
	ws := ledgerWS(t, map[string]string{".gitignore": "node_modules/\n", "a.txt": "a\n"})
	if err := os.MkdirAll(filepath.Join(ws.Root(), "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws.Root(), "node_modules", "old.js"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store, err := gitops.Open(t.Context(), ws, gitops.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	led := &fakeLedger{}
	e := New(Config{Tools: tools.Builtin(), WS: ws, Approver: approval.AllowAll{}, Snapshots: StoreSnapshotter(store), Ledger: led})
	p := mkPlan(t, `[{"id":"cmd","tool":"run_command","args":{"command":"mkdir -p node_modules/x && echo made > node_modules/x/other.js && echo more >> node_modules/old.js"}}]`)
	st, _ := runPlan(t, e, p, RunOptions{Review: ReviewNone})
	if st.Status != RunCompleted {
		t.Fatalf("status %s: %s", st.Status, st.Error)
	}
	if want := []string{"run/" + st.RunID + " cmd node_modules/x/other.js: absent -> made"}; !slices.Equal(led.edits, want) {
		t.Errorf("recorded %q, want %q", led.edits, want)
	}
	if got := stepState(t, st, "cmd").IgnoredChanged; !slices.Equal(got, []string{"node_modules/old.js"}) {
		t.Errorf("named %q, want node_modules/old.js", got)
	}
}
