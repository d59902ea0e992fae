// Package mcptools starts the MCP servers an editor passes to agentd (ACP's
// session/new mcpServers) and offers their tools to plans, llm and agent
// steps as agentd tools, under the same approval policy as the built-in
// ones: a tool the server marks read-only (annotations.readOnlyHint) is a
// read of low risk; any other is a network call of medium risk, which the
// default policy asks about. It uses the official Go MCP SDK
// (github.com/modelcontextprotocol/go-sdk).
package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentd/agentd/engine/tools"
)

// Server says how to reach one MCP server: a command (stdio) or a URL
// (streamable HTTP).
type Server struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
}

// Options configure Start.
type Options struct {
	// Dir is the working directory of stdio servers (the workspace).
	Dir     string
	Version string
	Logger  *slog.Logger
	// Timeout bounds starting a server and listing its tools (30s if 0).
	Timeout time.Duration
}

// Set is the running servers of one session.
type Set struct {
	mu       sync.Mutex
	sessions []*mcp.ClientSession
	tools    []tools.Tool
}

// Tools are every tool of every server that started.
func (s *Set) Tools() []tools.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]tools.Tool(nil), s.tools...)
}

// Close stops every server (a stdio server's process ends: stdin closed,
// then SIGTERM after 5s).
func (s *Set) Close() error {
	s.mu.Lock()
	list := s.sessions
	s.sessions = nil
	s.mu.Unlock()
	var errs []error
	for _, cs := range list {
		if err := cs.Close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Start connects to each server and lists its tools. A server that cannot
// start is reported in the returned errors (one per server, naming it);
// the others are used.
func Start(ctx context.Context, servers []Server, opts Options) (*Set, []error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	set := &Set{}
	var errs []error
	seen := map[string]bool{}
	for _, sv := range servers {
		prefix := "mcp_" + sanitize(sv.Name) + "_"
		if seen[prefix] {
			errs = append(errs, fmt.Errorf("MCP server %q: another server has the same name; give each a distinct name", sv.Name))
			continue
		}
		seen[prefix] = true
		cs, list, tail, err := connect(ctx, sv, opts)
		if err != nil {
			errs = append(errs, fmt.Errorf("MCP server %q: %w", sv.Name, err))
			continue
		}
		set.mu.Lock()
		set.sessions = append(set.sessions, cs)
		for _, t := range list {
			nt := newTool(cs, sv.Name, prefix, t)
			nt.stderr = tail
			set.tools = append(set.tools, nt)
		}
		set.mu.Unlock()
		opts.Logger.Info("MCP server started", "server", sv.Name, "tools", len(list))
	}
	return set, errs
}

// connect starts sv; tail keeps a stdio server's last stderr lines (nil
// for http), which name what went wrong when it crashes.
func connect(ctx context.Context, sv Server, opts Options) (cs *mcp.ClientSession, list []*mcp.Tool, tail *logWriter, err error) {
	var t mcp.Transport
	var stderrW *os.File
	switch {
	case sv.Command != "":
		cmd := exec.Command(sv.Command, sv.Args...)
		cmd.Dir = opts.Dir
		cmd.Env = os.Environ()
		for k, v := range sv.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		lw := &logWriter{log: opts.Logger.With("mcpServer", sv.Name), done: make(chan struct{})}
		// The server's stderr is a pipe read here to its end, so that when
		// the server dies its last words are read before they are quoted.
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, nil, err
		}
		go func() {
			defer close(lw.done)
			defer r.Close()
			_, _ = io.Copy(lw, r)
		}()
		stderrW = w
		cmd.Stderr = w
		t = &mcp.CommandTransport{Command: cmd}
		tail = lw
	case sv.URL != "":
		hc := &http.Client{Transport: headerTransport{headers: sv.Headers, rt: http.DefaultTransport}}
		t = &mcp.StreamableClientTransport{Endpoint: sv.URL, HTTPClient: hc}
	default:
		return nil, nil, nil, errors.New("give a command (stdio) or a url (http)")
	}
	// The session outlives the request that starts it: only starting is
	// bounded.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.Timeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "agentd", Version: opts.Version}, nil)
	cs, err = client.Connect(cctx, t, nil)
	if stderrW != nil {
		stderrW.Close() // the child has its own copy once started
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cannot start it: %w%s", err, tail.said())
	}
	for tool, err := range cs.Tools(cctx, nil) {
		if err != nil {
			_ = cs.Close()
			return nil, nil, nil, fmt.Errorf("cannot list its tools: %w%s", err, tail.said())
		}
		list = append(list, tool)
	}
	return cs, list, tail, nil
}

type headerTransport struct {
	headers map[string]string
	rt      http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.rt.RoundTrip(r)
}

// logWriter sends a server's stderr to the log, a line at a time, and
// keeps the last lines (tailLines) to name what went wrong.
type logWriter struct {
	log  *slog.Logger
	mu   sync.Mutex
	buf  []byte
	last []string
	done chan struct{} // closed when the server's stderr ends
}

// stderrWait bounds how long a failed call waits for a server's stderr to
// end (a dead server's ends at once) before quoting it.
const stderrWait = 2 * time.Second

// tailLines is how many of a server's last stderr lines an error quotes.
const tailLines = 10

// said is the server's last stderr lines as an error's end ("" if none).
func (w *logWriter) said() string {
	if w == nil {
		return ""
	}
	select {
	case <-w.done:
	case <-time.After(stderrWait):
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := append([]string(nil), w.last...)
	if len(w.buf) > 0 {
		lines = append(lines, string(w.buf))
	}
	if len(lines) == 0 {
		return ""
	}
	return "; its last stderr lines:\n" + strings.Join(lines, "\n")
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			break
		}
		line := string(w.buf[:i])
		w.log.Debug("MCP server stderr", "line", line)
		if len(line) > 500 {
			line = line[:500] + "…"
		}
		w.last = append(w.last, line)
		if len(w.last) > tailLines {
			w.last = w.last[len(w.last)-tailLines:]
		}
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

func sanitize(s string) string {
	s = unsafeName.ReplaceAllString(s, "_")
	if s == "" {
		s = "server"
	}
	return s
}

// Tool is one MCP tool as an agentd tool, named mcp_SERVER_TOOL.
type Tool struct {
	cs       *mcp.ClientSession
	server   string
	name     string // agentd's name
	mcpName  string
	desc     string
	schema   json.RawMessage
	readOnly bool
	stderr   *logWriter // a stdio server's last stderr lines (nil: http)
}

var (
	_ tools.Tool      = (*Tool)(nil)
	_ tools.Describer = (*Tool)(nil)
)

func newTool(cs *mcp.ClientSession, server, prefix string, t *mcp.Tool) *Tool {
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || t.InputSchema == nil || string(schema) == "null" {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	name := prefix + sanitize(t.Name)
	if len(name) > 64 {
		name = name[:64]
	}
	desc := t.Description
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	return &Tool{cs: cs, server: server, name: name, mcpName: t.Name, schema: schema,
		desc:     fmt.Sprintf("%s (tool %q of the editor's MCP server %q)", strings.TrimSpace(desc), t.Name, server),
		readOnly: t.Annotations != nil && t.Annotations.ReadOnlyHint}
}

func (t *Tool) Name() string            { return t.name }
func (t *Tool) Description() string     { return t.desc }
func (t *Tool) Schema() json.RawMessage { return t.schema }

// Server is the name of the tool's MCP server; MCPName the tool's own name.
func (t *Tool) Server() string  { return t.server }
func (t *Tool) MCPName() string { return t.mcpName }

// ReadOnly says whether the server marked the tool read-only.
func (t *Tool) ReadOnly() bool { return t.readOnly }

func (t *Tool) Category() tools.Category {
	if t.readOnly {
		return tools.CategoryRead
	}
	return tools.CategoryNetwork
}

func (t *Tool) Risk() tools.Risk {
	if t.readOnly {
		return tools.RiskLow
	}
	return tools.RiskMedium
}

func (t *Tool) Describe(args json.RawMessage) tools.Description {
	return tools.Description{
		Title:  fmt.Sprintf("Call %s on the MCP server %s", t.mcpName, t.server),
		Detail: "arguments: " + string(args),
	}
}

// Output is an MCP tool's result as a step's output.
type Output struct {
	Text       string `json:"text"`
	Structured any    `json:"structured,omitempty"`
	IsError    bool   `json:"isError,omitempty"`
	// Truncated: the result was over the cap (tools.MaxCommandOutput, as
	// a command's output): Text keeps the head and the tail with a line
	// saying how much was cut, and a structured result over the cap is
	// left out. What the model, the journal and a session file get is
	// this capped output.
	Truncated bool `json:"truncated,omitempty"`
}

// cap bounds o to max bytes of text (head and tail kept) and drops a
// structured result larger than max.
func (o *Output) cap(max int) {
	if len(o.Text) > max {
		h := max / 2
		cut := len(o.Text) - max
		o.Text = o.Text[:h] + fmt.Sprintf("\n[… %d bytes of the MCP tool's result cut: results are capped at %d bytes, the head and the tail kept …]\n", cut, max) +
			o.Text[len(o.Text)-(max-h):]
		o.Truncated = true
	}
	if o.Structured != nil {
		if raw, err := json.Marshal(o.Structured); err != nil || len(raw) > max {
			o.Structured = fmt.Sprintf("[the structured result (%d bytes) is left out: results are capped at %d bytes]", len(raw), max)
			o.Truncated = true
		}
	}
}

func (t *Tool) Run(ctx context.Context, env *tools.Env, args json.RawMessage) (*tools.Result, error) {
	var a map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, &tools.Error{Code: "INVALID_ARGS", Message: t.name + ": " + err.Error()}
		}
	}
	res, err := t.cs.CallTool(ctx, &mcp.CallToolParams{Name: t.mcpName, Arguments: a})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// A server that crashed (EOF, a closed pipe) is named with what it
		// last said; its tools fail from now on, the session goes on.
		return nil, &tools.Error{Code: "MCP", Message: fmt.Sprintf("%s: calling %s on the MCP server %s failed (%v): the server may have stopped; "+
			"the session goes on without it%s", t.name, t.mcpName, t.server, err, t.stderr.said())}
	}
	var b strings.Builder
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		default:
			raw, _ := json.Marshal(c)
			b.Write(raw)
		}
	}
	out := Output{Text: b.String(), Structured: res.StructuredContent, IsError: res.IsError}
	out.cap(tools.MaxCommandOutput)
	if env != nil && env.Output != nil && out.Text != "" {
		env.Output("stdout", out.Text)
	}
	if res.IsError {
		return &tools.Result{Output: out}, &tools.Error{Code: "MCP_TOOL_ERROR", Message: fmt.Sprintf("%s on the MCP server %s: %s", t.mcpName, t.server, out.Text)}
	}
	return &tools.Result{Output: out}, nil
}
