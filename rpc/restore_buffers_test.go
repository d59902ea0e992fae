package rpc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// A run reviewed in an open buffer can be restored (issue 16): the hunks
// accepted into the buffer through workspace/applyEdit are the agent's,
// whether or not the editor saved them; only what the user typed is a
// conflict. Real server, fake editor over a pipe, a real git repository.
func TestRestoreRunReviewedInBuffer(t *testing.T) {
	const orig = "alpha\nb\nc\nd\ne\nf\ng\nh\ni\nomega\n"
	const agent = "ALPHA\nb\nc\nd\ne\nf\ng\nh\ni\nOMEGA\n"
	for _, tc := range []struct {
		name     string
		after    func(sc *scenario)
		conflict bool   // main.txt is a conflict, left alone
		buffer   string // the buffer after the restore
		disk     string // the disk after the restore
	}{
		{name: "saved", after: func(sc *scenario) { sc.save("main.txt") }, buffer: orig, disk: orig},
		{name: "not saved", after: func(sc *scenario) {}, buffer: orig, disk: orig},
		{name: "saved by agentd/documents/save", after: func(sc *scenario) {
			sc.do(0, "load cmd.json")
			sc.do(0, "start")
			sc.do(0, "answer-approval allow_once step=cmd")
			sc.do(0, "expect-run completed")
		}, buffer: orig, disk: orig},
		{name: "user typed, not saved", after: func(sc *scenario) {
			sc.do(0, `type main.txt 10 0 "mine\n"`)
		}, conflict: true, buffer: agent + "mine\n", disk: orig},
		{name: "saved, then the user typed, not saved", after: func(sc *scenario) {
			sc.save("main.txt")
			sc.do(0, `type main.txt 10 0 "mine\n"`)
		}, conflict: true, buffer: agent + "mine\n", disk: agent},
		{name: "user typed and saved", after: func(sc *scenario) {
			sc.do(0, `type main.txt 10 0 "mine\n"`)
			sc.save("main.txt")
		}, conflict: true, buffer: agent + "mine\n", disk: agent + "mine\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ar := &txtar.Archive{Files: []txtar.File{
				{Name: "ws/main.txt", Data: []byte(orig)},
				{Name: "plan.json", Data: []byte(`{"title": "review in a buffer", "steps": [
  {"id": "edit", "tool": "edit_file", "args": {"path": "main.txt", "edits": [{"oldText": "alpha", "newText": "ALPHA"}, {"oldText": "omega", "newText": "OMEGA"}]}}
]}`)},
				{Name: "cmd.json", Data: []byte(`{"title": "a command reads the disk", "steps": [
  {"id": "cmd", "tool": "run_command", "args": {"command": "cat main.txt"}}
]}`)},
			}}
			sc := &scenario{t: t, ar: ar, root: t.TempDir(), stateDir: t.TempDir(), buffers: map[string]string{}, version: map[string]int{}}
			if err := os.WriteFile(filepath.Join(sc.root, "main.txt"), []byte(orig), 0o644); err != nil {
				t.Fatal(err)
			}
			gitRepo(t, sc.root)
			for _, line := range []string{
				"init review=before",
				"open main.txt",
				"load plan.json",
				"start",
				"expect-event changeProposed step=edit",
				"resolve accept",
				"expect-change accepted",
				"expect-run completed",
				"snapshot-first",
			} {
				sc.do(0, line)
			}
			if got := sc.buffer("main.txt"); got != agent {
				t.Fatalf("buffer after accepting every hunk = %q, want %q", got, agent)
			}
			tc.after(sc)

			var res RestoreResult
			sc.ed.mustCall("agentd/snapshot/restore", map[string]any{"id": sc.snapshot}, &res)
			var conflicts []string
			for _, c := range res.Conflicts {
				conflicts = append(conflicts, sc.relOfURI(c.URI)+": "+c.Message)
			}
			if tc.conflict != (len(conflicts) == 1 && strings.HasPrefix(conflicts[0], "main.txt: ")) || !tc.conflict && len(conflicts) > 0 {
				t.Errorf("restore conflicts = %q; want a conflict for main.txt: %v", conflicts, tc.conflict)
			}
			if got := sc.buffer("main.txt"); got != tc.buffer {
				t.Errorf("buffer after the restore = %q, want %q", got, tc.buffer)
			}
			if got := sc.disk("main.txt"); got != tc.disk {
				t.Errorf("disk after the restore = %q, want %q", got, tc.disk)
			}
			// The user's repository is untouched: no change but the restore's.
			if out, err := exec.Command("git", "-C", sc.root, "status", "--porcelain").CombinedOutput(); err != nil {
				t.Fatalf("git status: %v\n%s", err, out)
			} else if want := map[bool]string{true: " M main.txt\n", false: ""}[tc.disk != orig]; string(out) != want {
				t.Errorf("git status = %q, want %q", out, want)
			}
		})
	}
}

// gitRepo makes root a git repository with everything committed.
func gitRepo(t *testing.T, root string) {
	t.Helper()
	for _, args := range [][]string{
		{"init", "-q"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "start"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s (git is required for this test)", args, err, out)
		}
	}
}

// buffer returns the fake editor's buffer after a round trip (edits are in).
func (sc *scenario) buffer(rel string) string {
	sc.ed.mustCall("agentd/plan/list", nil, nil)
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.buffers[rel]
}

func (sc *scenario) disk(rel string) string {
	data, err := os.ReadFile(filepath.Join(sc.root, filepath.FromSlash(rel)))
	if err != nil {
		sc.t.Fatal(err)
	}
	return string(data)
}

// save is the editor's :write: the buffer goes to disk, then didSave.
func (sc *scenario) save(rel string) {
	sc.mu.Lock()
	text := sc.buffers[rel]
	sc.mu.Unlock()
	if err := os.WriteFile(filepath.Join(sc.root, filepath.FromSlash(rel)), []byte(text), 0o644); err != nil {
		sc.t.Fatal(err)
	}
	sc.ed.notify("textDocument/didSave", map[string]any{"textDocument": map[string]any{"uri": sc.uri(rel)}})
}

// --rollback-on-failure over the protocol: the agent's edit went into the
// open buffer (review "after", through workspace/applyEdit), was saved
// before the failing command, and the rollback puts the original back in
// the buffer and on disk, with no conflict.
func TestRollbackRestoresOpenBuffer(t *testing.T) {
	const orig = "alpha\nb\nc\n"
	ar := &txtar.Archive{Files: []txtar.File{
		{Name: "plan.json", Data: []byte(`{"title": "fails", "steps": [
  {"id": "edit", "tool": "edit_file", "args": {"path": "main.txt", "edits": [{"oldText": "alpha", "newText": "ALPHA"}]}},
  {"id": "fail", "tool": "run_command", "args": {"command": "exit 3"}, "dependsOn": ["edit"]}
]}`)},
	}}
	sc := &scenario{t: t, ar: ar, root: t.TempDir(), stateDir: t.TempDir(), buffers: map[string]string{}, version: map[string]int{}}
	if err := os.WriteFile(filepath.Join(sc.root, "main.txt"), []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRepo(t, sc.root)
	sc.do(0, "init review=after")
	sc.do(0, "open main.txt")
	sc.do(0, "load plan.json")
	var res RunStartResult
	sc.ed.mustCall("agentd/run/start", map[string]any{"planId": sc.planID, "options": map[string]any{"review": "after", "rollbackOnFailure": true}}, &res)
	sc.runID = res.RunID
	sc.do(0, "answer-approval allow_once step=edit") // after mode: the write is approved
	sc.do(0, "answer-approval allow_once step=fail")
	sc.do(0, "answer-message Abort")
	sc.do(0, "expect-run failed")
	if got := sc.buffer("main.txt"); got != orig {
		t.Errorf("buffer after the rollback = %q, want %q", got, orig)
	}
	if got := sc.disk("main.txt"); got != orig {
		t.Errorf("disk after the rollback = %q, want %q", got, orig)
	}
	var st struct {
		Error string `json:"error"`
	}
	sc.ed.mustCall("agentd/run/get", map[string]any{"runId": sc.runID}, &st)
	if strings.Contains(st.Error, "left alone") || strings.Contains(st.Error, "not by the agent") {
		t.Errorf("the rollback left the agent's edit alone: %s", st.Error)
	}
}
