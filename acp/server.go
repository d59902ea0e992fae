package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// Options configure the agent.
type Options struct {
	Version string
	// StateDir is agentd's state dir ("" = gitops.DefaultStateDir()).
	StateDir string
	// AllowBroadWorkspace lets a session's cwd be / or the home directory
	// (workspace.CheckRoot).
	AllowBroadWorkspace bool
	// Model overrides the configured model ("provider:model" or a profile).
	Model  string
	Logger *slog.Logger
	// Getenv reads the model settings' environment (os.Getenv if nil).
	Getenv func(string) string
}

// Serve speaks ACP on in/out until in ends or ctx is done.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	a := &agent{opts: opts, log: opts.Logger, sessions: map[string]*session{}, initDone: make(chan struct{}), wire: w}
	conn := sdk.NewAgentSideConnection(a, w, pr)
	conn.SetLogger(opts.Logger.With("component", "acp-wire"))
	a.conn = conn
	readErr := make(chan error, 1)
	go func() { readErr <- filterLines(in, pw, w, &a.gate) }()
	select {
	case <-conn.Done():
	case <-ctx.Done():
	}
	// Let the requests being handled finish (a prompt's context ends with
	// the connection), close every session, and only then stop writing.
	a.drain(15 * time.Second)
	a.closeAll()
	w.close()
	_ = pr.Close()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// The client closing its end is the normal end; input that cannot be
	// read is not, and agentd exits non-zero.
	select {
	case err := <-readErr:
		return err
	case <-time.After(time.Second):
		return nil // the reader is still blocked on input: not a read error
	}
}

// Session modes (session/set_mode).
const (
	modePlanOnly = "plan-only"
	modeAsk      = "ask"
	modeAuto     = "auto"
)

var sessionModes = []sdk.SessionMode{
	{Id: modePlanOnly, Name: "Plan only", Description: sdk.Ptr("Make and show the plan; run nothing (/run runs it).")},
	{Id: modeAsk, Name: "Ask", Description: sdk.Ptr("Run the plan; ask before edits, commands, git and network, as agentd's approval policy says.")},
	{Id: modeAuto, Name: "Auto", Description: sdk.Ptr("Run the plan without asking (the policy's denyCommands still apply).")},
}

// agent implements the SDK's Agent.
type agent struct {
	opts Options
	log  *slog.Logger
	conn *sdk.AgentSideConnection
	wire *lockedWriter
	out  outbox     // the one ordered writer of updates and permission requests
	gate promptGate // one prompt at a time per session

	mu          sync.Mutex
	initialized bool
	// initDone is closed when initialize has set the client's capabilities.
	// The line filter has already refused requests that came before
	// initialize on the wire, but the SDK handles requests concurrently, so
	// a pipelined session/new can reach its handler first: it waits here.
	initDone chan struct{}
	caps     sdk.ClientCapabilities
	sessions map[string]*session
	// Requests being handled, and the end of the connection.
	inflight int
	closing  bool
	idle     chan struct{}
}

var (
	_ sdk.Agent       = (*agent)(nil)
	_ sdk.AgentLoader = (*agent)(nil)
)

// initWait bounds how long a request that came after initialize on the
// wire waits for initialize's handler to finish.
var initWait = 10 * time.Second

// errNotInitialized answers requests sent before initialize.
var errNotInitialized = &sdk.RequestError{Code: -32600, Message: "Invalid request: call initialize first"}

// errClosing answers requests that arrive while the agent shuts down.
var errClosing = &sdk.RequestError{Code: -32603, Message: "Internal error", Data: map[string]any{"error": "agentd acp is shutting down"}}

// begin counts a request in (end counts it out); needInit refuses it
// before initialize.
func (a *agent) begin(needInit bool) (end func(), err error) {
	if needInit {
		select {
		case <-a.initDone:
		case <-time.After(initWait):
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closing {
		return nil, errClosing
	}
	if needInit && !a.initialized {
		return nil, errNotInitialized
	}
	a.inflight++
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.inflight--
		if a.inflight == 0 && a.idle != nil {
			close(a.idle)
			a.idle = nil
		}
	}, nil
}

// drain refuses new requests and waits up to d for the ones being handled.
func (a *agent) drain(d time.Duration) {
	a.mu.Lock()
	a.closing = true
	if a.inflight == 0 {
		a.mu.Unlock()
		return
	}
	a.idle = make(chan struct{})
	idle := a.idle
	a.mu.Unlock()
	select {
	case <-idle:
	case <-time.After(d):
		a.log.Warn("requests still running at exit", "after", d)
	}
}

func (a *agent) clientCaps() sdk.ClientCapabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.caps
}

func (a *agent) Initialize(ctx context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	end, err := a.begin(false)
	if err != nil {
		return sdk.InitializeResponse{}, err
	}
	defer end()
	a.mu.Lock()
	if !a.initialized {
		close(a.initDone)
	}
	a.initialized = true
	a.caps = p.ClientCapabilities
	a.mu.Unlock()
	a.log.Info("acp initialize", "clientVersion", p.ProtocolVersion,
		"fsRead", p.ClientCapabilities.Fs.ReadTextFile, "fsWrite", p.ClientCapabilities.Fs.WriteTextFile,
		"terminal", p.ClientCapabilities.Terminal)
	// Version negotiation: answer the client's version if we support it,
	// else the latest we support (1); the client disconnects if it cannot
	// speak that.
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession: true,
			PromptCapabilities: sdk.PromptCapabilities{
				EmbeddedContext: true,
				Image:           a.defaultVision(),
			},
			McpCapabilities: sdk.McpCapabilities{Http: true},
		},
		AgentInfo:   &sdk.Implementation{Name: "agentd", Title: sdk.Ptr("agentd"), Version: a.opts.Version},
		AuthMethods: []sdk.AuthMethod{},
	}, nil
}

func (a *agent) Authenticate(ctx context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	end, err := a.begin(true)
	if err != nil {
		return sdk.AuthenticateResponse{}, err
	}
	defer end()
	// agentd needs no sign-in: model keys come from the environment or
	// the config file.
	return sdk.AuthenticateResponse{}, nil
}

func (a *agent) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	end, err := a.begin(true)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	defer end()
	if !filepath.IsAbs(p.Cwd) {
		return sdk.NewSessionResponse{}, sdk.NewInvalidParams(map[string]any{"cwd": "must be an absolute path, not " + fmt.Sprintf("%q", p.Cwd)})
	}
	s, err := newSession(ctx, a, p.Cwd, "")
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	s.startMCP(ctx, p.McpServers)
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	if err := s.save(); err != nil {
		return sdk.NewSessionResponse{}, err
	}
	announceLater(s)
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(s.id), Modes: s.modeState(), ConfigOptions: s.configOptions(), Models: s.modelState()}, nil
}

func (a *agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	end, err := a.begin(true)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	defer end()
	if !filepath.IsAbs(p.Cwd) {
		return sdk.LoadSessionResponse{}, sdk.NewInvalidParams(map[string]any{"cwd": "must be an absolute path, not " + fmt.Sprintf("%q", p.Cwd)})
	}
	a.mu.Lock()
	old := a.sessions[string(p.SessionId)]
	a.mu.Unlock()
	if old != nil {
		old.cancel()
		old.wait(10 * time.Second)
		old.close()
	}
	s, err := newSession(ctx, a, p.Cwd, string(p.SessionId))
	if err != nil {
		if isNotFound(err) {
			return sdk.LoadSessionResponse{}, &sdk.RequestError{Code: -32002, Message: "Resource not found",
				Data: map[string]any{"sessionId": p.SessionId, "error": "no saved session with this id for " + p.Cwd}}
		}
		return sdk.LoadSessionResponse{}, err
	}
	s.startMCP(ctx, p.McpServers)
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	// The whole conversation is replayed before the answer (the spec asks
	// for the history first).
	s.replay(ctx)
	announceLater(s)
	return sdk.LoadSessionResponse{Modes: s.modeState(), ConfigOptions: s.configOptions(), Models: s.modelState()}, nil
}

func (a *agent) session(id sdk.SessionId) (*session, error) {
	a.mu.Lock()
	s := a.sessions[string(id)]
	a.mu.Unlock()
	if s == nil {
		return nil, &sdk.RequestError{Code: -32002, Message: "Resource not found",
			Data: map[string]any{"sessionId": id, "error": "no such session; create one with session/new or load it with session/load"}}
	}
	return s, nil
}

func (a *agent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	defer a.gate.leave(string(p.SessionId)) // before the answer is written
	end, err := a.begin(true)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	defer end()
	s, err := a.session(p.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	return s.prompt(ctx, p.Prompt)
}

func (a *agent) Cancel(ctx context.Context, p sdk.CancelNotification) error {
	end, err := a.begin(true)
	if err != nil {
		return err
	}
	defer end()
	a.mu.Lock()
	s := a.sessions[string(p.SessionId)]
	a.mu.Unlock()
	if s != nil {
		s.cancel()
	}
	return nil
}

func (a *agent) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	end, err := a.begin(true)
	if err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	defer end()
	s, err := a.session(p.SessionId)
	if err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	if err := s.setMode(string(p.ModeId)); err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	return sdk.SetSessionModeResponse{}, nil
}

func (a *agent) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	end, err := a.begin(true)
	if err != nil {
		return sdk.ListSessionsResponse{}, err
	}
	defer end()
	return sdk.ListSessionsResponse{}, sdk.NewMethodNotFound("session/list")
}

func (a *agent) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	end, err := a.begin(true)
	if err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	defer end()
	return sdk.ResumeSessionResponse{}, sdk.NewMethodNotFound("session/resume")
}

func (a *agent) CloseSession(ctx context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	end, err := a.begin(true)
	if err != nil {
		return sdk.CloseSessionResponse{}, err
	}
	defer end()
	s, err := a.session(p.SessionId)
	if err != nil {
		return sdk.CloseSessionResponse{}, err
	}
	s.cancel()
	s.wait(10 * time.Second)
	s.close()
	a.mu.Lock()
	delete(a.sessions, s.id)
	a.mu.Unlock()
	return sdk.CloseSessionResponse{}, nil
}

func (a *agent) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	end, err := a.begin(true)
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	defer end()
	v := p.ValueId
	if v == nil {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"configId": "agentd's only config option is \"model\", a select: send a value id"})
	}
	s, err := a.session(v.SessionId)
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	if v.ConfigId != configModel {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"configId": fmt.Sprintf("unknown config option %q; agentd's only one is \"model\"", v.ConfigId)})
	}
	if err := s.setModel(string(v.Value)); err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: s.configOptions()}, nil
}

// UnstableSetSessionModel is session/set_model, the model selection some
// clients use: the same choice as the config option "model".
func (a *agent) UnstableSetSessionModel(ctx context.Context, p sdk.UnstableSetSessionModelRequest) (sdk.UnstableSetSessionModelResponse, error) {
	end, err := a.begin(true)
	if err != nil {
		return sdk.UnstableSetSessionModelResponse{}, err
	}
	defer end()
	s, err := a.session(p.SessionId)
	if err != nil {
		return sdk.UnstableSetSessionModelResponse{}, err
	}
	return sdk.UnstableSetSessionModelResponse{}, s.setModel(string(p.ModelId))
}

func (a *agent) closeAll() {
	a.mu.Lock()
	list := slices.Collect(maps.Values(a.sessions))
	a.mu.Unlock()
	for _, s := range list {
		s.cancel()
	}
	for _, s := range list {
		s.wait(10 * time.Second)
		s.close()
	}
}

// announceLater offers the commands once the client has the session's id
// (the answer to session/new goes out when the handler returns).
func announceLater(s *session) { time.AfterFunc(50*time.Millisecond, s.announceCommands) }

var errNoPlan = errors.New("there is no plan yet: describe what you want done, or use /plan REQUEST")
