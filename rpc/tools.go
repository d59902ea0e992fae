package rpc

import (
	"context"
	"encoding/json"

	"github.com/agentd/agentd/engine/tools"
)

func toolMethods() map[string]method {
	return map[string]method{
		"agentd/tools/list": {call: (*Server).toolsList},
	}
}

// ToolInfo describes one tool (agentd/tools/list).
type ToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Category    tools.Category  `json:"category"`
	Risk        tools.Risk      `json:"risk"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

func (s *Server) toolsList(ctx context.Context, params json.RawMessage) (any, error) {
	out := []ToolInfo{}
	for _, t := range s.opts.Tools.List() {
		schema := t.Schema()
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out = append(out, ToolInfo{Name: t.Name(), Description: t.Description(), Category: t.Category(), Risk: t.Risk(), InputSchema: schema})
	}
	return out, nil
}

// wrapTools returns a registry whose command and git tools first save the
// editor buffers that received accepted hunks (commands read the disk).
func wrapTools(s *Server, reg *tools.Registry) *tools.Registry {
	out := tools.NewRegistry()
	for _, t := range reg.List() {
		if t.Category() == tools.CategoryCommand || t.Category() == tools.CategoryGit {
			if d, ok := t.(tools.Describer); ok {
				out.Register(&describingSaver{saveFirst{Tool: t, s: s}, d})
			} else {
				out.Register(&saveFirst{Tool: t, s: s})
			}
			continue
		}
		out.Register(t)
	}
	return out
}

// saveFirst saves buffers with accepted, unsaved hunks before its tool runs.
type saveFirst struct {
	tools.Tool
	s *Server
}

func (t *saveFirst) Run(ctx context.Context, env *tools.Env, args json.RawMessage) (*tools.Result, error) {
	if unsaved := t.s.saveAcceptedBuffers(ctx, "step "+env.StepID+" ("+t.Name()+") reads the files from disk"); len(unsaved) > 0 {
		env.Emit("log", "these files are seen in their saved state (they hold your unsaved edits): "+joinComma(unsaved))
	}
	return t.Tool.Run(ctx, env, args)
}

// RiskOf keeps the wrapped tool's per-call risk (git: commit and apply are
// high), which the engine's policy asks about.
func (t *saveFirst) RiskOf(args json.RawMessage) tools.Risk {
	if ra, ok := t.Tool.(tools.RiskAssessor); ok {
		return ra.RiskOf(args)
	}
	return t.Tool.Risk()
}

type describingSaver struct {
	saveFirst
	d tools.Describer
}

func (t *describingSaver) Describe(args json.RawMessage) tools.Description { return t.d.Describe(args) }

func joinComma(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}
