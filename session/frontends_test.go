package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFrontEndsBuildNoSession checks that no front end (the editor
// server, ACP, the terminal) builds a piece of a workspace's session
// itself: the planner and step model, the journal, the review book and the
// snapshot store are built here, once, so they behave alike wherever the
// user stands (issue 25).
func TestFrontEndsBuildNoSession(t *testing.T) {
	forbidden := []string{
		"llm.Load(", "llm.Decode(", "llm.NewPlanner(", "llm.NewStepModel(",
		"engine.OpenJournal(", "journal.Open(", "review.NewBook(", "gitops.Open(",
		// A run's policy and review mode are composed once (issue 33):
		// session.StartRun, not the engine's Start with a front end's own
		// defaults.
		"eng.Start(", "AllowAllPolicy(", "approval.PolicyAllow",
		// Where agentd works and writes is checked by the session alone,
		// with one remedy text (session.CheckPlaces).
		"CheckRoot(", "CheckStateDir(",
	}
	checked := 0
	for _, dir := range []string{"../rpc", "../acp", "../cmd/agentd"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for i, line := range strings.Split(string(b), "\n") {
				code, _, _ := strings.Cut(line, "//")
				calls := forbidden
				if dir != "../cmd/agentd" {
					// The daemons open their workspaces with the config's
					// maxFileSize (OpenWorkspace, session.Open); the terminal
					// opens some only to find the root.
					calls = append(calls[:len(calls):len(calls)], "workspace.Open(")
				}
				for _, call := range calls {
					if strings.Contains(code, call) {
						t.Errorf("%s:%d calls %s: a front end takes it from the session package (session.Open, session.OpenJournal, session.LoadModels, session.NewBook, session.StartRun, session.CheckPlaces)", f, i+1, call)
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d front-end files found; the test looks in the wrong place", checked)
	}
}
