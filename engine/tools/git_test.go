package tools

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/workspace"
)

// gitRepo makes a repository with one commit at dir, and returns a
// workspace at dir/sub (sub may be "").
func gitRepo(t *testing.T, files map[string]string, sub string) (ws *workspace.Workspace, repo string) {
	t.Helper()
	repo = t.TempDir()
	if r, err := filepath.EvalSymlinks(repo); err == nil {
		repo = r
	}
	writeFiles(t, repo, files)
	gitInit(t, repo)
	runGit(t, repo, "add", "-A")
	runGit(t, repo, "commit", "-q", "-m", "initial")
	ws, err := workspace.Open(filepath.Join(repo, sub), workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws, repo
}

func gitState(t *testing.T, repo string) string {
	t.Helper()
	return runGit(t, repo, "for-each-ref") + runGit(t, repo, "stash", "list") + runGit(t, repo, "config", "--local", "--list")
}

func TestGitReadOnly(t *testing.T) {
	ws, repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"}, "")
	writeFiles(t, repo, map[string]string{"a.txt": "A\n", "new.txt": "n\n"})
	runGit(t, repo, "mv", "c.txt", "c2.txt")
	before := snapshotDir(t, filepath.Join(repo, ".git"))
	env := &Env{WS: ws}

	res := mustCall(t, env, "git", GitArgs{Action: "status"})
	st := output[*GitStatusOutput](t, res)
	want := []GitStatusEntry{
		{Path: "c2.txt", OrigPath: "c.txt", Index: "R", Worktree: " "},
		{Path: "a.txt", Index: " ", Worktree: "M"},
		{Path: "new.txt", Index: "?", Worktree: "?"},
	}
	if st.Branch != "main" || st.Clean || !sameEntries(st.Files, want) {
		t.Errorf("status = %+v, want branch main and %+v", st, want)
	}

	res = mustCall(t, env, "git", GitArgs{Action: "diff"})
	d := output[*GitDiffOutput](t, res)
	if !strings.Contains(d.Diff, "-a\n+A\n") || !reflect.DeepEqual(d.Files, []string{"a.txt"}) {
		t.Errorf("diff = %+v", d)
	}
	res = mustCall(t, env, "git", GitArgs{Action: "diff", Staged: true})
	if d := output[*GitDiffOutput](t, res); !reflect.DeepEqual(d.Files, []string{"c.txt", "c2.txt"}) && !reflect.DeepEqual(d.Files, []string{"c2.txt"}) {
		t.Errorf("staged diff files = %v", d.Files)
	}
	res = mustCall(t, env, "git", GitArgs{Action: "diff", Paths: []string{"b.txt"}})
	if d := output[*GitDiffOutput](t, res); d.Diff != "" {
		t.Errorf("diff of unchanged b.txt = %q", d.Diff)
	}

	res = mustCall(t, env, "git", GitArgs{Action: "log", MaxCount: 5})
	lg := output[*GitLogOutput](t, res)
	if len(lg.Commits) != 1 || lg.Commits[0].Subject != "initial" || len(lg.Commits[0].Hash) != 40 || lg.Commits[0].Author != "Test" {
		t.Errorf("log = %+v", lg)
	}
	assertUnchanged(t, filepath.Join(repo, ".git"), before)
}

func sameEntries(got, want []GitStatusEntry) bool {
	if len(got) != len(want) {
		return false
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			if g == w {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// The workspace may be a sub-directory of the repository: paths in and out
// are relative to the workspace, and nothing outside it is listed.
func TestGitWorkspaceInSubdir(t *testing.T) {
	ws, repo := gitRepo(t, map[string]string{"top.txt": "t\n", "ws/in.txt": "1\n2\n3\n"}, "ws")
	writeFiles(t, repo, map[string]string{"top.txt": "T\n", "ws/in.txt": "1\nTWO\n3\n"})
	env := &Env{WS: ws}
	res := mustCall(t, env, "git", GitArgs{Action: "status"})
	if st := output[*GitStatusOutput](t, res); !sameEntries(st.Files, []GitStatusEntry{{Path: "in.txt", Index: " ", Worktree: "M"}}) {
		t.Errorf("status = %+v, want only in.txt", st.Files)
	}
	res = mustCall(t, env, "git", GitArgs{Action: "diff"})
	if d := output[*GitDiffOutput](t, res); !reflect.DeepEqual(d.Files, []string{"in.txt"}) {
		t.Errorf("diff files = %v", d.Files)
	}
	patch := "--- a/in.txt\n+++ b/in.txt\n@@ -1,3 +1,3 @@\n 1\n TWO\n-3\n+three\n"
	res = mustCall(t, env, "git", GitArgs{Action: "apply", Patch: patch})
	if got := readDisk(t, repo, "ws/in.txt"); got != "1\nTWO\nthree\n" {
		t.Errorf("after apply in.txt = %q", got)
	}
	if a := output[*GitApplyOutput](t, res); !reflect.DeepEqual(a.Files, []string{"in.txt"}) {
		t.Errorf("apply files = %v", a.Files)
	}
}

func TestGitCommit(t *testing.T) {
	ws, repo := gitRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"}, "")
	writeFiles(t, repo, map[string]string{"a.txt": "A\n", "b.txt": "B\n", "n.txt": "n\n"})
	runGit(t, repo, "add", "b.txt") // the user's own staged change stays staged
	head := strings.TrimSpace(runGit(t, repo, "rev-parse", "HEAD"))
	env := &Env{WS: ws}

	res := mustCall(t, env, "git", GitArgs{Action: "commit", Message: "Update a and add n", Paths: []string{"a.txt", "n.txt"}})
	c := output[*GitCommitOutput](t, res)
	if got := strings.TrimSpace(runGit(t, repo, "rev-parse", "HEAD")); got != c.Commit || got == head {
		t.Fatalf("HEAD %s, commit output %s, old head %s", got, c.Commit, head)
	}
	files := runGit(t, repo, "show", "--name-only", "--format=", "HEAD")
	if strings.TrimSpace(files) != "a.txt\nn.txt" {
		t.Errorf("commit has files %q, want a.txt and n.txt", files)
	}
	if staged := runGit(t, repo, "diff", "--cached", "--name-only"); strings.TrimSpace(staged) != "b.txt" {
		t.Errorf("staged after commit = %q, want the user's b.txt still staged", staged)
	}
	if parent := strings.TrimSpace(runGit(t, repo, "rev-parse", "HEAD~1")); parent != head {
		t.Errorf("parent %s, want %s", parent, head)
	}

	// Without paths: what is staged.
	stateBefore := gitState(t, repo)
	res = mustCall(t, env, "git", GitArgs{Action: "commit", Message: "b"})
	if files := runGit(t, repo, "show", "--name-only", "--format=", "HEAD"); strings.TrimSpace(files) != "b.txt" {
		t.Errorf("commit of staged = %q", files)
	}
	_ = res
	// Only the branch moved: same refs otherwise, no stash, same config.
	stateAfter := gitState(t, repo)
	if strip := func(s string) string {
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.Contains(l, "refs/heads/main") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}; strip(stateBefore) != strip(stateAfter) {
		t.Errorf("repository state beyond the branch changed:\n%s\n---\n%s", stateBefore, stateAfter)
	}
	_, err := call(t, env, "git", GitArgs{Action: "commit", Message: "empty"})
	wantCode(t, err, CodeGit)
}

func TestGitApplyChecksFirst(t *testing.T) {
	ws, repo := gitRepo(t, map[string]string{"a.txt": "1\n2\n", "b.txt": "x\n"}, "")
	env := &Env{WS: ws}
	// The second file's hunk does not apply: nothing may change.
	patch := "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n 1\n-2\n+two\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-nope\n+y\n"
	_, err := call(t, env, "git", GitArgs{Action: "apply", Patch: patch})
	wantCode(t, err, CodePatchFailed)
	if got := readDisk(t, repo, "a.txt"); got != "1\n2\n" {
		t.Errorf("a.txt changed by a failed apply: %q", got)
	}
	if staged := runGit(t, repo, "diff", "--cached", "--name-only"); staged != "" {
		t.Errorf("apply touched the index: %q", staged)
	}
}

func TestGitNotARepository(t *testing.T) {
	ws, _ := newWS(t, map[string]string{"a": "a"})
	_, err := call(t, &Env{WS: ws}, "git", GitArgs{Action: "status"})
	if te := wantCode(t, err, CodeGit); !strings.Contains(te.Message, "not inside a git repository") {
		t.Errorf("message %q", te.Message)
	}
}

func TestAskUser(t *testing.T) {
	ws, _ := newWS(t, nil)
	var gotQ string
	var gotOpts []string
	env := &Env{WS: ws, Ask: func(ctx context.Context, q string, opts []string) (string, error) {
		gotQ, gotOpts = q, opts
		return "blue", nil
	}}
	res := mustCall(t, env, "ask_user", AskUserArgs{Question: "Which colour?", Options: []string{"red", "blue"}})
	if a := output[AskUserOutput](t, res); a.Answer != "blue" || gotQ != "Which colour?" || !reflect.DeepEqual(gotOpts, []string{"red", "blue"}) {
		t.Errorf("answer %+v, asked %q %v", a, gotQ, gotOpts)
	}
	_, err := call(t, &Env{WS: ws}, "ask_user", AskUserArgs{Question: "Which colour?"})
	if te := wantCode(t, err, CodeNoInteraction); !strings.Contains(te.Message, "interactive front end") {
		t.Errorf("message %q does not say an interactive front end is needed", te.Message)
	}
	_ = os.Getenv
}
