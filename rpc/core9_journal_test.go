package rpc

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/workspace"
)

// User edits made during a run are kept (issue 9): while the agent's edit
// waits for review, the user types into b.txt and saves it (didChange +
// didSave), and while the command step waits for approval the user
// changes c.txt on disk. Restoring the run's start over the protocol
// removes exactly what the run created (the edit to a.txt, the command's
// gen.txt) and keeps the user's two edits, reported as conflicts.
func TestUserEditsDuringRunSurviveRestore(t *testing.T) {
	ar := &txtar.Archive{Files: []txtar.File{
		{Name: "plan.json", Data: []byte(`{"title": "edits during a run", "steps": [
  {"id": "edit", "tool": "edit_file", "args": {"path": "a.txt", "edits": [{"oldText": "a0", "newText": "agent"}]}},
  {"id": "cmd", "tool": "run_command", "args": {"command": "echo gen > gen.txt"}, "dependsOn": ["edit"]}
]}`)},
	}}
	sc := &scenario{t: t, ar: ar, root: t.TempDir(), stateDir: t.TempDir(), buffers: map[string]string{}, version: map[string]int{}}
	for p, c := range map[string]string{"a.txt": "a0\n", "b.txt": "b0\n", "c.txt": "c0\n"} {
		if err := os.WriteFile(filepath.Join(sc.root, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, line := range []string{
		"init review=before",
		"open b.txt",
		"load plan.json",
		"start",
		"expect-event changeProposed step=edit",
		// The step waits for review: the user edits b.txt in the editor.
		`type b.txt 0 0 "user's line\n"`,
	} {
		sc.do(0, line)
	}
	sc.save("b.txt")
	sc.do(0, "resolve accept")
	// The command waits for approval: the user edits c.txt on disk.
	sc.do(0, "expect-event stepStarted step=cmd")
	sc.do(0, `write-disk c.txt "c by the user\n"`)
	sc.do(0, "answer-approval allow_once step=cmd")
	sc.do(0, "expect-run completed")
	if got := sc.disk("gen.txt"); got != "gen\n" {
		t.Fatalf("the command did not run: gen.txt = %q", got)
	}

	// Which step changed what: the steps' snapshots hold only their own.
	var snaps []SnapshotInfo
	sc.ed.mustCall("agentd/snapshot/list", map[string]any{"runId": sc.runID}, &snaps)
	byStep := map[string][]string{}
	for _, sn := range snaps {
		for _, c := range sn.Changes {
			byStep[sn.StepID] = append(byStep[sn.StepID], c.Path)
		}
	}
	if got := strings.Join(byStep["edit"], ","); got != "a.txt" {
		t.Errorf("step edit changed %q, want a.txt (snapshots %+v)", got, snaps)
	}
	if got := strings.Join(byStep["cmd"], ","); got != "gen.txt" {
		t.Errorf("step cmd changed %q, want gen.txt (snapshots %+v)", got, snaps)
	}

	sc.do(0, "snapshot-first")
	var res RestoreResult
	sc.ed.mustCall("agentd/snapshot/restore", map[string]any{"id": sc.snapshot}, &res)
	var conflicts []string
	for _, c := range res.Conflicts {
		conflicts = append(conflicts, sc.relOfURI(c.URI))
	}
	sort.Strings(conflicts)
	if got := strings.Join(conflicts, ","); got != "b.txt,c.txt" {
		t.Errorf("restore conflicts = %q, want b.txt,c.txt (%+v)", got, res.Conflicts)
	}
	for p, want := range map[string]string{"a.txt": "a0\n", "b.txt": "user's line\nb0\n", "c.txt": "c by the user\n"} {
		if got := sc.disk(p); got != want {
			t.Errorf("%s after the restore = %q, want %q", p, got, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(sc.root, "gen.txt")); err == nil {
		t.Errorf("gen.txt, written by the run's command, survived the restore")
	}
}

// A change set that agentd run records in the journal while the daemon
// runs on the same workspace is listed by agentd/changes/list (the daemon
// reads the sets recorded since it last looked), and can be reviewed.
func TestChangeSetRecordedByAnotherProcessIsListed(t *testing.T) {
	sc := &scenario{t: t, ar: &txtar.Archive{}, root: t.TempDir(), stateDir: t.TempDir(), buffers: map[string]string{}, version: map[string]int{}}
	if err := os.WriteFile(filepath.Join(sc.root, "f.txt"), []byte("by agentd run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc.do(0, "init review=after")
	sc.do(0, "expect-pending 0")

	// agentd run's review book, as cmd/agentd wires it: an applied change
	// offered for review afterwards stays pending in the journal.
	ws, err := workspace.Open(sc.root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	j, err := engine.OpenJournal(sc.stateDir, ws.Root(), nil)
	if err != nil {
		t.Fatal(err)
	}
	other := review.NewBook()
	var saveErr error
	other.Keep(j.Journal, func(id string, err error) { saveErr = err })
	other.Put(review.New(&workspace.ChangeSet{ID: "cs-from-terminal", RunID: "run-t", StepID: "w", Files: []*workspace.FileChange{
		{Path: "f.txt", Op: workspace.OpModify, Old: []byte("old\n"), New: []byte("by agentd run\n"), BaseHash: workspace.Hash([]byte("old\n"))}}}, engine.ReviewAfter))
	if saveErr != nil {
		t.Fatal(saveErr)
	}

	sc.do(0, "expect-pending 1")
	if sc.changeID != "cs-from-terminal" {
		t.Fatalf("listed %q, want cs-from-terminal", sc.changeID)
	}
	sc.do(0, "resolve reject")
	sc.do(0, "expect-change rejected")
	if got := sc.disk("f.txt"); got != "old\n" {
		t.Errorf("rejecting the terminal's change left f.txt = %q, want old", got)
	}
	// The decision is in the journal for every front end.
	sets, err := review.Recorded(j.Journal, "run-t")
	if err != nil || len(sets) != 1 || sets[0].Status() != review.Rejected {
		t.Fatalf("journal holds %+v (%v), want the set rejected", sets, err)
	}
}
