package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/fakemodel"
)

// greetPlan edits greet.go with text the model read while exploring.
const greetPlan = `{"title":"French","steps":[{"id":"fr","tool":"edit_file","args":{"path":"greet/greet.go","edits":[{"oldText":"Hello, ","newText":"Bonjour, "}]}}]}`

func exploringReplies(srv *fakemodel.Server) {
	srv.Push(
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{Name: "read_file", Args: `{"path":"greet/greet.go","why":"the greeting"}`}}},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{Name: "search_code", Args: `{"pattern":"Hello\\(","why":"its callers"}`}}},
		fakemodel.Reply{Text: greetPlan},
	)
}

// TestPlanExploresAndShowsContext: `agentd plan` lets the model read and
// search first, reports each read, writes the context into the plan and
// shows it; --explore bounds the rounds.
func TestPlanExploresAndShowsContext(t *testing.T) {
	srv := fakemodel.New()
	exploringReplies(srv)
	modelEnv(t, srv)
	ws := demoCopy(t)
	if data, err := os.ReadFile(filepath.Join(ws, "greet/greet.go")); err != nil || !strings.Contains(string(data), "Hello, ") {
		t.Fatalf("the demo's greet.go changed; update this test: %v", err)
	}
	out := filepath.Join(t.TempDir(), "plan.json")
	r := agentd(t, "", "plan", "greet in French", "--workspace", ws, "-o", out)
	if r.code != 0 {
		t.Fatalf("code %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"mapping the repository", "exploring (round 1 of 6): Read greet/greet.go",
		"The model looked at 2 things", "read_file greet/greet.go — the greeting", "search_code Hello\\( — its callers"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	var p struct {
		Context []struct{ Tool, Why string }
	}
	data, _ := os.ReadFile(out)
	if err := json.Unmarshal(data, &p); err != nil || len(p.Context) != 2 || p.Context[1].Tool != "search_code" {
		t.Fatalf("plan context %s: %v", data, err)
	}
	if v := agentd(t, "", "validate", out); v.code != 0 {
		t.Errorf("a plan with context does not validate: %s", v.stdout+v.stderr)
	}

	// --explore 1: one round, then the call that asks for the plan.
	srv2 := fakemodel.New()
	srv2.Handle(func(r fakemodel.Request) fakemodel.Reply {
		if r.JSON["tools"] != nil {
			return fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{Name: "list_dir", Args: `{"path":"."}`}}}
		}
		return fakemodel.Reply{Text: greetPlan}
	})
	modelEnv(t, srv2)
	r = agentd(t, "", "plan", "greet in French", "--workspace", ws, "--explore", "1")
	if r.code != 0 || len(srv2.Requests()) != 2 {
		t.Fatalf("code %d, %d calls: %s", r.code, len(srv2.Requests()), r.stderr)
	}
}

// TestServePlanCreateExplores: agentd/plan/create reports progress on the
// workDoneToken while the model explores, and the Plan carries the context.
func TestServePlanCreateExplores(t *testing.T) {
	ws := demoCopy(t)
	srv := fakemodel.New()
	url := srv.Start(t)
	exploringReplies(srv)
	c := startServe(t, "XDG_CONFIG_HOME="+t.TempDir(), "AGENTD_MODEL=openai:test-model",
		"OPENAI_BASE_URL="+url+"/v1", "OPENAI_API_KEY=sk-test-serve")
	initialize(c, ws)
	c.id++
	c.send(map[string]any{"id": c.id, "method": "agentd/plan/create", "params": map[string]any{
		"request": "greet in French", "workDoneToken": "plan-1", "exploreRounds": 3}})
	var progress []string
	var res map[string]any
	for res == nil {
		m := c.read()
		if m["method"] == "$/progress" {
			params := m["params"].(map[string]any)
			if params["token"] != "plan-1" {
				t.Errorf("progress token %v", params["token"])
			}
			v := params["value"].(map[string]any)
			msg, _ := v["message"].(string)
			progress = append(progress, v["kind"].(string)+":"+msg)
			continue
		}
		if id, ok := m["id"].(float64); ok && int(id) == c.id && m["method"] == nil {
			res = m
		}
	}
	if res["error"] != nil {
		t.Fatalf("plan/create: %v", res["error"])
	}
	got := strings.Join(progress, "|")
	if !strings.HasPrefix(got, "begin:") || !strings.Contains(got, "report:exploring (round 1 of 3): Read greet/greet.go") || !strings.HasSuffix(got, "end:") {
		t.Errorf("progress %q", got)
	}
	plan := res["result"].(map[string]any)
	ctxItems, _ := plan["context"].([]any)
	if len(ctxItems) != 2 {
		t.Fatalf("context %v", plan["context"])
	}
	first := ctxItems[0].(map[string]any)
	if first["tool"] != "read_file" || first["why"] != "the greeting" {
		t.Errorf("context[0] %v", first)
	}
}

// TestRunRequestExplores: run --request takes --explore as plan does (one
// round, then the call that asks for the plan, then the run); with a plan
// file --explore is refused, naming what it is for.
func TestRunRequestExplores(t *testing.T) {
	srv := fakemodel.New()
	srv.Handle(func(r fakemodel.Request) fakemodel.Reply {
		if r.JSON["tools"] != nil {
			return fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{Name: "list_dir", Args: `{"path":"."}`}}}
		}
		return fakemodel.Reply{Text: greetPlan}
	})
	modelEnv(t, srv)
	ws := demoCopy(t)
	r := agentd(t, "", "run", "--request", "greet in French", "--workspace", ws, "--explore", "1", "--yes", "--state-dir", t.TempDir())
	if r.code != 0 || len(srv.Requests()) != 2 {
		t.Fatalf("code %d, %d calls:\n%s%s", r.code, len(srv.Requests()), r.stdout, r.stderr)
	}
	if got := readFile(t, filepath.Join(ws, "greet/greet.go")); !strings.Contains(got, "Bonjour, ") {
		t.Errorf("the plan did not run: %s", got)
	}
	r = agentd(t, "", "run", plan(t, "parallel.json"), "--workspace", ws, "--explore", "1", "--yes")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--explore is for --request") {
		t.Errorf("a plan file with --explore: code %d\n%s", r.code, r.stderr)
	}
}
