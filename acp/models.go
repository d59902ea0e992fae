package acp

import (
	"fmt"
	"slices"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	agentsession "github.com/agentd/agentd/session"
)

// The model is chosen from the editor, per session: as the session config
// option "model" (category model, ACP's stable way) and as the session
// model state (session/set_model, which some clients use). The choices
// are what agentd is configured for: the default model (--model,
// AGENTD_MODEL or the config file) and each profile of the config files.
// The choice is saved with the session and used by the planner and by
// llm and agent steps that name no model.

const configModel = "model"

// defaultVision reports whether the default model (--model, AGENTD_MODEL
// or the user's config file) is configured to take images, which
// initialize advertises as promptCapabilities.image. It is asked before
// any session exists, so a workspace's own .agentd/config.json model is
// not known yet; each prompt checks its session's model again
// (promptImages).
func (a *agent) defaultVision() bool {
	settings, err := agentsession.LoadSettings(agentsession.ModelOptions{Getenv: a.opts.Getenv, LoadLogger: a.log, Model: a.opts.Model})
	if err != nil {
		return false
	}
	if !settings.Configured() {
		return false
	}
	sp, err := settings.Resolve("")
	return err == nil && sp.Vision
}

// visionChoices are the model choices configured to take images.
func (s *session) visionChoices() []string {
	var out []string
	for _, id := range s.modelChoices() {
		if sp, err := s.settings.Resolve(id); err == nil && sp.Vision {
			out = append(out, id)
		}
	}
	return out
}

// modelChoices lists the configured models, the default first.
func (s *session) modelChoices() []string {
	if s.settings == nil || !s.settings.Configured() {
		return nil
	}
	out := []string{s.defaultModel}
	names := make([]string, 0, len(s.settings.Profiles))
	for name := range s.settings.Profiles {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// modelName is how a choice is shown.
func (s *session) modelName(id string) (name, desc string) {
	if p, ok := s.settings.Profiles[id]; ok {
		desc = fmt.Sprintf("profile %s: %s:%s", id, p.Provider, p.Model)
		if p.Vision {
			desc += ", takes images"
		}
	}
	if id == s.defaultModel {
		if desc == "" {
			desc = id
		}
		desc += " (agentd's configured default)"
	}
	return id, desc
}

// currentModel is the session's model ("" when none is configured).
func (s *session) currentModel() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.settings == nil {
		return ""
	}
	return s.settings.Model
}

// applyModel makes id the session's model (it must be a choice).
func (s *session) applyModel(id string) error {
	choices := s.modelChoices()
	if len(choices) == 0 {
		return sdk.NewInvalidParams(map[string]any{"value": "no model is configured: set AGENTD_MODEL or the config file's \"model\" (see README, section Models)"})
	}
	if !slices.Contains(choices, id) {
		return sdk.NewInvalidParams(map[string]any{"value": fmt.Sprintf("unknown model %q; the configured models are %s", id, strings.Join(choices, ", "))})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy {
		return &sdk.RequestError{Code: errPromptRunning, Message: "the model cannot change while a prompt runs: wait for its answer, or cancel it first",
			Data: map[string]any{"sessionId": s.id, "reason": "promptRunning"}}
	}
	s.settings.Model = id
	if s.models != nil {
		s.models.Planner.Model = id
	}
	s.saved.Model = id
	return nil
}

// restoreModel applies a loaded session's model if it is still configured.
func (s *session) restoreModel() {
	s.mu.Lock()
	id := s.saved.Model
	s.mu.Unlock()
	if id == "" || id == s.currentModel() {
		return
	}
	if err := s.applyModel(id); err != nil {
		s.log.Warn("the session's model is no longer configured; using the default", "model", id, "default", s.defaultModel)
		s.mu.Lock()
		s.saved.Model = ""
		s.mu.Unlock()
	}
}

// configOptions is the session's config options (the model selector).
func (s *session) configOptions() []sdk.SessionConfigOption {
	choices := s.modelChoices()
	if len(choices) == 0 {
		return []sdk.SessionConfigOption{}
	}
	opts := make(sdk.SessionConfigSelectOptionsUngrouped, 0, len(choices))
	for _, id := range choices {
		name, desc := s.modelName(id)
		o := sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(id), Name: name}
		if desc != "" {
			o.Description = sdk.Ptr(desc)
		}
		opts = append(opts, o)
	}
	cat := sdk.SessionConfigOptionCategoryModel
	return []sdk.SessionConfigOption{{Select: &sdk.SessionConfigOptionSelect{
		Id: configModel, Name: "Model", Category: &cat, Type: "select",
		Description:  sdk.Ptr("The model that plans and runs llm and agent steps in this session"),
		CurrentValue: sdk.SessionConfigValueId(s.currentModel()),
		Options:      sdk.SessionConfigSelectOptions{Ungrouped: &opts},
	}}}
}

// modelState is the same choice as ACP's session model state.
func (s *session) modelState() *sdk.SessionModelState {
	choices := s.modelChoices()
	if len(choices) == 0 {
		return nil
	}
	st := &sdk.SessionModelState{CurrentModelId: sdk.ModelId(s.currentModel())}
	for _, id := range choices {
		name, desc := s.modelName(id)
		m := sdk.ModelInfo{ModelId: sdk.ModelId(id), Name: name}
		if desc != "" {
			m.Description = sdk.Ptr(desc)
		}
		st.AvailableModels = append(st.AvailableModels, m)
	}
	return st
}

// setModel is session/set_config_option "model" and session/set_model.
func (s *session) setModel(id string) error {
	if err := s.applyModel(id); err != nil {
		return err
	}
	s.send(sdk.SessionUpdate{ConfigOptionUpdate: &sdk.SessionConfigOptionUpdate{ConfigOptions: s.configOptions()}}, false)
	return s.save()
}
