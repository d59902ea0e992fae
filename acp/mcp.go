package acp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/mcptools"
)

// startMCP starts the MCP servers the editor passed in session/new or
// session/load and adds their tools to the session's registry, so plans,
// llm and agent steps can use them under the approval policy (package
// mcptools says how). A server that cannot start is said in the chat,
// naming it; the session works without its tools. The servers stop with
// the session.
func (s *session) startMCP(ctx context.Context, list []sdk.McpServer) {
	var servers []mcptools.Server
	var problems []string
	for i, m := range list {
		switch {
		case m.Stdio != nil:
			env := map[string]string{}
			for _, e := range m.Stdio.Env {
				env[e.Name] = e.Value
			}
			servers = append(servers, mcptools.Server{Name: m.Stdio.Name, Command: m.Stdio.Command, Args: m.Stdio.Args, Env: env})
		case m.Http != nil:
			h := map[string]string{}
			for _, e := range m.Http.Headers {
				h[e.Name] = e.Value
			}
			servers = append(servers, mcptools.Server{Name: m.Http.Name, URL: m.Http.Url, Headers: h})
		default:
			problems = append(problems, fmt.Sprintf("mcpServers[%d]: agentd takes stdio and http MCP servers (agentCapabilities.mcpCapabilities), not this kind", i))
		}
	}
	if len(servers) > 0 {
		set, errs := mcptools.Start(ctx, servers, mcptools.Options{Dir: s.ws.Root(), Version: s.a.opts.Version, Logger: s.log.With("component", "mcp")})
		s.mcp = set
		for _, t := range set.Tools() {
			s.tools.Register(t)
		}
		for _, err := range errs {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			s.log.Warn("MCP server not used", "problem", p)
		}
		s.mcpProblems = "Some of the editor's MCP servers are not available in this session:\n- " + strings.Join(problems, "\n- ") + "\n"
	}
}

// mcpTool is the step's MCP tool, if it is one.
func (s *session) mcpTool(name string) (*mcptools.Tool, bool) {
	if s.tools == nil || !strings.HasPrefix(name, "mcp_") {
		return nil, false
	}
	t, ok := s.tools.Get(name)
	if !ok {
		return nil, false
	}
	m, ok := t.(*mcptools.Tool)
	return m, ok
}
