// Package mcptools starts the MCP servers an editor passes to agentd (ACP's
// session/new mcpServers) and offers their tools to plans, llm and agent
// steps as agentd tools, under the same approval policy as the built-in
// ones: a call is a network call of medium risk, which the default policy
// asks about. The server's readOnlyHint (annotations.readOnlyHint) lowers
// that to a read of low risk only for a server the user trusts
// (Server.TrustHints: the user's config, session.ConfigTrustedMCPServers):
// a hint is the server's word, and the server runs with the user's
// rights. Whatever the hint, every call may write anything
// (tools.UncheckedWriter), so the engine snapshots around it as around a
// command and its effect on the workspace is the run's, undone by undo.
// It uses the official Go MCP SDK (github.com/modelcontextprotocol/go-sdk).
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
	// TrustHints: the user trusts the server's readOnlyHint, so a tool
	// marked read-only is a read of low risk. Without it every tool is a
	// network call of medium risk.
	TrustHints bool
}

// Options configure Start.
type Options struct {
	// Dir is the working directory of stdio servers (the workspace).
	Dir     string
	Version string
	Logger  *slog.Logger
	// Timeout bounds starting a server (the initialize handshake) and
	// listing its tools (DefaultStartTimeout if 0).
	Timeout time.Duration
	// CallTimeout bounds each tools/call (DefaultCallTimeout if 0). A
	// server that does not answer within it is stopped and named with the
	// end of its stderr; its tools fail from then on, the others go on.
	CallTimeout time.Duration
}

// The bounds of a server's handshake and of each call when the user's
// config sets none (session.ConfigMCPTimeouts).
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultCallTimeout  = 2 * time.Minute
)

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
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultStartTimeout
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
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
		srv := &server{cs: cs, name: sv.Name, stderr: tail, timeout: opts.CallTimeout}
		for _, t := range list {
			set.tools = append(set.tools, newTool(srv, prefix, t, sv.TrustHints))
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
		// Connect stops a stdio server whose handshake failed.
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, nil, nil, fmt.Errorf("did not answer initialize within %s, so agentd stopped it%s", opts.Timeout, tail.said())
		}
		return nil, nil, nil, fmt.Errorf("cannot start it: %w%s", err, tail.said())
	}
	for tool, err := range cs.Tools(cctx, nil) {
		if err != nil {
			_ = cs.Close()
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return nil, nil, nil, fmt.Errorf("did not answer tools/list within %s, so agentd stopped it%s", opts.Timeout, tail.said())
			}
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
		return "; it wrote nothing on stderr"
	}
	return "; its stderr ends:\n" + strings.Join(lines, "\n")
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

// server is one running server, shared by its tools.
type server struct {
	cs      *mcp.ClientSession
	name    string
	stderr  *logWriter    // a stdio server's last stderr lines (nil: http)
	timeout time.Duration // bounds each call

	mu      sync.Mutex
	stopped string // why agentd stopped the server ("" while it runs)
}

// stop ends a server that did not answer in time, once, and says why;
// its tools fail with that from then on.
func (sv *server) stop(why string) string {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.stopped != "" {
		return sv.stopped
	}
	_ = sv.cs.Close() // stdin closed, SIGTERM after 5s, then SIGKILL
	sv.stopped = why + sv.stderr.said()
	return sv.stopped
}

func (sv *server) stoppedWhy() string {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.stopped
}

// Tool is one MCP tool as an agentd tool, named mcp_SERVER_TOOL.
type Tool struct {
	srv     *server
	server  string
	name    string // agentd's name
	mcpName string
	desc    string
	schema  json.RawMessage
	hint    bool // the server marked the tool read-only
	trusted bool // the user trusts the server's hints
}

var (
	_ tools.Tool            = (*Tool)(nil)
	_ tools.Describer       = (*Tool)(nil)
	_ tools.UncheckedWriter = (*Tool)(nil)
)

func newTool(srv *server, prefix string, t *mcp.Tool, trusted bool) *Tool {
	server := srv.name
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
	return &Tool{srv: srv, server: server, name: name, mcpName: t.Name, schema: schema,
		desc: fmt.Sprintf("%s (tool %q of the editor's MCP server %q)", strings.TrimSpace(desc), t.Name, server),
		hint: t.Annotations != nil && t.Annotations.ReadOnlyHint, trusted: trusted}
}

func (t *Tool) Name() string            { return t.name }
func (t *Tool) Description() string     { return t.desc }
func (t *Tool) Schema() json.RawMessage { return t.schema }

// Server is the name of the tool's MCP server; MCPName the tool's own name.
func (t *Tool) Server() string  { return t.server }
func (t *Tool) MCPName() string { return t.mcpName }

// ReadOnly says whether agentd takes the tool as read-only: the server
// marked it so and the user trusts the server's hints (Server.TrustHints).
func (t *Tool) ReadOnly() bool { return t.hint && t.trusted }

// ReadOnlyHint says whether the server marked the tool read-only, trusted
// or not.
func (t *Tool) ReadOnlyHint() bool { return t.hint }

func (t *Tool) Category() tools.Category {
	if t.ReadOnly() {
		return tools.CategoryRead
	}
	return tools.CategoryNetwork
}

func (t *Tool) Risk() tools.Risk {
	if t.ReadOnly() {
		return tools.RiskLow
	}
	return tools.RiskMedium
}

// WritesUnchecked: the tool runs in the server's process, with the
// user's rights, whatever its hint says (tools.UncheckedWriter).
func (t *Tool) WritesUnchecked() bool { return true }

// RightsNote is what an approval of an MCP call says about what the tool
// can do.
const RightsNote = "The tool runs in the MCP server's own process with your rights: it can change any file, " +
	"in the workspace or outside it. agentd snapshots the workspace before and after the call, so what it " +
	"changes in the workspace is the run's and undo takes it back; what it changes outside the workspace " +
	"agentd can neither prevent nor undo."

func (t *Tool) Describe(args json.RawMessage) tools.Description {
	a := string(args)
	if a == "" {
		a = "{}"
	}
	short := a
	if len(short) > 120 {
		short = short[:117] + "…"
	}
	detail := fmt.Sprintf("server: %s\ntool: %s\narguments: %s\n\n%s", t.server, t.mcpName, a, RightsNote)
	if t.hint && !t.trusted {
		detail += fmt.Sprintf(" The server marks this tool read-only (readOnlyHint); that is the server's word, "+
			"trusted only for servers listed in %q in your config file.", "mcpTrustedServers")
	}
	return tools.Description{
		Title:  fmt.Sprintf("Call %s on the MCP server %s with %s", t.mcpName, t.server, short),
		Detail: detail,
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
	if why := t.srv.stoppedWhy(); why != "" {
		return nil, &tools.Error{Code: "MCP", Message: fmt.Sprintf("%s: the MCP server %s was stopped earlier in this session and its tools are "+
			"not available; the session goes on without it. Earlier: %s", t.name, t.server, why)}
	}
	cctx, cancel := context.WithTimeout(ctx, t.srv.timeout)
	defer cancel()
	res, err := t.srv.cs.CallTool(cctx, &mcp.CallToolParams{Name: t.mcpName, Arguments: a})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if cctx.Err() != nil {
			// A server that does not answer is stopped, so that it holds
			// nothing up, and named with the end of its stderr.
			why := t.srv.stop(fmt.Sprintf("MCP server %s did not answer tools/call %s within %s, so agentd stopped it; "+
				"the session goes on without its tools", t.server, t.mcpName, t.srv.timeout))
			return nil, &tools.Error{Code: "MCP_TIMEOUT", Message: t.name + ": " + why}
		}
		// A server that crashed (EOF, a closed pipe) is named with what it
		// last said; its tools fail from now on, the session goes on.
		return nil, &tools.Error{Code: "MCP", Message: fmt.Sprintf("%s: calling %s on the MCP server %s failed (%v): the server may have stopped; "+
			"the session goes on without it%s", t.name, t.mcpName, t.server, err, t.srv.stderr.said())}
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
	full := len(out.Text)
	out.cap(tools.MaxCommandOutput)
	if env != nil && env.Output != nil && out.Text != "" {
		env.Output("stdout", out.Text)
		if out.Truncated {
			// Said again at the end, which a view showing the tail keeps.
			env.Output("stdout", fmt.Sprintf("\n[the MCP tool's result was cut: %d of %d bytes kept]", tools.MaxCommandOutput, full))
		}
	}
	if res.IsError {
		return &tools.Result{Output: out}, &tools.Error{Code: "MCP_TOOL_ERROR", Message: fmt.Sprintf("%s on the MCP server %s: %s", t.mcpName, t.server, out.Text)}
	}
	return &tools.Result{Output: out}, nil
}
