package llm

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/internal/fakemodel"
	"github.com/agentd/agentd/workspace"
)

// newWorkspace makes a workspace on disk with a README, code, and ignored files.
func newWorkspace(t *testing.T, files map[string]string) *workspace.Workspace {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(p)), c)
	}
	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

var sampleFiles = map[string]string{
	"README.md":       "# Sample\n\nA sample project for agentd's planner.\n",
	"go.mod":          "module sample\n",
	"main.go":         "package main\n\nfunc main() {}\n",
	"config.json":     `{"version": "1.0.0"}`,
	".gitignore":      "build/\n*.log\n",
	"build/out.bin":   "binary",
	"debug.log":       "noise",
	"pkg/util/u.go":   "package util\n",
	"pkg/util/u2.go":  "package util\n",
	"docs/guide.md":   "guide\n",
	"internal/x/x.go": "package x\n",
}

const validPlan = `{"title":"Bump","steps":[
 {"id":"read","tool":"read_file","args":{"path":"config.json"}},
 {"id":"bump","tool":"json_patch","args":{"path":"config.json","ops":[{"op":"replace","path":"/version","value":"2.0.0"}]},"dependsOn":["read"]}
]}`

func TestCreateWithRepairRound(t *testing.T) {
	for _, model := range []string{"openai:gpt-4o", "anthropic:claude-sonnet-4"} {
		t.Run(model, func(t *testing.T) {
			ws := newWorkspace(t, sampleFiles)
			srv := fakemodel.New()
			invalid := "Here is the plan:\n```json\n" + `{"steps":[
			  {"id":"read","tool":"read_fiel","args":{"path":"config.json"}},
			  {"id":"bump","tool":"json_patch","args":{"path":"config.json"},"dependsOn":["missing"]}]}` + "\n```"
			srv.Push(fakemodel.Reply{Text: invalid, InputTokens: 500, OutputTokens: 80}, fakemodel.Reply{Text: validPlan, InputTokens: 700, OutputTokens: 90})
			pl := NewPlanner(tcpSettings(t, srv, model), tools.Builtin())
			b := engine.NewBudget(0, 0)
			plan, err := pl.Create(t.Context(), CreateRequest{Request: "bump the version to 2.0.0", Workspace: ws,
				OpenFiles: []string{"main.go"}, Selection: &Selection{Path: "main.go", StartLine: 3, EndLine: 3, Text: "func main() {}"}, Budget: b})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Steps) != 2 || plan.Request != "bump the version to 2.0.0" || plan.Title != "Bump" {
				t.Errorf("plan %+v", plan)
			}
			if probs := plans.ValidatePlan(plan, tools.Builtin(), 0); len(probs) > 0 {
				t.Errorf("returned plan invalid: %v", probs)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			first := string(reqs[0].Body)
			for _, want := range []string{"bump the version to 2.0.0", "README.md (head)", "A sample project", "pkg/util/u.go",
				"Open in the editor", "Selection in main.go", "json_patch", `\"ops\"`, "run_command", "search_code"} {
				if !strings.Contains(first, want) {
					t.Errorf("first prompt lacks %q", want)
				}
			}
			for _, ignored := range []string{"build/out.bin", "debug.log"} {
				if strings.Contains(first, ignored) {
					t.Errorf("first prompt lists ignored file %s", ignored)
				}
			}
			repair := lastUserText(t, reqs[1])
			for _, want := range []string{"invalid", "read_fiel", "missing", "step \\\"bump\\\""} {
				if !strings.Contains(repair, want) {
					t.Errorf("repair prompt lacks %q: %s", want, repair)
				}
			}
			if u := pl.Used(); u.InputTokens != 1200 || u.OutputTokens != 170 {
				t.Errorf("planner usage %+v", u)
			}
			if tok, _ := b.Used(); tok != 1370 {
				t.Errorf("budget counted %d tokens", tok)
			}
		})
	}
}

func TestCreateStillInvalid(t *testing.T) {
	srv := fakemodel.New()
	bad := `{"steps":[{"id":"x","tool":"no_such_tool","args":{}}]}`
	srv.Push(fakemodel.Reply{Text: bad}, fakemodel.Reply{Text: bad})
	pl := NewPlanner(memSettings(srv, "openai:gpt-4o", nil), nil)
	_, err := pl.Create(t.Context(), CreateRequest{Request: "do it", Workspace: newWorkspace(t, sampleFiles)})
	var ve *plans.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "no_such_tool") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (one repair round)", n)
	}
}

func TestCreateNotJSONThenValid(t *testing.T) {
	srv := fakemodel.New()
	srv.Push(fakemodel.Reply{Text: "Sure! I would first read the file."}, fakemodel.Reply{Text: validPlan})
	pl := NewPlanner(memSettings(srv, "openai:gpt-4o", nil), nil)
	if _, err := pl.Create(t.Context(), CreateRequest{Request: "do it"}); err != nil {
		t.Fatal(err)
	}
	if r := lastUserText(t, srv.Requests()[1]); !strings.Contains(r, "JSON syntax") {
		t.Errorf("repair prompt: %s", r)
	}
}

func TestCreateWithoutModel(t *testing.T) {
	s, _ := Load(LoadOptions{Getenv: envOf(map[string]string{"XDG_CONFIG_HOME": t.TempDir()})})
	_, err := NewPlanner(s, nil).Create(t.Context(), CreateRequest{Request: "x"})
	if !errors.Is(err, engine.ErrNoModel) {
		t.Fatalf("err = %v", err)
	}
}

func TestRegenerate(t *testing.T) {
	srv := fakemodel.New()
	srv.Push(fakemodel.Reply{Text: `{"steps":[{"id":"only","tool":"read_file","args":{"path":"config.json"}}]}`})
	pl := NewPlanner(memSettings(srv, "openai:gpt-4o", nil), nil)
	old, err := plans.ParsePlan("p.json", []byte(validPlan))
	if err != nil {
		t.Fatal(err)
	}
	old.ID, old.Version, old.Request = "p1", 3, "bump"
	np, err := pl.Regenerate(t.Context(), old, "just read it, change nothing")
	if err != nil {
		t.Fatal(err)
	}
	if np.ID != "p1" || np.Version != 4 || len(np.Steps) != 1 || np.Title != "Bump" || len(np.History) != 1 ||
		np.History[0].Reason != "just read it, change nothing" {
		t.Errorf("new plan %+v", np)
	}
	body := string(srv.Requests()[0].Body)
	if !strings.Contains(body, "just read it, change nothing") || !strings.Contains(body, "json_patch") {
		t.Errorf("prompt lacks the feedback or the current plan")
	}
}

func TestSummaryWithinBudget(t *testing.T) {
	files := map[string]string{"README.md": strings.Repeat("long readme line\n", 500)}
	for i := range 3000 {
		files[filepath.ToSlash(filepath.Join("src", "pkg"+string(rune('a'+i%26)), "file"+strings.Repeat("x", i%7)+string(rune('0'+i%10))+"_"+itoa(i)+".go"))] = "x"
	}
	ws := newWorkspace(t, files)
	s, err := workspaceSummary(t.Context(), approval.ReadGate{WS: ws}, nil, nil, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) > 1000*4+200 {
		t.Errorf("summary is %d chars, budget ~4000", len(s))
	}
	if !strings.Contains(s, "Files (3001") || !strings.Contains(s, "src/ (3000)") || !strings.Contains(s, "more files") {
		t.Errorf("summary: %s", s)
	}
}

func itoa(i int) string { return fmt.Sprintf("%04d", i) }
