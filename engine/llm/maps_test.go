package llm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/internal/fakemodel"
	"github.com/agentd/agentd/internal/repomap"
)

// TestRepositoryMapIsThePlanners: RepositoryMap (what `agentd map` prints)
// is the map Create puts in the planner's prompt for the same request and
// open files, lists the file defining the symbol the request names first,
// and shares the planner's cache in StateDir.
func TestRepositoryMapIsThePlanners(t *testing.T) {
	ws := newWorkspace(t, exploreFiles)
	srv := fakemodel.New()
	srv.Push(fakemodel.Reply{Text: exploringPlan})
	pl := NewPlanner(tcpSettings(t, srv, "openai:gpt-4o"), tools.Builtin())
	pl.StateDir = t.TempDir()
	t.Cleanup(func() { pl.Close() })
	ctx := context.Background()
	const request = "Discount should never exceed MaxDiscount"
	if _, err := pl.Create(ctx, CreateRequest{Request: request, Workspace: ws, OpenFiles: []string{"main.go"}, ExploreRounds: -1}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d calls, want 1", len(reqs))
	}
	prompt := ""
	msgs, _ := reqs[0].JSON["messages"].([]any)
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "user" {
			prompt, _ = mm["content"].(string)
			break
		}
	}

	// A planner of its own (a second process, as agentd map is) over the
	// same state dir: the same map, from the cache.
	other := NewPlanner(&Settings{}, nil)
	other.StateDir = pl.StateDir
	rm, err := other.RepositoryMap(ctx, ws, MapQuery{Request: request, Focus: []string{"main.go"}})
	if err != nil {
		t.Fatal(err)
	}
	if rm.Text == "" || !strings.Contains(prompt, rm.Text) {
		t.Errorf("the planner's prompt does not hold RepositoryMap's text:\n%s\n--- prompt:\n%s", rm.Text, prompt)
	}
	if len(rm.Files) != 3 || rm.Files[0] != "cart/discount.go" || rm.Files[1] != "main.go" || rm.SourceFiles != 3 {
		t.Errorf("files %v of %d, want cart/discount.go (named) then main.go (open)", rm.Files, rm.SourceFiles)
	}
	if st := other.repoMap(ws).Stats(); st.Parsed != 0 {
		t.Errorf("the second planner parsed %d files; the cache in %s should have had them", st.Parsed, filepath.Join(pl.StateDir, "repomap"))
	}
}

// A state dir inside the workspace is never written, whichever front end
// gave it: the map is made and rendered, kept in memory only.
func TestRepositoryMapNeverCachesInsideTheWorkspace(t *testing.T) {
	ws := newWorkspace(t, exploreFiles)
	pl := NewPlanner(&Settings{}, nil)
	pl.StateDir = filepath.Join(ws.Root(), "state")
	t.Cleanup(func() { pl.Close() })
	rm, err := pl.RepositoryMap(context.Background(), ws, MapQuery{Request: "Discount"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rm.Files) == 0 {
		t.Errorf("no map: %+v", rm)
	}
	if rm.Budget != repomap.DefaultTokens || rm.Tokens != repomap.TokensOf(rm.Text) || rm.Tokens == 0 || rm.Tokens > rm.Budget {
		t.Errorf("tokens %d of budget %d for a %d-byte map; want the map's own count within the default budget", rm.Tokens, rm.Budget, len(rm.Text))
	}
	if _, err := os.Stat(pl.StateDir); err == nil {
		t.Errorf("the map wrote its cache to %s, inside the workspace", pl.StateDir)
	}
}
