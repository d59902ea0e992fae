package rpc

import (
	"context"
	"encoding/json"

	"github.com/agentd/agentd/session"
)

func toolMethods() map[string]method {
	return map[string]method{
		"agentd/tools/list": {call: (*Server).toolsList},
	}
}

func (s *Server) toolsList(ctx context.Context, params json.RawMessage) (any, error) {
	out := []ToolInfo{}
	for _, t := range s.opts.Tools.List() {
		schema := t.Schema()
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out = append(out, ToolInfo{Name: t.Name(), Description: t.Description(), Category: string(t.Category()), Risk: string(t.Risk()), InputSchema: schema})
	}
	return out, nil
}

// wrapTools returns a registry whose command and git tools first save the
// editor buffers that received accepted hunks (the session's rule:
// commands read the disk).
func wrapTools(s *Server, reg *session.ToolRegistry) *session.ToolRegistry {
	return session.SaveBeforeDiskReads(reg, s.saveAcceptedBuffers)
}
