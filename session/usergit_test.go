package session

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

// userConfig makes the user's config file (XDG_CONFIG_HOME) hold data.
func userConfig(t *testing.T, data string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	os.MkdirAll(filepath.Join(home, "agentd"), 0o755)
	if err := os.WriteFile(filepath.Join(home, "agentd", "config.json"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gitRepo makes ws a git repository with one commit of its files and
// returns that commit.
func gitRepo(t *testing.T, ws string) string {
	t.Helper()
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
		"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.DevNull, "GIT_CONFIG_NOSYSTEM": "1"} {
		t.Setenv(k, v)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "start"}} {
		git(t, ws, args...)
	}
	return git(t, ws, "rev-parse", "HEAD")
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// runCommand runs a plan of one command step through the session's
// engine wiring, as every front end does.
func runCommand(t *testing.T, s *Session, command string) engine.RunState {
	t.Helper()
	cfg := s.Config()
	cfg.Tools, cfg.Approver = tools.Builtin(), approval.AllowAll{}
	cmd, _ := json.Marshal(command)
	p, err := plans.ParsePlan("c.json", []byte(`{"title":"c","steps":[{"id":"c","tool":"run_command","args":{"command":`+string(cmd)+`}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	run, err := engine.New(cfg).Start(context.Background(), p, engine.RunOptions{Review: engine.ReviewNone})
	if err != nil {
		t.Fatal(err)
	}
	st, err := run.Wait(context.Background())
	if err != nil || st.Status != engine.RunCompleted {
		t.Fatalf("run: %s %v %s", st.Status, err, st.Error)
	}
	return st
}

// Undo of a run names what it cannot take back: the commit the run made
// in the user's repository (with the git revert to run), the file it left
// staged, and the big file a command made (over the user config's
// maxFileSize), recorded in the journal so that a new session (a restart,
// another front end) names the same.
func TestUndoNamesLeftovers(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	userConfig(t, `{"maxFileSize":"1KiB"}`)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	start := gitRepo(t, ws)
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	st := runCommand(t, s, `echo new > new.txt && git add new.txt && git commit -qm "add new.txt" && echo s > 'my staged.txt' && git add 'my staged.txt' && head -c 4096 /dev/zero > big.bin`)
	commit := git(t, ws, "rev-parse", "HEAD")
	if commit == start {
		t.Fatal("the run's command made no commit")
	}
	// The run's own session names the git side at once (the terminal's
	// summary), without the big files its summary lists.
	if l := s.Leftovers(ctx, st.RunID, nil); l == nil || len(l.Commits) != 1 || len(l.BigFiles) != 0 {
		t.Fatalf("leftovers right after the run: %+v", l)
	}
	s.Close()

	s, err = Open(ctx, Options{Root: ws, StateDir: state}) // a restart, or another front end
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.UndoRun(ctx, "", UndoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := res.Leftovers
	if l == nil {
		t.Fatal("undo names no leftovers")
	}
	if len(l.Commits) != 1 || l.Commits[0].SHA != commit || l.Commits[0].Subject != "add new.txt" {
		t.Errorf("commits %+v, want %s add new.txt", l.Commits, commit)
	}
	if want := "git revert --no-edit " + start[:12] + ".." + commit[:12]; l.Revert != want {
		t.Errorf("revert %q, want %q", l.Revert, want)
	}
	if len(l.Staged) != 1 || l.Staged[0] != "my staged.txt" {
		t.Errorf("staged %v", l.Staged)
	}
	if len(l.BigFiles) != 1 || l.BigFiles[0] != "big.bin" {
		t.Errorf("big files %v (the user config's maxFileSize is 1KiB)", l.BigFiles)
	}
	for _, want := range []string{
		"not undone: the run made 1 commit in your repository (undo never changes your git history):",
		"  " + commit[:12] + " add new.txt",
		"  to take them back too: " + l.Revert,
		"not undone: the run left my staged.txt in your index (staged); to unstage: git restore --staged -- 'my staged.txt'",
		"not undone: 1 file left out of the run's snapshots stays as it is:",
		"  big.bin (larger than the snapshot size limit (1024 bytes))",
		"raise maxFileSize in .agentd/config.json",
	} {
		if !strings.Contains(l.Text, want) {
			t.Errorf("the leftovers' text does not say %q:\n%s", want, l.Text)
		}
	}
	// Undo never touches the user's repository.
	if head := git(t, ws, "rev-parse", "HEAD"); head != commit {
		t.Errorf("undo moved HEAD to %s", head)
	}
}

// A run that leaves the user's repository as it was leaves nothing to name.
func TestNoLeftovers(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	gitRepo(t, ws)
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: ws, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runCommand(t, s, "echo b > a.txt")
	res, err := s.UndoRun(ctx, "", UndoOptions{})
	if err != nil || res.Leftovers != nil {
		t.Fatalf("undo: %+v %v; want no leftovers", res, err)
	}
}

// maxFileSize comes from the user's config file, which the workspace's
// config may raise but not lower, for every front end that opens a
// session; the front end's own override wins; a bad value is an error
// naming the file and the key.
func TestMaxFileSizeFromConfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	os.MkdirAll(filepath.Join(home, "agentd"), 0o755)
	user := filepath.Join(home, "agentd", "config.json")
	os.WriteFile(user, []byte(`{"model":"x:y","maxFileSize":"2KiB"}`), 0o644)
	ws := t.TempDir()
	open := func(override int64) (*Session, error) {
		return Open(context.Background(), Options{Root: ws, StateDir: t.TempDir(), MaxFileSize: override})
	}
	limit := func(override int64) int64 {
		t.Helper()
		s, err := open(override)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		store, err := s.Store()
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(ws, "f.bin"), make([]byte, 1500), 0o644)
		sn, err := store.Snapshot(context.Background(), gitops.SnapshotOptions{Label: "t"})
		if err != nil {
			t.Fatal(err)
		}
		// Snapshots keep what tools read: f.bin (1500 bytes) is left out
		// exactly when it is over the limit.
		if skipped := len(sn.Skipped) > 0; skipped != (1500 > s.WS.MaxFileSize()) {
			t.Errorf("limit %d: snapshot left out %v", s.WS.MaxFileSize(), sn.Skipped)
		}
		return s.WS.MaxFileSize()
	}
	if n := limit(0); n != 2048 {
		t.Errorf("limit from the user's config: %d, want 2048", n)
	}
	os.MkdirAll(filepath.Join(ws, ".agentd"), 0o755)
	// A workspace (a cloned repository) may raise the limit, never lower
	// it: a lower value would take files out of undo's snapshots.
	os.WriteFile(filepath.Join(ws, ".agentd", "config.json"), []byte(`{"maxFileSize":1024}`), 0o644)
	if n := limit(0); n != 2048 {
		t.Errorf("limit with a lower one in the workspace's config: %d, want the user's 2048", n)
	}
	os.WriteFile(filepath.Join(ws, ".agentd", "config.json"), []byte(`{"maxFileSize":"3KiB"}`), 0o644)
	if n := limit(0); n != 3072 {
		t.Errorf("limit raised by the workspace's config: %d, want 3072", n)
	}
	os.Remove(user)
	os.WriteFile(filepath.Join(ws, ".agentd", "config.json"), []byte(`{"maxFileSize":"1KiB"}`), 0o644)
	if n := limit(0); n != workspace.DefaultMaxFileSize {
		t.Errorf("limit with a lower one in the workspace's config and no user's: %d, want the default", n)
	}
	os.WriteFile(user, []byte(`{"model":"x:y","maxFileSize":"2KiB"}`), 0o644)
	if n := limit(4096); n != 4096 {
		t.Errorf("limit with a front end's override: %d, want 4096", n)
	}
	os.WriteFile(filepath.Join(ws, ".agentd", "config.json"), []byte(`{"maxFileSize":"big"}`), 0o644)
	_, err := open(0)
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), filepath.Join(ws, ".agentd", "config.json")+": maxFileSize: ") ||
		!strings.Contains(err.Error(), "50MiB") {
		t.Fatalf("bad maxFileSize: %v; want the file, the key and what to write", err)
	}
	if _, err := open(4096); err != nil {
		t.Fatalf("a front end's override makes the config's value unused: %v", err)
	}
}

// A commit that touches no file of the workspace (an empty one here; or
// one outside a workspace below the repository's top) is still a commit
// the run made: HEAD is read from the whole repository, not from the
// workspace's history.
func TestLeftoversNameACommitOutsideTheWorkspacesHistory(t *testing.T) {
	ws := t.TempDir()
	userConfig(t, `{}`)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	gitRepo(t, ws)
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: ws, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st := runCommand(t, s, `git commit -q --allow-empty -m "empty one"`)
	l := s.Leftovers(ctx, st.RunID, nil)
	if l == nil || len(l.Commits) != 1 || l.Commits[0].Subject != "empty one" || !strings.Contains(l.Text, "git revert") {
		t.Fatalf("leftovers of a run that made an empty commit: %+v", l)
	}
}
