package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/llm"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/internal/fakemodel"
	"github.com/agentd/agentd/session"
)

// switchPlanMaker is the daemon's adapter (cmd/agentd's serveModel) in
// small: the session's ModelSwitch, made at initialize, plans and is the
// ModelSetter.
type switchPlanMaker struct {
	getenv func(string) string
	log    *slog.Logger
	mu     sync.Mutex
	ms     *session.ModelSwitch
}

func (p *switchPlanMaker) configure(cfg *engine.Config, model *ModelOptions) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ms = session.NewModelSwitch(session.ModelOptions{Root: cfg.WS.Root(), Editor: model, Getenv: p.getenv, LoadLogger: p.log, Logger: p.log})
	p.ms.Wire(cfg)
}

func (p *switchPlanMaker) sw() *session.ModelSwitch {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ms
}

func (p *switchPlanMaker) MakePlan(ctx context.Context, req PlanRequest) (*plans.Plan, error) {
	pl, err := p.sw().Planner()
	if err != nil {
		return nil, err
	}
	return pl.Create(ctx, llm.CreateRequest{Request: req.Request, ExploreRounds: -1, MapTokens: -1})
}

func (p *switchPlanMaker) SetModel(ctx context.Context, c session.ModelChoice) (session.ModelInfo, error) {
	return p.sw().Set(ctx, c)
}

func (p *switchPlanMaker) ModelInfo(ctx context.Context) (session.ModelInfo, error) {
	return p.sw().Info(), nil
}

// lockedBuffer is a log sink the test reads after the daemon wrote to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestModelSetReachesNextPlan: a daemon started with no model takes one,
// and its key, from agentd/model/set; the next agentd/plan/create goes to
// that model at the fake model server with that key, without a restart;
// the key is in no answer and no log line.
func TestModelSetReachesNextPlan(t *testing.T) {
	srv := fakemodel.New()
	url := srv.Start(t)
	env := map[string]string{"XDG_CONFIG_HOME": t.TempDir()}
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pm := &switchPlanMaker{getenv: func(k string) string { return env[k] }, log: log}
	ed := startEditor(t, Options{PlanMaker: pm, Configure: pm.configure, Logger: log}, nil)
	ed.initialize(t.TempDir(), nil)

	var info session.ModelInfo
	ed.mustCall("agentd/model/get", map[string]any{}, &info)
	if info.Configured || !strings.Contains(info.Problem, "no model is set") {
		t.Fatalf("model/get before any model: %+v", info)
	}
	if err := ed.call("agentd/plan/create", map[string]any{"request": "list the files"}, nil); errCode(err) != CodeNoModel {
		t.Fatalf("plan/create without a model: %v, want -32006", err)
	}

	const key = "sk-editor-secret-4711"
	var raw json.RawMessage
	ed.mustCall("agentd/model/set", map[string]any{"provider": "openai", "model": "picked-model", "baseUrl": url + "/v1", "apiKey": key}, &raw)
	if strings.Contains(string(raw), key) {
		t.Fatalf("model/set echoed the key: %s", raw)
	}
	info = session.ModelInfo{}
	json.Unmarshal(raw, &info)
	if !info.Configured || info.Model != "openai:picked-model" || info.Source != session.SourceCommand || !info.Key.Set ||
		info.Key.Source != session.SourceCommand || info.Key.Env != "OPENAI_API_KEY" || info.BaseURL != url+"/v1" || info.Problem != "" {
		t.Fatalf("model/set answer: %s", raw)
	}

	srv.Push(fakemodel.Reply{Text: `{"title":"List","steps":[{"id":"ls","tool":"list_dir","args":{"path":"."}}]}`})
	var plan map[string]any
	ed.mustCall("agentd/plan/create", map[string]any{"request": "list the files"}, &plan)
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the fake model got %d requests, want 1", len(reqs))
	}
	if m := reqs[0].JSON["model"]; m != "picked-model" {
		t.Errorf("the plan went to model %v, want picked-model", m)
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+key {
		t.Errorf("the plan's request carried Authorization %q, want the key set in the editor", got)
	}

	// A second model/set switches again, keeping the key (it is the
	// key of $OPENAI_API_KEY, which both models read).
	info = session.ModelInfo{}
	ed.mustCall("agentd/model/set", map[string]any{"provider": "openai", "model": "second-model", "baseUrl": url + "/v1"}, &info)
	srv.Push(fakemodel.Reply{Text: `{"title":"List","steps":[{"id":"ls","tool":"list_dir","args":{"path":"."}}]}`})
	ed.mustCall("agentd/plan/create", map[string]any{"request": "list again"}, &plan)
	reqs = srv.Requests()
	if len(reqs) != 2 || reqs[1].JSON["model"] != "second-model" || reqs[1].Header.Get("Authorization") != "Bearer "+key {
		t.Fatalf("after the second set: %d requests, last model %v", len(reqs), reqs[len(reqs)-1].JSON["model"])
	}
	if !info.Key.Set || info.Key.Source != session.SourceCommand {
		t.Errorf("the key was dropped by a model change: %+v", info.Key)
	}
	if strings.Contains(logs.String(), key) {
		t.Errorf("the key is in the daemon's log:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "model set by the editor") {
		t.Errorf("the change is not logged:\n%s", logs.String())
	}

	// Errors change nothing and say what to do.
	err := ed.call("agentd/model/set", map[string]any{"provider": "openia", "model": "x"}, nil)
	if errCode(err) != -32602 || !strings.Contains(fmt.Sprint(err), "openai, anthropic, ollama") {
		t.Errorf("unknown provider: %v", err)
	}
	if err := ed.call("agentd/model/set", map[string]any{}, nil); errCode(err) != -32602 {
		t.Errorf("empty set: %v", err)
	}
	ed.mustCall("agentd/model/get", map[string]any{}, &info)
	if info.Model != "openai:second-model" {
		t.Errorf("a refused set changed the model: %+v", info)
	}
}

// TestModelGetSources: agentd/model/get names where the model and the key
// come from, each source over the one before: the user's config (with its
// profiles), the workspace's config, $AGENTD_MODEL, the editor's settings
// (initializationOptions.model), agentd/model/set; reset goes back.
func TestModelGetSources(t *testing.T) {
	cfgHome, root := t.TempDir(), t.TempDir()
	userCfg := filepath.Join(cfgHome, "agentd", "config.json")
	os.MkdirAll(filepath.Dir(userCfg), 0o755)
	os.WriteFile(userCfg, []byte(`{"model":"fast","profiles":{"fast":{"provider":"anthropic","model":"claude-x","apiKeyEnv":"MY_ANTHROPIC_KEY"},"local":{"provider":"ollama","model":"qwen"}}}`), 0o644)
	env := map[string]string{"XDG_CONFIG_HOME": cfgHome, "MY_ANTHROPIC_KEY": "sk-from-env"}
	start := func(initOpts map[string]any) *editor {
		pm := &switchPlanMaker{getenv: func(k string) string { return env[k] }, log: testLogger(t)}
		ed := startEditor(t, Options{PlanMaker: pm, Configure: pm.configure}, nil)
		ed.initialize(root, initOpts)
		return ed
	}
	get := func(ed *editor) session.ModelInfo {
		var info session.ModelInfo
		ed.mustCall("agentd/model/get", map[string]any{}, &info)
		return info
	}

	info := get(start(nil))
	if info.Source != session.SourceUser || info.From != userCfg || info.Profile != "fast" || info.Provider != "anthropic" ||
		info.Key.Env != "MY_ANTHROPIC_KEY" || info.Key.Source != session.SourceEnv || !info.Key.Set || len(info.Profiles) != 2 ||
		info.Profiles[0].Name != "fast" || info.Profiles[1].Name != "local" || len(info.Providers) != 3 {
		t.Fatalf("from the user's config: %+v", info)
	}

	os.MkdirAll(filepath.Join(root, ".agentd"), 0o755)
	os.WriteFile(filepath.Join(root, ".agentd", "config.json"), []byte(`{"model":"local"}`), 0o644)
	if info = get(start(nil)); info.Source != session.SourceWorkspace || info.Model != "local" || info.Key.Env != "" || info.Key.Needed {
		t.Fatalf("from the workspace's config: %+v", info)
	}

	env["AGENTD_MODEL"] = "openai:env-model"
	if info = get(start(nil)); info.Source != session.SourceEnv || info.Model != "openai:env-model" || info.Key.Set ||
		!info.Key.Needed || !strings.Contains(info.Problem, "OPENAI_API_KEY") {
		t.Fatalf("from $AGENTD_MODEL without its key: %+v", info)
	}

	ed := start(map[string]any{"model": map[string]any{"provider": "openai", "model": "setup-model", "baseUrl": "http://127.0.0.1:9/v1"}})
	if info = get(ed); info.Source != session.SourceEditor || info.Model != "openai:setup-model" || info.Key.Needed || info.Problem != "" {
		t.Fatalf("from initializationOptions.model: %+v", info)
	}
	set := func(params map[string]any) session.ModelInfo {
		var info session.ModelInfo // fresh: omitted fields stay empty
		ed.mustCall("agentd/model/set", params, &info)
		return info
	}
	info = set(map[string]any{"model": "fast"})
	if info.Source != session.SourceCommand || info.Profile != "fast" || info.Key.Source != session.SourceEnv {
		t.Fatalf("a profile picked in the editor: %+v", info)
	}
	info = set(map[string]any{"apiKey": "sk-typed"})
	if info.Key.Source != session.SourceCommand || info.Key.Env != "MY_ANTHROPIC_KEY" {
		t.Fatalf("a key typed for the profile: %+v", info.Key)
	}
	info = set(map[string]any{"reset": true})
	if info.Source != session.SourceEditor || info.Model != "openai:setup-model" || info.Profile != "" || info.Key.Source != "" {
		t.Fatalf("after reset: %+v", info)
	}
}
