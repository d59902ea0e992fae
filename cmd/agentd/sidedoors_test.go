package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/fakemodel"
)

// The secrets of the side-door tests: none may reach a model's request, or
// the terminal, unless the user said yes.
const (
	secretEnv = "ENV_SECRET_7f3a91"
	secretKey = "KEY_SECRET_c02b44"
)

// secretWorkspace holds .env and id_rsa, and links with harmless names
// that lead to them: config.txt -> .env, src/notes.md -> ../id_rsa.
func secretWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	for p, c := range map[string]string{".env": "TOKEN=" + secretEnv + "\n", "id_rsa": "-----BEGIN-----\n" + secretKey + "\n", "main.go": "package main\n"} {
		if err := os.WriteFile(filepath.Join(ws, p), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(ws, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"config.txt": ".env", "src/notes.md": "../id_rsa", "README.md": ".env"} {
		if err := os.Symlink(target, filepath.Join(ws, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// noSecretSent fails when a request the model got holds a secret.
func noSecretSent(t *testing.T, srv *fakemodel.Server) {
	t.Helper()
	for i, r := range srv.Requests() {
		for _, s := range []string{secretEnv, secretKey} {
			if at := strings.Index(string(r.Body), s); at >= 0 {
				t.Errorf("request %d to the model holds the secret %s: …%s…", i, s, r.Body[max(0, at-200):at+len(s)])
			}
		}
	}
}

// secretReads is the model's exploration: the secrets by name and through
// links, then a plan.
func secretReads(srv *fakemodel.Server) {
	srv.Push(
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{
			{Name: "read_file", Args: `{"path":".env","why":"config"}`},
			{Name: "read_file", Args: `{"path":"id_rsa","why":"key"}`},
			{Name: "read_file", Args: `{"path":"config.txt","why":"config"}`},
			{Name: "read_file", Args: `{"path":"src/notes.md","why":"notes"}`},
			{Name: "search_code", Args: `{"pattern":"SECRET","why":"secrets"}`},
		}},
		fakemodel.Reply{Text: `{"title":"t","steps":[{"id":"a","tool":"list_dir","args":{"path":"."}}]}`},
	)
}

// TestPlanExplorationAsksForSecrets: the planner's exploration reads
// through the one gate. With standard input closed nobody can be asked:
// every secret (by name or through a link, and README.md -> .env in the
// workspace summary) is left out, and the model and the terminal are both
// told. Answered "n", nothing is read either.
func TestPlanExplorationAsksForSecrets(t *testing.T) {
	for _, stdin := range []string{"", "n\nn\nn\nn\nn\nn\n"} {
		srv := fakemodel.New()
		secretReads(srv)
		modelEnv(t, srv)
		ws := secretWorkspace(t)
		r := agentd(t, stdin, "plan", "look around", "--workspace", ws)
		if r.code != 0 {
			t.Fatalf("stdin %q: code %d: %s", stdin, r.code, r.stderr)
		}
		noSecretSent(t, srv)
		out := r.stdout + r.stderr
		if strings.Contains(out, secretEnv) || strings.Contains(out, secretKey) {
			t.Errorf("stdin %q: the terminal shows a secret:\n%s", stdin, out)
		}
		reqs := srv.Requests()
		last := string(reqs[len(reqs)-1].Body)
		for _, p := range []string{".env", "id_rsa", "config.txt", "src/notes.md"} {
			if !strings.Contains(r.stderr, "not read: ") || !strings.Contains(last, `not read: `+p) && !strings.Contains(last, `not read: approval denied`) {
				t.Errorf("stdin %q: %s: neither the terminal nor the model is told it was not read:\n%s\n%s", stdin, p, r.stderr, last)
			}
		}
		if stdin == "" && (!strings.Contains(r.stderr, "config.txt was left out: it is a sensitive file") || !strings.Contains(last, "README.md was left out")) {
			t.Errorf("the left-out note is not said:\n%s\n%s", r.stderr, last)
		}
		if stdin != "" && !strings.Contains(r.stderr, "the planner's model wants to read src/notes.md, a sensitive file") {
			t.Errorf("no question names the link:\n%s", r.stderr)
		}
	}

	// Answered "y", the read happens: the gate asks, it does not just refuse.
	srv := fakemodel.New()
	srv.Push(
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{Name: "read_file", Args: `{"path":"config.txt","why":"config"}`}}},
		fakemodel.Reply{Text: `{"title":"t","steps":[{"id":"a","tool":"list_dir","args":{"path":"."}}]}`},
	)
	modelEnv(t, srv)
	r := agentd(t, "n\ny\n", "plan", "look around", "--workspace", secretWorkspace(t)) // n: README.md, y: config.txt
	reqs := srv.Requests()
	if r.code != 0 || len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), secretEnv) || strings.Contains(string(reqs[0].Body), secretEnv) {
		t.Fatalf("code %d, %d requests; the allowed read is not in the second request only:\n%s", r.code, len(reqs), r.stderr)
	}
}

// TestRunReadThroughLinkAsks: a plan's read_file of a link with a harmless
// name that leads to a secret asks; with standard input closed and no
// --yes the secret is not printed.
func TestRunReadThroughLinkAsks(t *testing.T) {
	ws := secretWorkspace(t)
	for _, p := range []string{"config.txt", "src/notes.md", "./src/../config.txt"} {
		pl := writePlan(t, `{"steps":[{"id":"r","tool":"read_file","args":{"path":"`+p+`"}}]}`)
		r := agentd(t, "", "run", pl, "--workspace", ws, "--state-dir", t.TempDir(), "--review", "none")
		out := r.stdout + r.stderr
		if r.code == 0 || strings.Contains(out, secretEnv) || strings.Contains(out, secretKey) || !strings.Contains(out, "a sensitive file") {
			t.Errorf("read_file %s: exit %d, want a question and no secret:\n%s", p, r.code, out)
		}
	}
}

// TestChatInHomeRefusesBeforeTheModel: agentd chat in the home directory
// refuses at once, as plan, map and run do: no request reaches the model
// (the first turn's planner would send the home directory's listing).
func TestChatInHomeRefusesBeforeTheModel(t *testing.T) {
	srv := fakemodel.New()
	srv.Handle(func(fakemodel.Request) fakemodel.Reply {
		return fakemodel.Reply{Text: `{"title":"t","steps":[{"id":"a","tool":"list_dir","args":{"path":"."}}]}`}
	})
	modelEnv(t, srv)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte("export TOKEN="+secretEnv+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	r := agentd(t, "list the files\n", "chat", "--workspace", home, "--state-dir", t.TempDir())
	if r.code != exitUsage || len(srv.Requests()) != 0 || !strings.Contains(r.stderr, "agentd chat: ") {
		t.Fatalf("agentd chat in the home directory: exit %d, %d model requests, want 2 and none:\n%s%s", r.code, len(srv.Requests()), r.stdout, r.stderr)
	}
	noSecretSent(t, srv)
}
