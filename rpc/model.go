package rpc

import (
	"context"
	"encoding/json"
	"errors"

	wire "github.com/agentd/agentd/protocol"
	"github.com/agentd/agentd/session"
)

// ModelSetter is a PlanMaker whose model the editor can read and change
// while the daemon runs (agentd/model/get and /set; the daemon's is
// session.ModelSwitch behind cmd/agentd's adapter). The rule, composing
// the model from the editor, the environment and the config files, is the
// session's; this file is only its wire.
type ModelSetter interface {
	SetModel(ctx context.Context, c session.ModelChoice) (session.ModelInfo, error)
	ModelInfo(ctx context.Context) (session.ModelInfo, error)
}

func modelMethods() map[string]method {
	return map[string]method{
		"agentd/model/get": {call: (*Server).modelGet},
		"agentd/model/set": {call: (*Server).modelSet},
	}
}

// errNoModelSetter: a server built without a model (tests, a front end
// that does not plan) cannot change one.
var errNoModelSetter = errors.New("this agentd cannot change its model while it runs (no planner); set AGENTD_MODEL or ~/.config/agentd/config.json and restart it")

func (s *Server) modelSetter() (ModelSetter, error) {
	if _, err := s.session(); err != nil {
		return nil, err
	}
	ms, ok := s.opts.PlanMaker.(ModelSetter)
	if !ok {
		return nil, errNoModelSetter
	}
	return ms, nil
}

func (s *Server) modelGet(ctx context.Context, _ json.RawMessage) (any, error) {
	ms, err := s.modelSetter()
	if err != nil {
		return nil, err
	}
	return ms.ModelInfo(ctx)
}

// modelSet applies {provider?, model?, baseUrl?, apiKey?, reset?}: the
// next model call (plan, step, recovery) uses it, no restart. The key is
// never logged nor echoed: the answer (as agentd/model/get) says only
// whether one is set and where it came from.
func (s *Server) modelSet(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ModelSetParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	c := session.ModelChoice{Provider: p.Provider, Model: p.Model, BaseURL: p.BaseURL, APIKey: p.ApiKey, Reset: p.Reset}
	if c.Model == "" && c.Provider == "" && c.BaseURL == "" && c.APIKey == "" && !c.Reset {
		return nil, badParam("model", "give a model (provider:model or a profile name), an apiKey, or reset: true")
	}
	ms, err := s.modelSetter()
	if err != nil {
		return nil, err
	}
	info, err := ms.SetModel(ctx, c)
	if err != nil {
		return nil, badParam("", "%s", err.Error())
	}
	return info, nil
}
