package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// GCInterval is how often the daemon prunes the snapshot store in the
// background (retention: the last runs within the quota).
var GCInterval = 30 * time.Minute

// Options configure a Server. Everything is optional.
type Options struct {
	// Version is reported in serverInfo.
	Version string
	// StateDir overrides initializationOptions.stateDir and the default
	// state dir.
	StateDir string
	// Logger receives the server's logs (never stdout in serve mode).
	Logger *slog.Logger
	// PlanMaker makes plans from requests (agentd/plan/create and
	// regenerate). Without one those methods fail with -32006.
	PlanMaker PlanMaker
	// Tools is the tool registry (default session.BuiltinTools()).
	Tools *session.ToolRegistry
	// Configure may add a model, a planner and rules to the engine config
	// before the engine is created (at initialize). model is the editor's
	// initializationOptions.model, nil when it sent none.
	Configure func(cfg *engine.Config, model *ModelOptions)
	// MaxMessageSize is the largest accepted frame (default 64 MiB).
	MaxMessageSize int64
	// OpenWorkspace and OpenStore replace workspace.Open and gitops.Open
	// (tests).
	OpenWorkspace func(root string) (*workspace.Workspace, error)
	OpenStore     func(ctx context.Context, ws *workspace.Workspace, stateDir string) (*session.Store, error)
	// RebaseDelay replaces the pause in the typing that the rebase of
	// pending hunks waits for (default RebaseDelay; tests).
	RebaseDelay time.Duration
}

// Selection is a range in a document (plan/create context).
type Selection struct {
	URI   string          `json:"uri"`
	Range workspace.Range `json:"range"`
}

// PlanRequest is what a PlanMaker is asked for.
type PlanRequest struct {
	Request   string
	URIs      []string
	Selection *Selection
	// Images are context.items' images (context_image.go), for a model
	// that takes images.
	Images []session.Image
	// Previous and Feedback are set for agentd/plan/regenerate.
	Previous *plans.Plan
	Feedback string
	// ExploreRounds and MapTokens are plan/create's options (0: defaults;
	// < 0: no exploration, no repository map).
	ExploreRounds, MapTokens int
	// Progress, if set, reports what the planner does ($/progress).
	Progress func(message string)
	// Approve asks the editor (agentd/approval/request) before the
	// planner's model reads a sensitive file (approval.ReadGate).
	Approve func(ctx context.Context, req approval.ApprovalRequest) (approval.ApprovalDecision, error)
	// Guidance, set for a chat's plan turn, returns the words the user gave
	// while it plans (agentd/chat/queue with when guidance) since it was
	// last called, for the planner's next model call; it never blocks.
	Guidance func() []string
}

// PlanMaker makes plans with a model (engine/llm behind an adapter).
type PlanMaker interface {
	MakePlan(ctx context.Context, req PlanRequest) (*plans.Plan, error)
}

// ErrExitWithoutShutdown is returned by Serve when the client sent exit
// without shutdown first (LSP: exit code 1).
var ErrExitWithoutShutdown = errors.New("exit without shutdown")

const (
	stateNew = iota
	stateInitialized
	stateShutdown
)

// Server is one editor session: one connection, one workspace.
type Server struct {
	opts Options
	log  *slog.Logger

	ctx    context.Context // the session's lifetime; cancelled at exit
	cancel context.CancelFunc
	conn   jsonrpc2.Conn
	out    *stream // conn's stream, for batched notifications
	client protocol.Client

	mu       sync.Mutex
	state    int
	exitCh   chan struct{}
	exitOnce sync.Once
	inflight map[jsonrpc2.ID]*inflight
	caps     clientCaps
	initOpts initOptions
	root     string
	ws       *workspace.Workspace
	wsErr    error
	// sess is the workspace's session (package session): store, journal,
	// review book, policy, undo.
	sess      *session.Session
	eng       *engine.Engine
	registry  *session.ToolRegistry
	persist   *persister
	methods   map[string]method
	docs      *documents
	plans     *planStore
	runs      *runs
	changes   *changes
	typing    typing // the user's edits not rebased yet (typing.go)
	proposals *proposals
	approvals *approvals
	progress  *progressTokens
	// bg is the server's own background work (the recovery message),
	// waited for before the store closes.
	bg sync.WaitGroup
}

// clientCaps is what the client declared.
type clientCaps struct {
	workDoneProgress bool
	applyEdit        bool
	approvalRequest  bool
	changeReview     bool
	hunksFollowEdits bool
	inlineChanges    bool                       // changeProposed carries the change set
	positionEncoding workspace.PositionEncoding // negotiated at initialize (documents.go)
}

// method is one registered request or notification.
type method struct {
	call  func(s *Server, ctx context.Context, params json.RawMessage) (any, error)
	async bool // runs concurrently with later messages (may block or call the client)
	// notification methods only:
	notify func(s *Server, ctx context.Context, params json.RawMessage) error
	// beforeInit may be called before initialize.
	beforeInit bool
}

// NewServer returns a server; Serve runs it on a connection.
func NewServer(opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Tools == nil {
		opts.Tools = session.BuiltinTools()
	}
	s := &Server{
		opts:     opts,
		log:      log,
		exitCh:   make(chan struct{}),
		inflight: map[jsonrpc2.ID]*inflight{},
	}
	s.methods = registerMethods()
	s.docs = newDocuments()
	s.plans = newPlans()
	s.runs = newRuns()
	s.changes = newChanges()
	s.proposals = newProposals()
	s.changes.onPut = s.onChangeRegistered
	s.approvals = newApprovals()
	s.progress = newProgressTokens()
	return s
}

// Methods lists every method the server handles (requests and
// notifications), for documentation checks.
func Methods() []string {
	var out []string
	for m := range registerMethods() {
		out = append(out, m)
	}
	return out
}

func registerMethods() map[string]method {
	m := map[string]method{}
	for _, group := range []map[string]method{
		lifecycleMethods(), documentMethods(), planMethods(), runMethods(),
		changeMethods(), reproposeMethods(), snapshotMethods(), undoMethods(), policyMethods(), toolMethods(), chatMethods(), modelMethods(), contextMethods(),
	} {
		for name, h := range group {
			if _, dup := m[name]; dup {
				panic("rpc: method registered twice: " + name)
			}
			m[name] = h
		}
	}
	return m
}

// Serve serves one connection until the client exits or closes it, or ctx
// is done. It returns nil after shutdown+exit or end of input,
// ErrExitWithoutShutdown after exit without shutdown.
func (s *Server) Serve(ctx context.Context, rwc io.ReadWriteCloser) error {
	s.ctx, s.cancel = context.WithCancel(ctx)
	defer s.cancel()
	st := newStream(rwc, s.opts.MaxMessageSize, s.log)
	s.out = st
	s.conn = jsonrpc2.NewConn(st, jsonrpc2.WithCodec(codec{}))
	s.client = protocol.ClientDispatcher(s.conn)
	s.conn.Go(s.ctx, s.handle)

	var err error
	select {
	case <-s.conn.Done():
		if cerr := s.conn.Err(); cerr != nil {
			err = cerr
		}
	case <-s.exitCh:
		s.mu.Lock()
		if s.state != stateShutdown {
			err = ErrExitWithoutShutdown
		}
		s.mu.Unlock()
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.closeTyping()
	s.closeChats()
	s.stopAll()
	s.cancel()
	// Closing the stream unblocks a reader parked mid-frame.
	_ = rwc.Close()
	_ = s.conn.Close()
	s.runs.wait()
	s.bg.Wait()
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess != nil {
		sess.Wait()
		sess.Book.Close() // rebases review.RecordDelay holds back are recorded
		if store, err := sess.Store(); err == nil {
			_ = store.Close()
		}
	}
	return err
}

// closeChats stops the chats' queue before the runs are cancelled at
// shutdown: a run the shutdown ends must not start planning a queued
// message (it stays queued for the next daemon).
func (s *Server) closeChats() {
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess != nil {
		sess.ChatStore().Close()
	}
}

// stopAll cancels every run and waits for their event pumps.
func (s *Server) stopAll() {
	s.runs.cancelAll()
	s.approvals.cancelAll()
}

// inflight is a request that may be cancelled.
type inflight struct {
	mu        sync.Mutex
	cancel    context.CancelFunc
	cancelled bool
}

func (f *inflight) setCancel(c context.CancelFunc) {
	f.mu.Lock()
	f.cancel = c
	done := f.cancelled
	f.mu.Unlock()
	if done {
		c()
	}
}

func (f *inflight) doCancel() {
	f.mu.Lock()
	f.cancelled = true
	c := f.cancel
	f.mu.Unlock()
	if c != nil {
		c()
	}
}

func (f *inflight) wasCancelled() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cancelled
}

// handle is the connection's handler. Notifications run inline, in arrival
// order; requests marked async release the read loop first and run
// concurrently.
func (s *Server) handle(ctx context.Context, req *jsonrpc2.Request) (result any, err error) {
	name := req.Method()
	if name != "textDocument/didChange" {
		// Every other message sees the hunks rebased onto the typing.
		s.flushTyping()
	}
	if !req.IsCall() {
		s.handleNotification(ctx, name, json.RawMessage(req.Params()))
		return nil, nil
	}
	m, ok := s.methods[name]
	if !ok || m.call == nil {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.MethodNotFound, Message: fmt.Sprintf("method %q not found", name)}
	}
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	switch {
	case state == stateNew && !m.beforeInit:
		return nil, toRPCError(ctx, errNotInitialized)
	case state == stateShutdown && name != "shutdown":
		return nil, &jsonrpc2.Error{Code: jsonrpc2.InvalidRequest, Message: "server is shutting down; only exit is accepted"}
	}
	if !m.async {
		return s.invoke(ctx, name, m, json.RawMessage(req.Params()))
	}

	id := req.ID()
	f := &inflight{}
	s.mu.Lock()
	s.inflight[id] = f
	s.mu.Unlock()
	// Release the read loop before deriving any context from ctx (a
	// WithCancel on the pooled request context before Async can panic).
	jsonrpc2.Async(ctx)
	// Async cloned the request; the old name borrowed the frame buffer.
	name = req.Method()
	cctx, cancel := context.WithCancel(ctx)
	f.setCancel(cancel)
	defer func() {
		cancel()
		s.mu.Lock()
		if s.inflight[id] == f {
			delete(s.inflight, id)
		}
		s.mu.Unlock()
	}()
	result, err = s.invoke(cctx, name, m, json.RawMessage(req.Params()))
	if f.wasCancelled() {
		return nil, &jsonrpc2.Error{Code: CodeCancelled, Message: fmt.Sprintf("%s: request cancelled", name)}
	}
	return result, err
}

// invoke calls a method, recovering a panic into an internal error (the
// library would otherwise fail the whole connection).
func (s *Server) invoke(ctx context.Context, name string, m method, params json.RawMessage) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("handler panicked", "method", name, "panic", r, "stack", string(debug.Stack()))
			result, err = nil, &jsonrpc2.Error{Code: jsonrpc2.InternalError, Message: fmt.Sprintf("%s: internal error: %v", name, r)}
		}
	}()
	res, err := m.call(s, ctx, params)
	if err != nil {
		s.log.Debug("request failed", "method", name, "error", err)
		return nil, toRPCError(ctx, err)
	}
	// Results are encoded with encoding/json so that the shapes follow the
	// struct tags every package uses.
	if raw, ok := res.(json.RawMessage); ok {
		return raw, nil
	}
	b, merr := json.Marshal(res)
	if merr != nil {
		return nil, &jsonrpc2.Error{Code: jsonrpc2.InternalError, Message: fmt.Sprintf("%s: encoding result: %v", name, merr)}
	}
	return json.RawMessage(b), nil
}

func (s *Server) handleNotification(ctx context.Context, name string, params json.RawMessage) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("notification handler panicked", "method", name, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	m, ok := s.methods[name]
	if !ok || m.notify == nil {
		if !strings.HasPrefix(name, "$/") {
			s.log.Debug("ignoring unknown notification", "method", name)
		}
		return
	}
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	if state == stateNew && !m.beforeInit {
		s.log.Debug("ignoring notification before initialize", "method", name)
		return
	}
	if err := m.notify(s, ctx, params); err != nil {
		// A notification has no answer; tell the user through the log.
		s.log.Warn("notification failed", "method", name, "error", err)
	}
}

// cancelRequest cancels an in-flight request by id.
func (s *Server) cancelRequest(id jsonrpc2.ID) {
	s.mu.Lock()
	f := s.inflight[id]
	s.mu.Unlock()
	if f != nil {
		f.doCancel()
	}
}

// notify sends a notification, encoded with encoding/json.
func (s *Server) notify(method string, params any) {
	b, err := json.Marshal(params)
	if err != nil {
		s.log.Error("encoding notification", "method", method, "error", err)
		return
	}
	if err := s.conn.Notify(s.ctx, method, jsonrpc2.RawMessage(b)); err != nil {
		s.log.Debug("notification not sent", "method", method, "error", err)
	}
}

// notifyBatched sends a notification that may wait up to NotifyDelay to be
// written together with the ones after it (run progress): one write per
// batch instead of one per message. Order with every other message is kept.
func (s *Server) notifyBatched(method string, params any) {
	b, err := json.Marshal(params)
	if err != nil {
		s.log.Error("encoding notification", "method", method, "error", err)
		return
	}
	body := make([]byte, 0, len(b)+len(method)+48)
	body = append(body, `{"jsonrpc":"2.0","method":`...)
	body = strconv.AppendQuote(body, method)
	body = append(body, `,"params":`...)
	body = append(body, b...)
	body = append(body, '}')
	if err := s.out.writeDeferred(body, NotifyDelay); err != nil {
		s.log.Debug("notification not sent", "method", method, "error", err)
	}
}

// call makes a server->client request. It must never run on the read loop:
// every caller runs on an async request, an engine goroutine or its own.
func (s *Server) call(ctx context.Context, method string, params, result any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", method, err)
	}
	var raw json.RawMessage
	if _, err := s.conn.Call(ctx, method, jsonrpc2.RawMessage(b), &raw); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if result != nil && len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, result); err != nil {
			return fmt.Errorf("%s: reading the client's answer: %w", method, err)
		}
	}
	return nil
}

// decode unmarshals params strictly enough to report the field at fault.
func decode(params json.RawMessage, v any) error {
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	if err := json.Unmarshal(params, v); err != nil {
		var terr *json.UnmarshalTypeError
		if errors.As(err, &terr) {
			return badParam(terr.Field, "expected %s, got JSON %s", terr.Type, terr.Value)
		}
		return badParam("", "%v", err)
	}
	return nil
}

// codec encodes protocol types with the protocol package (its unions need
// it) and everything else with encoding/json.
type codec struct{}

func isProtocolType(v any) bool {
	t := reflect.TypeOf(v)
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice) {
		t = t.Elem()
	}
	return t != nil && t.PkgPath() == "go.lsp.dev/protocol"
}

func (codec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case jsonrpc2.RawMessage:
		if m == nil {
			return []byte("null"), nil
		}
		return m, nil
	case json.RawMessage:
		if m == nil {
			return []byte("null"), nil
		}
		return m, nil
	}
	if isProtocolType(v) {
		return protocol.Marshal(v)
	}
	return json.Marshal(v)
}

func (codec) Unmarshal(data []byte, v any) error {
	switch p := v.(type) {
	case *jsonrpc2.RawMessage:
		*p = append(jsonrpc2.RawMessage(nil), data...)
		return nil
	case *json.RawMessage:
		*p = append(json.RawMessage(nil), data...)
		return nil
	}
	if isProtocolType(v) {
		return protocol.Unmarshal(data, v)
	}
	return json.Unmarshal(data, v)
}

// requireWorkspace returns the workspace or an error saying why there is none.
func (s *Server) workspace() (*workspace.Workspace, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ws == nil {
		if s.wsErr != nil {
			return nil, fmt.Errorf("no workspace: %w", s.wsErr)
		}
		return nil, errors.New("no workspace folder is open: initialize with rootUri or workspaceFolders")
	}
	return s.ws, nil
}

func (s *Server) engine() (*engine.Engine, error) {
	if _, err := s.workspace(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.eng == nil {
		return nil, errors.New("engine not ready")
	}
	return s.eng, nil
}

func (s *Server) snapshots() (*session.Session, error) {
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess == nil {
		return nil, errors.New("snapshots unavailable: no workspace folder is open")
	}
	return sess, nil
}

func (s *Server) capabilities() clientCaps {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

// ServerToClient lists the methods the server sends to the client.
var ServerToClient = []string{
	"agentd/run/didChange", "window/workDoneProgress/create", "$/progress", "agentd/approval/request",
	"window/showMessageRequest", "workspace/applyEdit", "agentd/documents/save", "agentd/changes/didChange",
	"agentd/documents/reload", "agentd/chat/changed", "agentd/chat/stream",
}
