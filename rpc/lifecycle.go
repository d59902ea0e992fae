package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"go.lsp.dev/jsonrpc2"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// ProtocolVersion is agentd's protocol version (initialize result).
const ProtocolVersion = 2

func lifecycleMethods() map[string]method {
	return map[string]method{
		"initialize":                     {call: (*Server).initialize, beforeInit: true},
		"initialized":                    {notify: (*Server).initialized},
		"shutdown":                       {call: (*Server).shutdown, async: true},
		"exit":                           {notify: (*Server).exit, beforeInit: true},
		"$/cancelRequest":                {notify: (*Server).cancelNotification, beforeInit: true},
		"$/setTrace":                     {notify: func(*Server, context.Context, json.RawMessage) error { return nil }},
		"window/workDoneProgress/cancel": {notify: (*Server).workDoneProgressCancel},
	}
}

// ModelOptions is initializationOptions.model: the session's type, so
// that the editor's choice reaches the model settings as it was decoded.
type ModelOptions = session.EditorModel

// initOptions are initializationOptions: the editor's settings, decoded
// by session (session.DecodeEditorSettings, the one decoder of settings),
// and what the editor can do (the wire's client features).
type initOptions struct {
	session.EditorSettings
	ClientFeatures clientFeatures
}

type clientFeatures struct {
	ApprovalRequest bool `json:"approvalRequest"`
	ChangeReview    bool `json:"changeReview"`
	// HunksFollowEdits: the editor moves hunks with the user's typing
	// (changes_follow.go).
	HunksFollowEdits bool `json:"hunksFollowEdits"`
	InlineChanges    bool `json:"inlineChanges"`
}

// decodeInitOptions decodes initializationOptions: the settings through
// session, the client features here.
func decodeInitOptions(raw json.RawMessage) (initOptions, error) {
	var o initOptions
	es, err := session.DecodeEditorSettings(raw, "initializationOptions")
	if err != nil {
		return o, err
	}
	o.EditorSettings = es
	if len(raw) > 0 && string(raw) != "null" {
		var f struct {
			ClientFeatures clientFeatures `json:"clientFeatures"`
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			return o, badParam("initializationOptions.clientFeatures", "%v", err)
		}
		o.ClientFeatures = f.ClientFeatures
	}
	return o, nil
}

type initializeParams struct {
	ProcessID        *int   `json:"processId"`
	RootURI          string `json:"rootUri"`
	RootPath         string `json:"rootPath"`
	WorkspaceFolders []struct {
		URI  string `json:"uri"`
		Name string `json:"name"`
	} `json:"workspaceFolders"`
	Capabilities struct {
		Window struct {
			WorkDoneProgress bool `json:"workDoneProgress"`
		} `json:"window"`
		Workspace struct {
			ApplyEdit bool `json:"applyEdit"`
		} `json:"workspace"`
		General struct {
			PositionEncodings []string `json:"positionEncodings"`
		} `json:"general"`
	} `json:"capabilities"`
	InitializationOptions json.RawMessage `json:"initializationOptions"`
}

// InitializeResult is the initialize answer.
type InitializeResult struct {
	Capabilities struct {
		PositionEncoding string `json:"positionEncoding,omitempty"`
		TextDocumentSync struct {
			OpenClose bool `json:"openClose"`
			Change    int  `json:"change"`
			Save      bool `json:"save"`
		} `json:"textDocumentSync"`
		Experimental struct {
			Agentd struct {
				ProtocolVersion int      `json:"protocolVersion"`
				Tools           []string `json:"tools"`
			} `json:"agentd"`
		} `json:"experimental"`
	} `json:"capabilities"`
	ServerInfo struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"serverInfo"`
}

// uriToPath turns a file:// URI (or a plain path) into an OS path.
func uriToPath(u string) (string, error) {
	if !strings.HasPrefix(u, "file:") {
		if filepath.IsAbs(u) {
			return filepath.Clean(u), nil
		}
		return "", fmt.Errorf("%q is not a file:// URI", u)
	}
	pu, err := url.Parse(u)
	if err != nil {
		return "", fmt.Errorf("bad URI %q: %w", u, err)
	}
	if pu.Host != "" && pu.Host != "localhost" {
		return "", fmt.Errorf("URI %q names a remote host", u)
	}
	return filepath.FromSlash(workspace.FromURIPath(pu.Path)), nil
}

// pathToURI is the inverse of uriToPath.
func pathToURI(p string) string {
	sp := filepath.ToSlash(p)
	if !strings.HasPrefix(sp, "/") {
		sp = "/" + sp // C:/x (Windows) is file:///C:/x
	}
	u := url.URL{Scheme: "file", Path: sp}
	return u.String()
}

func (s *Server) initialize(ctx context.Context, params json.RawMessage) (any, error) {
	var p initializeParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.state != stateNew {
		s.mu.Unlock()
		return nil, &jsonrpc2.Error{Code: jsonrpc2.InvalidRequest, Message: "initialize was already called"}
	}
	s.mu.Unlock()

	opts, err := decodeInitOptions(p.InitializationOptions)
	if err != nil {
		return nil, err
	}
	rootURI := p.RootURI
	if len(p.WorkspaceFolders) > 0 && rootURI == "" {
		rootURI = p.WorkspaceFolders[0].URI
	}
	var root string
	if rootURI != "" {
		r, err := uriToPath(rootURI)
		if err != nil {
			return nil, badParam("rootUri", "%v", err)
		}
		root = r
	} else if p.RootPath != "" {
		root = filepath.Clean(p.RootPath)
	}

	stateDir := s.opts.StateDir
	if stateDir == "" {
		stateDir = opts.StateDir
	}
	if stateDir == "" {
		stateDir = session.DefaultStateDir()
	}
	// Where agentd may work and write: refused before anything is opened
	// or written (the same rules as every front end's).
	if root != "" {
		if err := session.CheckPlaces(root, stateDir, opts.AllowBroadWorkspace); err != nil {
			field := "rootUri"
			if pe := (*session.PlaceError)(nil); errors.As(err, &pe) && pe.Field == "stateDir" {
				field = "stateDir (agentd serve --state-dir or AGENTD_STATE_DIR)"
				if s.opts.StateDir == "" && opts.StateDir != "" {
					field = "initializationOptions.stateDir"
				}
			}
			return nil, badParam(field, "%v", err)
		}
	}

	caps := clientCaps{
		workDoneProgress: p.Capabilities.Window.WorkDoneProgress,
		applyEdit:        p.Capabilities.Workspace.ApplyEdit,
		approvalRequest:  opts.ClientFeatures.ApprovalRequest,
		changeReview:     opts.ClientFeatures.ChangeReview,
		hunksFollowEdits: opts.ClientFeatures.HunksFollowEdits,
		inlineChanges:    opts.ClientFeatures.InlineChanges,
		positionEncoding: negotiateEncoding(p.Capabilities.General.PositionEncodings),
	}

	// One session per workspace (package session): workspace, snapshot
	// store (opened in the background so that initialize answers at
	// once; snapshot users wait for it), journal, review book, policy.
	var (
		sess  *session.Session
		wsErr error
	)
	if root != "" {
		var openStore func(context.Context, *workspace.Workspace, string) (*session.Store, error)
		if s.opts.OpenStore != nil {
			openStore = s.opts.OpenStore
		}
		sess, wsErr = session.Open(s.ctx, session.Options{Root: root, StateDir: stateDir, Logger: s.log,
			Background: true, Daemon: true, GCInterval: GCInterval,
			OpenWorkspace: s.opts.OpenWorkspace, OpenStore: openStore, AllowBroadWorkspace: opts.AllowBroadWorkspace,
			Plans: s.plans.PlanStore}) // the plans kept so far, and from now on in the journal
		if wsErr != nil {
			s.log.Error("opening the workspace failed", "root", root, "error", wsErr)
			sess = nil
		}
	}
	var persist *persister
	if sess != nil && sess.Journal != nil {
		// The journal is shared with agentd run and ACP: it is named by
		// the workspace's real path, as the shadow repository is.
		persist = &persister{j: sess.Journal, log: s.log}
	}

	s.mu.Lock()
	s.caps = caps
	s.initOpts = opts
	s.root = root
	s.wsErr = wsErr
	s.persist = persist
	s.registry = wrapTools(s, s.opts.Tools)
	if sess != nil {
		s.sess, s.ws = sess, sess.WS
		sess.Buffers = editorBuffers{s, sess.WS}
		sess.ChatStore().OnChange(s.chatChanged) // agentd/chat/changed
		sess.ChatStore().PlanQueuedWith(s.planQueued)
		s.changes.Book = sess.Book
		cfg := sess.Config()
		cfg.Tools = s.registry
		cfg.Approver = (*approver)(s)
		cfg.Reviewer = (*reviewer)(s)
		cfg.Inputter = (*inputter)(s)
		cfg.OnFailure = (*failureHandler)(s)
		cfg.Writer = (*editorWriter)(s)
		cfg.Logger = s.log.With("component", "engine")
		if s.opts.Configure != nil {
			s.opts.Configure(&cfg, opts.Model)
		}
		s.eng = engine.New(cfg)
	}
	s.state = stateInitialized
	s.mu.Unlock()

	s.restore()

	var res InitializeResult
	if len(p.Capabilities.General.PositionEncodings) > 0 {
		res.Capabilities.PositionEncoding = string(caps.positionEncoding)
	}
	res.Capabilities.TextDocumentSync.OpenClose = true
	res.Capabilities.TextDocumentSync.Change = 2
	res.Capabilities.TextDocumentSync.Save = true
	res.Capabilities.Experimental.Agentd.ProtocolVersion = ProtocolVersion
	res.Capabilities.Experimental.Agentd.Tools = []string{}
	for _, t := range s.opts.Tools.List() {
		res.Capabilities.Experimental.Agentd.Tools = append(res.Capabilities.Experimental.Agentd.Tools, t.Name())
	}
	res.ServerInfo.Name = "agentd"
	res.ServerInfo.Version = s.opts.Version
	if res.ServerInfo.Version == "" {
		res.ServerInfo.Version = "dev"
	}
	return res, nil
}

// restore loads what a previous daemon (or agentd run) recorded for this
// workspace.
func (s *Server) restore() {
	p := s.persist
	if p == nil {
		return
	}
	if sess, err := s.session(); err == nil {
		sess.Plans() // the plans the journal recorded join the server's
	}
	s.readRecordedRuns()
	s.keepChanges()
	s.mu.Lock()
	opts := s.initOpts
	s.mu.Unlock()
	if len(opts.Approval) > 0 && string(opts.Approval) != "null" {
		// initializationOptions.approval no longer overrides the
		// workspace's policy: editors change it with agentd/policy/set.
		s.log.Warn("initializationOptions.approval is ignored: the approval policy is the workspace's; change it with agentd/policy/set")
	}
}

// initialized starts saying, as a warning the editor shows, what the
// snapshot store did when it opened (in the background) about a restore
// or an undo a crash interrupted: the files it finished or rolled back,
// the ones it kept as the user left them, and the way back.
func (s *Server) initialized(ctx context.Context, _ json.RawMessage) error {
	s.mu.Lock()
	sess, root, stateDir := s.sess, s.root, s.opts.StateDir
	if stateDir == "" {
		stateDir = s.initOpts.StateDir
	}
	s.mu.Unlock()
	if sess == nil {
		return nil
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		rec, err := sess.Recovered(s.ctx)
		if err != nil {
			s.log.Error("what the recovery of an interrupted restore or undo did cannot be read", "error", err)
			return
		}
		if rec == nil {
			return
		}
		s.notify("window/showMessage", map[string]any{
			"type":    2, // warning
			"message": "agentd: " + rec.Message(func(args ...string) string { return session.CommandLine(root, stateDir, args...) }),
		})
	}()
	return nil
}

func (s *Server) shutdown(ctx context.Context, params json.RawMessage) (any, error) {
	s.mu.Lock()
	s.state = stateShutdown
	s.mu.Unlock()
	s.closeChats()
	s.stopAll()
	s.runs.wait()
	return nil, nil
}

func (s *Server) exit(ctx context.Context, params json.RawMessage) error {
	s.exitOnce.Do(func() { close(s.exitCh) })
	return nil
}

func (s *Server) cancelNotification(ctx context.Context, params json.RawMessage) error {
	var p struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return fmt.Errorf("$/cancelRequest: %w", err)
	}
	id, ok := parseID(p.ID)
	if !ok {
		return fmt.Errorf("$/cancelRequest: bad id %s", p.ID)
	}
	s.cancelRequest(id)
	return nil
}

func parseID(raw json.RawMessage) (jsonrpc2.ID, bool) {
	var n int64
	if err := json.Unmarshal(raw, &n); err == nil {
		return jsonrpc2.NewNumberID(n), true
	}
	var str string
	if err := json.Unmarshal(raw, &str); err == nil {
		return jsonrpc2.NewStringID(str), true
	}
	return jsonrpc2.ID{}, false
}

func (s *Server) workDoneProgressCancel(ctx context.Context, params json.RawMessage) error {
	var p struct {
		Token json.RawMessage `json:"token"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return fmt.Errorf("window/workDoneProgress/cancel: %w", err)
	}
	runID, ok := s.progress.run(string(p.Token))
	if !ok {
		return fmt.Errorf("window/workDoneProgress/cancel: unknown token %s", p.Token)
	}
	if e := s.runs.get(runID); e != nil && e.run != nil {
		e.run.Cancel()
	}
	return nil
}
