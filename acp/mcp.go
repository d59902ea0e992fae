package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/mcptools"
	agentsession "github.com/agentd/agentd/session"
)

// startMCP starts the MCP servers the editor passed in session/new or
// session/load and adds their tools to the session's registry, so plans,
// llm and agent steps can use them under the approval policy (package
// mcptools says how). A server's readOnlyHint counts only when the user's
// config names the server (session.ConfigTrustedMCPServers). A server
// that cannot start is said in the chat, naming it; the session works
// without its tools. The servers stop with the session.
func (s *session) startMCP(ctx context.Context, list []sdk.McpServer) {
	var servers []mcptools.Server
	var problems []string
	var trusted []string
	var startTimeout, callTimeout time.Duration
	if len(list) > 0 {
		var err error
		if trusted, err = agentsession.ConfigTrustedMCPServers(s.a.opts.Getenv); err != nil {
			problems = append(problems, err.Error())
		}
		if startTimeout, callTimeout, err = agentsession.ConfigMCPTimeouts(s.a.opts.Getenv); err != nil {
			problems = append(problems, err.Error())
		}
	}
	for i, m := range list {
		switch {
		case m.Stdio != nil:
			env := map[string]string{}
			for _, e := range m.Stdio.Env {
				env[e.Name] = e.Value
			}
			servers = append(servers, mcptools.Server{Name: m.Stdio.Name, Command: m.Stdio.Command, Args: m.Stdio.Args, Env: env,
				TrustHints: slices.Contains(trusted, m.Stdio.Name)})
		case m.Http != nil:
			h := map[string]string{}
			for _, e := range m.Http.Headers {
				h[e.Name] = e.Value
			}
			servers = append(servers, mcptools.Server{Name: m.Http.Name, URL: m.Http.Url, Headers: h,
				TrustHints: slices.Contains(trusted, m.Http.Name)})
		default:
			problems = append(problems, fmt.Sprintf("mcpServers[%d]: agentd takes stdio and http MCP servers (agentCapabilities.mcpCapabilities), not this kind", i))
		}
	}
	if len(servers) > 0 {
		set, errs := mcptools.Start(ctx, servers, mcptools.Options{Dir: s.ws.Root(), Version: s.a.opts.Version, Logger: s.log.With("component", "mcp"),
			Timeout: startTimeout, CallTimeout: callTimeout})
		s.mcp = set
		for _, t := range set.Tools() {
			if m, ok := t.(*mcptools.Tool); ok {
				s.tools.Register(&shownMCPTool{Tool: m, s: s})
			}
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
	m, ok := t.(*shownMCPTool)
	if !ok {
		return nil, false
	}
	return m.Tool, true
}

// shownMCPTool shows a call an agent step makes to an MCP tool as a tool
// call of its own (RUN/STEP/mcp-N, titled with the server and tool, its
// text result as content), so the chat shows what the model did with the
// editor's tools. A tool step calling it is already its step's tool call.
type shownMCPTool struct {
	*mcptools.Tool
	s *session
}

func (t *shownMCPTool) Run(ctx context.Context, env *agentsession.ToolEnv, args json.RawMessage) (*agentsession.ToolResult, error) {
	s := t.s
	s.mu.Lock()
	w := s.watch
	s.mu.Unlock()
	var st *plans.Step
	if w != nil && env != nil {
		st = w.step(env.StepID)
	}
	if st == nil || st.Tool == t.Name() {
		return t.Tool.Run(ctx, env, args)
	}
	id := sdk.ToolCallId(fmt.Sprintf("%s/%s/mcp-%d", env.RunID, env.StepID, s.mcpCalls.Add(1)))
	kind := sdk.ToolKindOther
	if t.ReadOnly() {
		kind = sdk.ToolKindRead
	}
	title := fmt.Sprintf("%s (MCP server %s, for step %s)", t.MCPName(), t.Server(), env.StepID)
	s.startCall(id, func() sdk.SessionUpdate {
		return sdk.StartToolCall(id, title, sdk.WithStartKind(kind), sdk.WithStartStatus(sdk.ToolCallStatusInProgress), sdk.WithStartRawInput(args))
	})
	res, err := t.Tool.Run(ctx, env, args)
	status, text := sdk.ToolCallStatusCompleted, ""
	if res != nil {
		if o, ok := res.Output.(mcptools.Output); ok {
			text = shownText(o.Text, len(o.Text))
			if o.Truncated {
				text += "\n[the MCP tool's result was cut: results are capped at " + strconv.Itoa(agentsession.MaxCommandOutput()) + " bytes, the head and the tail kept]"
			}
		}
	}
	if err != nil {
		status, text = sdk.ToolCallStatusFailed, err.Error()
	}
	s.send(sdk.UpdateToolCall(id, sdk.WithUpdateStatus(status), sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(text))})), true)
	return res, err
}
