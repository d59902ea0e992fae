package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/internal/fakemodel"
)

func TestMain(m *testing.M) {
	// The planner's repository map cache goes to the state dir: never the
	// user's during tests.
	dir, err := os.MkdirTemp("", "agentd-llm-test-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("AGENTD_STATE_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var exploreFiles = map[string]string{
	"README.md":        "# Shop\n",
	"go.mod":           "module shop\n",
	"cart/cart.go":     "package cart\n\n// Total sums the cart.\nfunc Total(items []int) int {\n\tt := 0\n\tfor _, i := range items {\n\t\tt += i\n\t}\n\treturn t\n}\n",
	"cart/discount.go": "package cart\n\nconst MaxDiscount = 50\n\nfunc Discount(total int) int { return total / 10 }\n",
	"main.go":          "package main\n\nimport \"shop/cart\"\n\nfunc main() { println(cart.Total(nil)) }\n",
}

// exploringPlan edits cart.go with an oldText read during exploration.
const exploringPlan = `{"title":"Cap the discount","steps":[
 {"id":"cap","tool":"edit_file","args":{"path":"cart/discount.go","edits":[{"oldText":"return total / 10","newText":"return min(total/10, MaxDiscount)"}]}},
 {"id":"test","tool":"run_command","args":{"command":"go test ./..."},"dependsOn":["cap"]}
]}`

// messagesOf returns a recorded request's messages as JSON text.
func messagesOf(r fakemodel.Request) string { return string(mustJSON(r.JSON["messages"])) }

// toolNames lists the tools a recorded request offers (both APIs).
func toolNames(r fakemodel.Request) []string {
	var out []string
	ts, _ := r.JSON["tools"].([]any)
	for _, t := range ts {
		m := t.(map[string]any)
		if f, ok := m["function"].(map[string]any); ok {
			out = append(out, f["name"].(string))
		} else {
			out = append(out, m["name"].(string))
		}
	}
	return out
}

type progressLog struct {
	mu  sync.Mutex
	got []Progress
}

func (l *progressLog) add(p Progress) { l.mu.Lock(); l.got = append(l.got, p); l.mu.Unlock() }

// TestExploreThenPlan: the model reads two files (one of them open in the
// editor with unsaved changes), searches once, then plans; the plan
// records what it read and why, and progress is reported.
func TestExploreThenPlan(t *testing.T) {
	for _, model := range []string{"openai:gpt-4o", "anthropic:claude-sonnet-4"} {
		t.Run(model, func(t *testing.T) {
			ws := newWorkspace(t, exploreFiles)
			// An unsaved buffer: the model must see it, not the disk.
			unsaved := strings.Replace(exploreFiles["cart/discount.go"], "total / 10", "total / 10 // unsaved", 1)
			if err := ws.OpenOverlay("cart/discount.go", []byte(unsaved), 1); err != nil {
				t.Fatal(err)
			}
			srv := fakemodel.New()
			srv.Push(
				fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{
					{ID: "c1", Name: "read_file", Args: `{"path":"cart/discount.go","why":"the discount rule"}`},
					{ID: "c2", Name: "read_file", Args: `{"path":"cart/cart.go","why":"how totals are made"}`},
				}},
				fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{
					{ID: "c3", Name: "search_code", Args: `{"pattern":"Discount\\(","why":"who calls it"}`},
				}},
				fakemodel.Reply{Text: strings.Replace(exploringPlan, "return total / 10", "return total / 10 // unsaved", 1)},
			)
			var prog progressLog
			pl := NewPlanner(tcpSettings(t, srv, model), tools.Builtin())
			plan, err := pl.Create(context.Background(), CreateRequest{Request: "cap the Discount at MaxDiscount", Workspace: ws,
				OnProgress: prog.add, OpenFiles: []string{"cart/discount.go"}})
			if err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d model calls, want 3", len(reqs))
			}
			if got := toolNames(reqs[0]); strings.Join(got, ",") != "read_file,list_dir,search_files,search_code" {
				t.Errorf("exploration tools offered: %v", got)
			}
			if !strings.Contains(string(reqs[0].Body), `\"why\"`) && !strings.Contains(string(reqs[0].Body), `"why"`) {
				t.Error("the tools' schemas do not ask for a why")
			}
			first := messagesOf(reqs[0])
			for _, want := range []string{"Repository map", "cart/discount.go", "func Discount", "oldText you copied exactly"} {
				if !strings.Contains(first, want) {
					t.Errorf("first prompt lacks %q", want)
				}
			}
			second := messagesOf(reqs[1])
			if !strings.Contains(second, "// unsaved") {
				t.Error("read_file did not see the unsaved buffer")
			}
			if !strings.Contains(messagesOf(reqs[2]), "main.go") {
				t.Error("the search result did not reach the model")
			}
			if len(plan.Context) != 3 {
				t.Fatalf("context %+v, want 3 items", plan.Context)
			}
			want := []struct{ tool, arg, why string }{
				{"read_file", "cart/discount.go", "the discount rule"},
				{"read_file", "cart/cart.go", "how totals are made"},
				{"search_code", "Discount", "who calls it"},
			}
			for i, w := range want {
				c := plan.Context[i]
				if c.Tool != w.tool || !strings.Contains(string(c.Args), w.arg) || c.Why != w.why || strings.Contains(string(c.Args), "why") {
					t.Errorf("context[%d] = %s %s %q, want %s %s %q", i, c.Tool, c.Args, c.Why, w.tool, w.arg, w.why)
				}
			}
			// The context survives a round trip through the plan format.
			data, _ := json.Marshal(plan)
			back, err := plans.ParsePlan("plan.json", data)
			if err != nil || len(back.Context) != 3 {
				t.Errorf("round trip: %v, %d items", err, len(back.Context))
			}
			var msgs []string
			for _, p := range prog.got {
				msgs = append(msgs, p.Message)
			}
			if got := strings.Join(msgs, "|"); !strings.Contains(got, "mapping the repository") || !strings.Contains(got, "cart/discount.go") ||
				!strings.Contains(got, "cart/cart.go") {
				t.Errorf("progress %q", got)
			}
		})
	}
}

// alwaysExploring answers every exploring call with another read and the
// final call (no tools offered) with plan, or with more tool calls if plan
// is empty.
func alwaysExploring(plan string) func(fakemodel.Request) fakemodel.Reply {
	return func(r fakemodel.Request) fakemodel.Reply {
		offered := toolNames(r)
		exploring := len(offered) > 1
		if exploring || plan == "" {
			return fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{Name: "read_file", Args: `{"path":"cart/cart.go","why":"again"}`}}}
		}
		return fakemodel.Reply{Text: plan}
	}
}

// TestExploreRoundLimit: a model that keeps exploring gets exactly the
// configured rounds, then one call that asks for the plan now.
func TestExploreRoundLimit(t *testing.T) {
	ws := newWorkspace(t, exploreFiles)
	srv := fakemodel.New()
	srv.Handle(alwaysExploring(exploringPlan))
	pl := NewPlanner(tcpSettings(t, srv, "openai:gpt-4o"), tools.Builtin())
	plan, err := pl.Create(context.Background(), CreateRequest{Request: "cap the discount", Workspace: ws, ExploreRounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d calls, want 2 rounds + 1 final", len(reqs))
	}
	last := reqs[2]
	if len(toolNames(last)) != 0 {
		t.Errorf("the final call still offers tools %v", toolNames(last))
	}
	if !strings.Contains(lastUserText(t, last), "Answer now with the plan") || !strings.Contains(lastUserText(t, last), "all 2 rounds") {
		t.Errorf("final call: %s", lastUserText(t, last))
	}
	if len(plan.Context) != 2 {
		t.Errorf("context has %d items, want 2", len(plan.Context))
	}
}

// TestExploreEndlessToolCalls: a model that calls tools even when asked
// for the plan gets a clear error, after rounds+1 calls.
func TestExploreEndlessToolCalls(t *testing.T) {
	ws := newWorkspace(t, exploreFiles)
	srv := fakemodel.New()
	srv.Handle(alwaysExploring(""))
	pl := NewPlanner(tcpSettings(t, srv, "anthropic:claude-sonnet-4"), tools.Builtin())
	_, err := pl.Create(context.Background(), CreateRequest{Request: "cap the discount", Workspace: ws, ExploreRounds: 3})
	if err == nil || !strings.Contains(err.Error(), "kept calling tools") {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 4 {
		t.Errorf("%d calls, want 3 rounds + 1 final", n)
	}
}

// TestExploreBudget: the exploration's token budget ends it early, and the
// run budget stops calls before they are made.
func TestExploreBudget(t *testing.T) {
	ws := newWorkspace(t, map[string]string{"big.go": "package big\n\n" + strings.Repeat("// filler line of text\n", 400), "go.mod": "module big\n"})
	srv := fakemodel.New()
	srv.Handle(alwaysExploring(`{"steps":[{"id":"t","tool":"run_command","args":{"command":"go vet ./..."}}]}`))
	pl := NewPlanner(tcpSettings(t, srv, "openai:gpt-4o"), tools.Builtin())
	srv.Handle(func(r fakemodel.Request) fakemodel.Reply {
		if len(toolNames(r)) > 1 {
			return fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{Name: "read_file", Args: `{"path":"big.go"}`}}}
		}
		return fakemodel.Reply{Text: `{"steps":[{"id":"t","tool":"run_command","args":{"command":"go vet ./..."}}]}`}
	})
	plan, err := pl.Create(context.Background(), CreateRequest{Request: "vet it", Workspace: ws, ExploreTokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	// big.go is about 2,300 tokens: one read uses the budget up.
	if len(reqs) != 2 || len(plan.Context) != 1 {
		t.Fatalf("%d calls and %d context items, want 2 and 1", len(reqs), len(plan.Context))
	}
	if !strings.Contains(lastUserText(t, reqs[1]), "exploration budget of 1000 tokens") {
		t.Errorf("final call: %s", lastUserText(t, reqs[1]))
	}

	// The run's token budget: no call is made beyond it.
	srv2 := fakemodel.New()
	srv2.Handle(func(r fakemodel.Request) fakemodel.Reply {
		rep := alwaysExploring("")(r)
		rep.InputTokens, rep.OutputTokens = 5000, 10
		return rep
	})
	pl2 := NewPlanner(tcpSettings(t, srv2, "openai:gpt-4o"), tools.Builtin())
	_, err = pl2.Create(context.Background(), CreateRequest{Request: "vet it", Workspace: ws, Budget: engine.NewBudget(20000, 0)})
	if !errors.Is(err, engine.ErrBudgetExceeded) {
		t.Fatalf("err = %v, want budget exceeded", err)
	}
	if n := len(srv2.Requests()); n < 1 || n >= DefaultExploreRounds {
		t.Errorf("%d calls made under the budget", n)
	}
}

// TestExploreWriteToolRefused: a write tool called while exploring is not
// run; the model is told to put changes in the plan.
func TestExploreWriteToolRefused(t *testing.T) {
	ws := newWorkspace(t, exploreFiles)
	srv := fakemodel.New()
	srv.Push(
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{Name: "write_file", Args: `{"path":"cart/cart.go","content":"package cart\n"}`}}},
		fakemodel.Reply{Text: exploringPlan},
	)
	pl := NewPlanner(tcpSettings(t, srv, "openai:gpt-4o"), tools.Builtin())
	plan, err := pl.Create(context.Background(), CreateRequest{Request: "cap the discount", Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(ws.Root(), "cart/cart.go"))
	if string(data) != exploreFiles["cart/cart.go"] {
		t.Error("write_file ran while planning")
	}
	if !strings.Contains(lastUserText(t, srv.Requests()[1]), "not available while planning") {
		t.Errorf("tool result: %s", lastUserText(t, srv.Requests()[1]))
	}
	if len(plan.Context) != 0 {
		t.Errorf("a refused call is in the context: %+v", plan.Context)
	}
}

// TestBadPlanAnswers: prose and invalid JSON get a repair round; still
// bad after it is a clear error.
func TestBadPlanAnswers(t *testing.T) {
	cases := []struct {
		name    string
		replies []string
		wantErr string
	}{
		{"prose then plan", []string{"I would first look at the cart and then change the discount.", exploringPlan}, ""},
		{"invalid JSON then plan", []string{`{"steps": [{"id": "a", "tool": "read_file", "args": {"path": }]}`, exploringPlan}, ""},
		{"prose twice", []string{"Sure! Let me think.", "Here is what I would do: change the discount."}, "JSON syntax"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := newWorkspace(t, exploreFiles)
			srv := fakemodel.New()
			for _, r := range tc.replies {
				srv.Push(fakemodel.Reply{Text: r})
			}
			pl := NewPlanner(tcpSettings(t, srv, "openai:gpt-4o"), tools.Builtin())
			plan, err := pl.Create(context.Background(), CreateRequest{Request: "cap the discount", Workspace: ws})
			if tc.wantErr == "" {
				if err != nil || plan == nil {
					t.Fatalf("err = %v", err)
				}
			} else {
				var ve *plans.ValidationError
				if !errors.As(err, &ve) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a validation error with %q", err, tc.wantErr)
				}
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("%d calls, want the answer and one repair", n)
			}
		})
	}
}

// TestEditWarningRepair: an edit_file whose oldText is not in the file
// goes back to the model once; a warning that remains is reported.
func TestEditWarningRepair(t *testing.T) {
	guessed := strings.Replace(exploringPlan, "return total / 10", "return total/10", 1)
	for _, fixed := range []bool{true, false} {
		ws := newWorkspace(t, exploreFiles)
		srv := fakemodel.New()
		second := exploringPlan
		if !fixed {
			second = guessed
		}
		srv.Push(fakemodel.Reply{Text: guessed}, fakemodel.Reply{Text: second})
		var warns []plans.Problem
		pl := NewPlanner(tcpSettings(t, srv, "openai:gpt-4o"), tools.Builtin())
		plan, err := pl.Create(context.Background(), CreateRequest{Request: "cap the discount", Workspace: ws,
			OnWarnings: func(w []plans.Problem) { warns = w }})
		if err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 || !strings.Contains(lastUserText(t, reqs[1]), "does not occur in cart/discount.go") {
			t.Fatalf("fixed=%v: %d calls; repair prompt %s", fixed, len(reqs), lastUserText(t, reqs[len(reqs)-1]))
		}
		if fixed != (len(warns) == 0) || plan == nil {
			t.Errorf("fixed=%v: warnings %v", fixed, warns)
		}
	}
}

// TestWatchedRepositoryMap: with WatchMaps (the daemon), the second plan's
// map re-checks only what the file watcher reports instead of walking the
// workspace, and still shows a function added since the first plan.
func TestWatchedRepositoryMap(t *testing.T) {
	ws := newWorkspace(t, exploreFiles)
	srv := fakemodel.New()
	srv.Push(fakemodel.Reply{Text: exploringPlan}, fakemodel.Reply{Text: exploringPlan})
	pl := NewPlanner(tcpSettings(t, srv, "openai:gpt-4o"), tools.Builtin())
	pl.StateDir = t.TempDir()
	pl.WatchMaps = true
	t.Cleanup(func() { pl.Close() })
	ctx := context.Background()
	if _, err := pl.Create(ctx, CreateRequest{Request: "cap the discount", Workspace: ws, ExploreRounds: -1}); err != nil {
		t.Fatal(err)
	}
	src := "package cart\n\nconst MaxDiscount = 50\n\nfunc Discount(total int) int { return total / 10 }\n\nfunc Surcharge(total int) int { return 0 }\n"
	if err := os.WriteFile(filepath.Join(ws.Root(), "cart", "discount.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := pl.Create(ctx, CreateRequest{Request: "make Surcharge add 5%", Workspace: ws, ExploreRounds: -1}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d calls, want 2", len(reqs))
	}
	if msgs := messagesOf(reqs[1]); !strings.Contains(msgs, "func Surcharge") {
		t.Errorf("the second plan's map does not show Surcharge: %s", msgs)
	}
	st := pl.repoMap(ws).Stats()
	if st.Walked || st.Read != 1 {
		t.Errorf("second map: %+v, want no walk and 1 file read", st)
	}
	if err := pl.Close(); err != nil {
		t.Fatal(err)
	}
}

// The repository map's cache is named for what it is (.map, a flat binary
// file, no longer gob); the files of the old name are removed.
func TestRepositoryMapCacheName(t *testing.T) {
	ws := newWorkspace(t, exploreFiles)
	srv := fakemodel.New()
	srv.Push(fakemodel.Reply{Text: exploringPlan})
	pl := NewPlanner(tcpSettings(t, srv, "openai:gpt-4o"), tools.Builtin())
	pl.StateDir = t.TempDir()
	t.Cleanup(func() { pl.Close() })
	sum := sha256.Sum256([]byte(ws.Root()))
	base := filepath.Join(pl.StateDir, "repomap", hex.EncodeToString(sum[:8]))
	os.MkdirAll(filepath.Dir(base), 0o700)
	for _, old := range []string{".gob", ".gob.delta", ".gob.dirs"} {
		if err := os.WriteFile(base+old, []byte("old cache"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pl.Create(context.Background(), CreateRequest{Request: "cap the discount", Workspace: ws, ExploreRounds: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(base + ".map"); err != nil {
		t.Errorf("no cache at %s.map: %v", base, err)
	}
	if left, _ := filepath.Glob(base + ".gob*"); len(left) != 0 {
		t.Errorf("old cache files left: %v", left)
	}
}
