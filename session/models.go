package session

import (
	"log/slog"
	"path/filepath"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/llm"
	"github.com/agentd/agentd/engine/tools"
)

// ModelOptions say how to build a workspace's planner and step model:
// each front end passes only its own overrides (the terminal's --model,
// ACP's --model, the editor's initializationOptions.model).
type ModelOptions struct {
	// Root is the workspace whose .agentd/config.json may choose a model.
	Root string
	// Model, if set, replaces the configured default model.
	Model string
	// Editor, if set, is the editor's model choice (llm.Settings.SetEditor).
	Editor *EditorModel
	// Getenv replaces os.Getenv (tests).
	Getenv func(string) string
	// LoadLogger logs what loading the settings notices (slog.Default if
	// nil); Logger, if set, takes the model client's lines (retries).
	LoadLogger *slog.Logger
	Logger     *slog.Logger
	// Tools is the registry the planner plans with (the built-ins if nil).
	Tools *tools.Registry
	// StateDir is where the planner keeps its repository map's cache.
	StateDir string
	// WatchMaps: a long-lived session's later plans re-check only the
	// files that changed (llm.Planner.WatchMaps).
	WatchMaps bool
}

// EditorModel is the model an editor chooses in its
// initializationOptions.model ({provider, model, baseUrl}): one type for
// the editor server's wire and the model settings it changes.
type EditorModel = llm.EditorOptions

// Models are a workspace's model settings, and, when a model is
// configured, its planner and step model.
type Models struct {
	Settings *llm.Settings
	Planner  *llm.Planner   // nil without a configured model
	Step     *llm.StepModel // nil without a configured model
}

// LoadModels loads the model settings for the workspace once (AGENTD_MODEL,
// ~/.config/agentd/config.json, the workspace's .agentd/config.json), applies
// the front end's overrides, and builds the planner and the step model.
func LoadModels(opts ModelOptions) (*Models, error) {
	settings, err := LoadSettings(opts)
	if err != nil {
		return nil, err
	}
	m := &Models{Settings: settings}
	m.Planner = llm.NewPlanner(settings, opts.Tools)
	m.Planner.StateDir = opts.StateDir
	m.Planner.WatchMaps = opts.WatchMaps
	m.Step = llm.NewStepModel(settings)
	return m, nil
}

// Configured reports whether a model is configured.
func (m *Models) Configured() bool { return m != nil && m.Settings.Configured() }

// Wire sets cfg's step model, planner and the default update rules when a
// model is configured (without one, llm and agent steps fail with the
// engine's "no model" error and recovery asks the user); a front end that wraps them (ACP counts what steps
// use) sets cfg.Model and cfg.Planner itself.
func (m *Models) Wire(cfg *engine.Config) {
	if !m.Configured() {
		return
	}
	cfg.Model = m.Step
	cfg.Planner = m.Planner
	cfg.Rules = append(cfg.Rules, engine.DefaultRules()...)
}

// Close stops what the planner keeps running (its maps' file watchers).
func (m *Models) Close() error {
	if m == nil || m.Planner == nil {
		return nil
	}
	return m.Planner.Close()
}

// LoadSettings loads the model settings alone, with the front end's
// overrides, as LoadModels does (for a question asked before a workspace
// is known, such as whether the default model takes images).
func LoadSettings(opts ModelOptions) (*llm.Settings, error) {
	// The two config files are read here, as for every other setting
	// (settings.go); llm decodes their model keys.
	src := llm.Sources{User: userConfigFile(opts.Getenv).bytes(), Getenv: opts.Getenv, Logger: opts.LoadLogger}
	if opts.Root != "" {
		src.Workspace = readConfigFile(filepath.Join(opts.Root, ".agentd", "config.json")).bytes()
	}
	settings, err := llm.Decode(src)
	if err != nil {
		return nil, err
	}
	if opts.Logger != nil {
		settings.Logger = opts.Logger
	}
	if opts.Model != "" {
		settings.Model = opts.Model
	}
	if opts.Editor != nil {
		settings.SetEditor(*opts.Editor)
	}
	return settings, nil
}
