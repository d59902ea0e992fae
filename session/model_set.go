package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/llm"
	"github.com/agentd/agentd/engine/plans"
)

// ModelChoice is a model (and optionally its key) an editor sets while
// the daemon runs (agentd/model/set). Every field is optional: a key alone
// is the key of the model already chosen; Reset forgets what earlier
// choices set, back to the editor's settings, the environment and the
// config files.
//
// The key is kept in the daemon's memory for its life only, never written
// and never logged (String and LogValue hide it).
type ModelChoice struct {
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	BaseURL  string `json:"baseUrl,omitempty"`
	APIKey   string `json:"apiKey,omitempty"`
	Reset    bool   `json:"reset,omitempty"`
}

// String hides the key (a %v of the choice in a log or an error).
func (c ModelChoice) String() string {
	key := ""
	if c.APIKey != "" {
		key = " apiKey=(set)"
	}
	return fmt.Sprintf("{provider=%s model=%s baseUrl=%s%s reset=%v}", c.Provider, c.Model, c.BaseURL, key, c.Reset)
}

// GoString hides the key (%#v).
func (c ModelChoice) GoString() string { return c.String() }

// LogValue hides the key (slog).
func (c ModelChoice) LogValue() slog.Value {
	return slog.GroupValue(slog.String("provider", c.Provider), slog.String("model", c.Model),
		slog.String("baseUrl", c.BaseURL), slog.Bool("apiKey", c.APIKey != ""), slog.Bool("reset", c.Reset))
}

// Where a model or a key was chosen (ModelInfo.Source, KeyInfo.Source).
const (
	SourceCommand   = "command"   // agentd/model/set (:Agent model, the editor's model picker)
	SourceEditor    = "editor"    // initializationOptions.model (Neovim's setup(), VS Code's settings)
	SourceEnv       = "env"       // the daemon's environment ($AGENTD_MODEL, $OPENAI_API_KEY, ...)
	SourceWorkspace = "workspace" // the workspace's .agentd/config.json
	SourceUser      = "user"      // the user's ~/.config/agentd/config.json
)

// ModelInfo says which model the next model call uses and where each part
// of it was chosen (agentd/model/get). It never holds the key itself.
type ModelInfo struct {
	// Configured: a model is chosen (it may still lack a key: Problem).
	Configured bool `json:"configured"`
	// Model is the model as chosen: "provider:model" or a profile name.
	Model string `json:"model,omitempty"`
	// Provider, Name and BaseURL are what it resolves to.
	Provider string `json:"provider,omitempty"`
	Name     string `json:"name,omitempty"`
	BaseURL  string `json:"baseUrl,omitempty"`
	// Profile is set when Model names a profile of the user's config.
	Profile string `json:"profile,omitempty"`
	// Source is one of the Source constants; From says it in words (the
	// variable or the file).
	Source string  `json:"source,omitempty"`
	From   string  `json:"from,omitempty"`
	Key    KeyInfo `json:"key"`
	// Problem is why a model call would fail now ("" when it would not).
	Problem string `json:"problem,omitempty"`
	// Profiles are the user's configured profiles; Providers the provider
	// names "provider:model" may start with (for an editor's picker).
	Profiles  []ProfileInfo `json:"profiles"`
	Providers []string      `json:"providers"`
	// Vision: the model takes images (its profile's "vision": true), so
	// a view may offer pasting them (CheckImages says why not).
	Vision bool `json:"vision"`
}

// KeyInfo says whether the model has its key and where it comes from.
type KeyInfo struct {
	// Env is the variable the model reads its key from ("" when the
	// provider takes none).
	Env string `json:"env,omitempty"`
	// Set: a key is there; Needed: the model's endpoint needs one (the
	// providers' own hosts; a local server may not).
	Set    bool `json:"set"`
	Needed bool `json:"needed"`
	// Source is SourceCommand (kept in the daemon's memory) or SourceEnv.
	Source string `json:"source,omitempty"`
	From   string `json:"from,omitempty"`
}

// ProfileInfo is one profile of the user's config file.
type ProfileInfo struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	BaseURL  string `json:"baseUrl,omitempty"`
}

// ModelSwitch is a long-lived front end's models (the editor daemon): the
// models of LoadModels, which an editor may change while the daemon runs
// (Set). It is the engine's planner and step model (Wire), so the next
// model call of a plan, a step or a recovery uses the model set last; a
// call already under way finishes with the model it started with.
// Safe for concurrent use.
type ModelSwitch struct {
	opts ModelOptions

	mu      sync.Mutex
	choice  *EditorModel      // the last agentd/model/set; nil: none
	keys    map[string]string // keys given by agentd/model/set, by the variable they stand for
	cur     *Models
	loadErr error
}

// NewModelSwitch loads the models as LoadModels does. A config file that
// cannot be read is not fatal: LoadErr says why, each model call fails
// with it, and a later Set loads again.
func NewModelSwitch(opts ModelOptions) *ModelSwitch {
	w := &ModelSwitch{opts: opts}
	w.cur, w.loadErr = LoadModels(w.options())
	return w
}

// options are the switch's ModelOptions with the editor's last choice and
// its keys applied (w.mu held or w not shared yet).
func (w *ModelSwitch) options() ModelOptions {
	o := w.opts
	if w.choice != nil {
		c := *w.choice
		// A model picked in the editor keeps the base URL its settings gave
		// for the same provider (another model on the same server).
		// Either may name its provider in its own field or as
		// "provider:model": a pick of "openai:b" over settings of
		// {provider: openai, baseUrl: a local server} must not go to the
		// provider's public URL with the user's code.
		if c.BaseURL == "" && o.Editor != nil && o.Editor.BaseURL != "" {
			if p := providerOf(c); p != "" && p == providerOf(*o.Editor) {
				c.BaseURL = o.Editor.BaseURL
			}
		}
		o.Editor = &c
	}
	base := o.Getenv
	if base == nil {
		base = os.Getenv
	}
	keys := w.keys
	o.Getenv = func(k string) string {
		if v, ok := keys[k]; ok {
			return v
		}
		return base(k)
	}
	return o
}

// providerOf is the provider an editor's model names: its Provider, else
// the "provider:" of its Model; "" for a profile name or none.
func providerOf(m EditorModel) string {
	if m.Provider != "" {
		return m.Provider
	}
	if p, _, ok := strings.Cut(m.Model, ":"); ok && slices.Contains(Providers, p) {
		return p
	}
	return ""
}

// Providers are the provider names a model may be given with.
var Providers = []string{llm.ProviderOpenAI, llm.ProviderAnthropic, llm.ProviderOllama}

// Set applies c: the next model call uses the new model (and key). An
// error (an unknown provider, a key with no model to give it to, a config
// file that cannot be read) changes nothing.
func (w *ModelSwitch) Set(ctx context.Context, c ModelChoice) (ModelInfo, error) {
	if err := ctx.Err(); err != nil {
		return ModelInfo{}, err
	}
	if c.Provider != "" && !slices.Contains(Providers, c.Provider) {
		return ModelInfo{}, fmt.Errorf("provider %q: unknown; use one of openai, anthropic, ollama", c.Provider)
	}
	if c.Provider != "" && c.Model == "" {
		return ModelInfo{}, fmt.Errorf("provider %q without a model: give the model too (e.g. %s:<model>)", c.Provider, c.Provider)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	next := &ModelSwitch{opts: w.opts, choice: w.choice, keys: w.keys}
	if c.Reset {
		next.choice, next.keys = nil, nil
	}
	if c.Model != "" || c.BaseURL != "" {
		next.choice = &EditorModel{Provider: c.Provider, Model: c.Model, BaseURL: c.BaseURL}
	}
	if c.APIKey != "" {
		settings, err := LoadSettings(next.options())
		if err != nil {
			return ModelInfo{}, err
		}
		env := keyEnvOf(settings, settings.Model)
		if settings.Model == "" {
			return ModelInfo{}, errors.New("apiKey: no model is set to give the key to; set the model with it")
		}
		if env == "" {
			return ModelInfo{}, fmt.Errorf("apiKey: the model %s takes no key (a local Ollama); set it without one", settings.Model)
		}
		keys := make(map[string]string, len(next.keys)+1)
		for k, v := range next.keys {
			keys[k] = v
		}
		keys[env] = c.APIKey
		next.keys = keys
	}
	models, err := LoadModels(next.options())
	if err != nil {
		return ModelInfo{}, err
	}
	old := w.cur
	w.choice, w.keys, w.cur, w.loadErr = next.choice, next.keys, models, nil
	if old != nil {
		old.Close() // its watchers; a plan still using it walks the tree instead
	}
	info := w.infoLocked()
	log := w.opts.LoadLogger
	if log == nil {
		log = slog.Default()
	}
	log.Info("model set by the editor", "model", info.Model, "source", info.Source, "keySet", info.Key.Set, "keySource", info.Key.Source)
	return info, nil
}

// Info says which model the next call uses and where it was chosen.
func (w *ModelSwitch) Info() ModelInfo {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.infoLocked()
}

func (w *ModelSwitch) infoLocked() ModelInfo {
	info := ModelInfo{Profiles: []ProfileInfo{}, Providers: Providers}
	if w.loadErr != nil {
		info.Problem = w.loadErr.Error()
		return info
	}
	s := w.cur.Settings
	names := make([]string, 0, len(s.Profiles))
	for n := range s.Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := s.Profiles[n]
		info.Profiles = append(info.Profiles, ProfileInfo{Name: n, Provider: p.Provider, Model: p.Model, BaseURL: p.BaseURL})
	}
	info.Model = s.Model
	info.Configured = s.Model != ""
	if !info.Configured {
		info.Problem = "no model is set: " + llm.NoModelHelp
		return info
	}
	o := w.options()
	info.Source, info.From = w.modelSource(o)
	if _, ok := s.Profiles[s.Model]; ok {
		info.Profile = s.Model
	}
	env := keyEnvOf(s, s.Model)
	info.Key.Env = env
	if env != "" {
		if _, ok := w.keys[env]; ok {
			info.Key.Set, info.Key.Source, info.Key.From = true, SourceCommand, "set in the editor (kept in the daemon's memory until it stops)"
		} else if o.Getenv(env) != "" {
			info.Key.Set, info.Key.Source, info.Key.From = true, SourceEnv, "$"+env+" in the daemon's environment"
		}
	}
	sp, err := s.Resolve("")
	if err != nil {
		info.Problem = err.Error()
		info.Key.Needed = env != ""
		return info
	}
	info.Provider, info.Name, info.BaseURL, info.Vision = sp.Provider, sp.Model, sp.BaseURL, sp.Vision
	info.Key.Needed = env != "" && (sp.BaseURL == llm.DefaultOpenAIBaseURL || sp.BaseURL == llm.DefaultAnthropicBaseURL)
	return info
}

// modelSource is where the model in force was chosen: the sources in the
// order they override each other (llm.Load, then the editor's settings,
// then agentd/model/set), the last that names one.
func (w *ModelSwitch) modelSource(o ModelOptions) (source, from string) {
	if w.choice != nil && w.choice.Model != "" {
		return SourceCommand, "set in the editor (agentd/model/set)"
	}
	if o.Editor != nil && o.Editor.Model != "" {
		return SourceEditor, "the editor's settings (initializationOptions.model)"
	}
	if o.Getenv("AGENTD_MODEL") != "" {
		return SourceEnv, "$AGENTD_MODEL in the daemon's environment"
	}
	if o.Root != "" {
		wc := readConfigFile(filepath.Join(o.Root, ".agentd", "config.json"))
		if v, ok := wc.value("model"); ok && string(v) != `""` {
			return SourceWorkspace, wc.path
		}
	}
	return SourceUser, llm.ConfigPath(o.Getenv)
}

// keyEnvOf is the variable the model name reads its key from, as
// llm.Settings.Resolve chooses it: the profile's apiKeyEnv, else the
// provider's own; "" for a local Ollama or a name that resolves to no
// provider.
func keyEnvOf(s *llm.Settings, name string) string {
	provider := ""
	if p, ok := s.Profiles[name]; ok {
		if p.APIKeyEnv != "" {
			return p.APIKeyEnv
		}
		provider = p.Provider
	} else if i := indexSep(name); i > 0 {
		provider = name[:i]
	}
	switch provider {
	case llm.ProviderOpenAI:
		return "OPENAI_API_KEY"
	case llm.ProviderAnthropic:
		return "ANTHROPIC_API_KEY"
	}
	return ""
}

func indexSep(s string) int {
	for i, r := range s {
		if r == ':' || r == '/' {
			return i
		}
	}
	return -1
}

// current is the models in force and the load error, if any.
func (w *ModelSwitch) current() (*Models, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur, w.loadErr
}

// Planner is the planner in force (plan/create, regenerate): nil, with
// the reason, when no model is configured or the settings could not be
// read.
func (w *ModelSwitch) Planner() (*llm.Planner, error) {
	m, err := w.current()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrNoModel, err)
	}
	if !m.Configured() {
		return nil, fmt.Errorf("%w; %s", engine.ErrNoModel, llm.NoModelHelp)
	}
	return m.Planner, nil
}

// LoadErr is why the settings could not be loaded (nil when they were).
func (w *ModelSwitch) LoadErr() error {
	_, err := w.current()
	return err
}

// Configured reports whether a model is configured now (engine.Config's
// model is then usable; engine.MissingModel asks it).
func (w *ModelSwitch) Configured() bool {
	m, err := w.current()
	return err == nil && m.Configured()
}

// Recover implements engine.Planner with the planner in force.
func (w *ModelSwitch) Recover(ctx context.Context, req engine.RecoveryRequest) (*engine.RecoveryDecision, error) {
	p, err := w.Planner()
	if err != nil {
		return nil, err
	}
	return p.Recover(ctx, req)
}

// RePlan implements engine.Planner with the planner in force.
func (w *ModelSwitch) RePlan(ctx context.Context, req engine.RePlanRequest) ([]*plans.Step, error) {
	p, err := w.Planner()
	if err != nil {
		return nil, err
	}
	return p.RePlan(ctx, req)
}

// RunStep implements engine.StepModel with the step model in force.
func (w *ModelSwitch) RunStep(ctx context.Context, call engine.ModelCall) (*engine.ModelResult, error) {
	m, err := w.current()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrNoModel, err)
	}
	if !m.Configured() {
		return nil, fmt.Errorf("%w: %s", engine.ErrNoModel, engine.NoModelFix)
	}
	return m.Step.RunStep(ctx, call)
}

// Wire makes the switch cfg's step model and planner, so a model set
// later reaches the engine's steps and recoveries too, and adds the
// default update rules, which add model steps and so apply only while a
// model is configured. While none is, the engine refuses plans with model
// steps up front as it does without a model (engine.MissingModel asks
// Configured).
func (w *ModelSwitch) Wire(cfg *engine.Config) {
	cfg.Model = w
	cfg.Planner = w
	for _, r := range engine.DefaultRules() {
		if rr, ok := r.(engine.RecoveryRule); ok {
			cfg.Rules = append(cfg.Rules, modelRecoveryRule{modelRule{w, r}, rr})
		} else {
			cfg.Rules = append(cfg.Rules, modelRule{w, r})
		}
	}
}

// modelRule is an update rule that applies only while a model is
// configured.
type modelRule struct {
	w *ModelSwitch
	engine.UpdateRule
}

func (r modelRule) After(p *plans.Plan, step *plans.Step, st engine.StepState) ([]*plans.Step, string) {
	if !r.w.Configured() {
		return nil, ""
	}
	return r.UpdateRule.After(p, step, st)
}

type modelRecoveryRule struct {
	modelRule
	rr engine.RecoveryRule
}

func (r modelRecoveryRule) Recover(p *plans.Plan, step *plans.Step, st engine.StepState) ([]*plans.Step, string) {
	if !r.w.Configured() {
		return nil, ""
	}
	return r.rr.Recover(p, step, st)
}

// Close stops what the planner in force keeps running.
func (w *ModelSwitch) Close() error {
	m, _ := w.current()
	return m.Close()
}

var (
	_ engine.Planner   = (*ModelSwitch)(nil)
	_ engine.StepModel = (*ModelSwitch)(nil)
)
