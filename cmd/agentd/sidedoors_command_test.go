package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/internal/fakemodel"
)

// TestRunCommandNamingASecretAsks: a run_command whose line names a
// sensitive file — by name, through a link with a harmless name
// (config.txt -> .env), or through ".." — asks like read_file, even when
// a remembered rule allows the command itself: what it prints goes to a
// model (here an llm step reading its stdout). With standard input closed
// nobody can be asked: the command is not run, the terminal says why,
// and no request to the model holds the secret. Answered "y" it runs.
func TestRunCommandNamingASecretAsks(t *testing.T) {
	for _, command := range []string{"cat config.txt", "cat 'src/../.env'", "grep -h TOKEN ./src/notes.md .env", "cat <.env"} {
		srv := fakemodel.New()
		srv.Push(fakemodel.Reply{Text: "ok"})
		modelEnv(t, srv)
		ws, state := secretWorkspace(t), t.TempDir()
		allowCommand(t, state, ws, command)
		pl := writePlan(t, `{"steps":[{"id":"c","tool":"run_command","args":{"command":`+quoteJSON(command)+`}},
			{"id":"l","kind":"llm","prompt":"What does this say? ${c.stdout}","dependsOn":["c"]}]}`)
		r := agentd(t, "", "run", pl, "--workspace", ws, "--state-dir", state, "--review", "none")
		out := r.stdout + r.stderr
		noSecretSent(t, srv)
		if strings.Contains(out, secretEnv) || strings.Contains(out, secretKey) || !strings.Contains(out, "a sensitive file") || !strings.Contains(out, "run_command was not run") {
			t.Errorf("%s: exit %d; want the command not run, said, and no secret shown:\n%s", command, r.code, out)
		}
	}

	// Answered "y", the command runs: the gate asks, it does not refuse.
	srv := fakemodel.New()
	srv.Push(fakemodel.Reply{Text: "ok"})
	modelEnv(t, srv)
	ws, state := secretWorkspace(t), t.TempDir()
	allowCommand(t, state, ws, "cat config.txt")
	pl := writePlan(t, `{"steps":[{"id":"c","tool":"run_command","args":{"command":"cat config.txt"}},
		{"id":"l","kind":"llm","prompt":"What does this say? ${c.stdout}","dependsOn":["c"]}]}`)
	r := agentd(t, "y\n", "run", pl, "--workspace", ws, "--state-dir", state, "--review", "none")
	reqs := srv.Requests()
	if r.code != 0 || len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), secretEnv) || !strings.Contains(r.stdout+r.stderr, "config.txt, a sensitive file") {
		t.Fatalf("answered y: exit %d, %d requests; want the question and the command run:\n%s%s", r.code, len(reqs), r.stdout, r.stderr)
	}
}

// allowCommand remembers "always allow this command" in the workspace's
// rule store, as answering "a" at a question would.
func allowCommand(t *testing.T, state, ws, command string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(ws)
	if err != nil {
		t.Fatal(err)
	}
	j, err := engine.OpenJournal(state, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Rules().Remember(approval.ApprovalRequest{Category: tools.CategoryCommand, Tool: "run_command", Command: command}, true, ""); err != nil {
		t.Fatal(err)
	}
}

func quoteJSON(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
