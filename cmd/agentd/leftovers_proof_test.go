//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/fakemodel"
)

// A run's leftovers (what undo cannot take back: the commit it made in
// the user's repository, the file it left staged, the big file its
// snapshots left out under the user config's maxFileSize) are
// recorded by the session whichever front end started the run, and named
// alike by an undo from any front end: a run started at the terminal is
// undone over the server, one started over the server is undone from ACP,
// one started from ACP is undone at the terminal.
func TestUndoLeftoversEveryFrontEnd(t *testing.T) {
	const command = `echo new > new.txt && git add new.txt && git commit -qm "add new.txt" && echo s > staged.txt && git add staged.txt && head -c 4096 /dev/zero > big.bin`
	cmdJSON, _ := json.Marshal(command)
	plan := `{"title":"commit","steps":[{"id":"c","tool":"run_command","args":{"command":` + string(cmdJSON) + `}}]}`
	gitEnv := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_CONFIG_NOSYSTEM=1"}
	srv := fakemodel.New()
	srv.Handle(func(fakemodel.Request) fakemodel.Reply { return fakemodel.Reply{Text: plan} })
	url := srv.Start(t)
	modelEnv := []string{"AGENTD_MODEL=openai:gpt-4o", "OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=sk-test"}

	type copyOf struct{ ws, state string }
	repo := func() copyOf {
		c := copyOf{t.TempDir(), t.TempDir()}
		os.WriteFile(filepath.Join(c.ws, "a.txt"), []byte("a\n"), 0o644)
		for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "start"}} {
			cmd := exec.Command("git", args...)
			cmd.Dir, cmd.Env = c.ws, append(os.Environ(), gitEnv...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		return c
	}
	p := writePlan(t, plan)
	xdg := t.TempDir()
	os.MkdirAll(filepath.Join(xdg, "agentd"), 0o755)
	os.WriteFile(filepath.Join(xdg, "agentd", "config.json"), []byte(`{"maxFileSize":"1KiB"}`), 0o644)
	env := append(append([]string{}, gitEnv...), "XDG_CONFIG_HOME="+xdg, "AGENTD_MODEL=")

	// Started at the terminal, undone over the server.
	a := repo()
	if r := agentdIn(t, a.ws, agentdBin, env, "run", p, "--yes", "--workspace", a.ws, "--state-dir", a.state); r.code != 0 {
		t.Fatalf("agentd run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	sa := startServeProc(t, a.state, env...)
	initialize(sa.lspConn, a.ws)
	res := sa.call("agentd/undo/run", map[string]any{})
	if res["error"] != nil {
		t.Fatalf("agentd/undo/run: %v", res["error"])
	}
	var fromServer struct {
		Leftovers struct {
			Commits  []struct{ SHA, Subject string }
			Revert   string
			Staged   []string
			BigFiles []string
			Text     string
		}
	}
	b, _ := json.Marshal(res["result"])
	json.Unmarshal(b, &fromServer)
	l := fromServer.Leftovers
	if len(l.Commits) != 1 || l.Commits[0].Subject != "add new.txt" || !strings.HasPrefix(l.Revert, "git revert --no-edit ") ||
		fmt.Sprint(l.Staged) != "[staged.txt]" || fmt.Sprint(l.BigFiles) != "[big.bin]" {
		t.Errorf("agentd/undo/run leftovers: %s", b)
	}

	// Started over the server, undone from ACP.
	bb := repo()
	sb := startServeProc(t, bb.state, env...)
	initializeWith(sb.lspConn, bb.ws, map[string]any{"clientFeatures": map[string]any{"approvalRequest": true}})
	if st, _ := runOverProtocol(t, sb.lspConn, plan, "allow_once"); st != "completed" {
		t.Fatalf("run over the server: %s", st)
	}
	ab := startACP(t, bb.ws, bb.state, env...)
	if msg := ab.prompt("/undo"); msg != "" {
		t.Fatalf("ACP /undo: %s", msg)
	}
	fromACP := ab.said.String()

	// Started from ACP (auto mode, the plan from the fake model), undone
	// at the terminal.
	c := repo()
	ac := startACP(t, c.ws, c.state, append(append([]string{}, env...), modelEnv...)...)
	if r := ac.call("session/set_mode", map[string]any{"sessionId": ac.sid, "modeId": "auto"}); r["error"] != nil {
		t.Fatalf("set_mode: %v", r["error"])
	}
	if msg := ac.prompt("commit a new file"); msg != "" {
		t.Fatalf("ACP prompt: %s", msg)
	}
	if _, err := os.Stat(filepath.Join(c.ws, "big.bin")); err != nil {
		t.Fatalf("the ACP run did not run the command: %v\n%s", err, ac.said.String())
	}
	u := agentdIn(t, c.ws, agentdBin, env, "undo", "--workspace", c.ws, "--state-dir", c.state)
	if u.code != 0 {
		t.Fatalf("agentd undo: exit %d\n%s%s", u.code, u.stdout, u.stderr)
	}

	// The same words everywhere (the commits' hashes differ per copy).
	sha := regexp.MustCompile(`\b[0-9a-f]{12}\b`)
	norm := func(s string) string { return sha.ReplaceAllString(s, "SHA") }
	want := norm(l.Text)
	for _, line := range []string{
		"not undone: the run made 1 commit in your repository (undo never changes your git history):",
		"  SHA add new.txt",
		"  to take them back too: git revert --no-edit SHA..SHA",
		"not undone: the run left staged.txt in your index (staged); to unstage: git restore --staged -- staged.txt",
		"  big.bin (larger than the snapshot size limit (1024 bytes))",
	} {
		if !strings.Contains(want, line) {
			t.Errorf("the server's leftovers do not say %q:\n%s", line, want)
		}
	}
	if !strings.Contains(norm(fromACP), want) {
		t.Errorf("ACP's /undo does not name the same leftovers:\n%s\nwant:\n%s", fromACP, want)
	}
	if !strings.Contains(norm(u.stdout), want) {
		t.Errorf("agentd undo does not name the same leftovers:\n%s\nwant:\n%s", u.stdout, want)
	}
}
