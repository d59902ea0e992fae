package acp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/mcptools"
	"github.com/agentd/agentd/review"
	agentsession "github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// maxTranscript bounds the updates kept for session/load's replay.
const maxTranscript = 5000

// session is one ACP session: a workspace, its snapshot store, an engine
// wired to the client, the plan and the last run.
type session struct {
	a       *agent
	id      string
	cwd     string
	journal *engine.Journal // the workspace's; the session is a record in it
	log     *slog.Logger
	ws      *workspace.Workspace
	store   *agentsession.Store
	sess    *agentsession.Session // the workspace's session: store, journal, book, policy, undo
	eng     *engine.Engine
	// models are nil when no model is configured.
	models *agentsession.Models
	// settings are the session's own model settings (their Model is the
	// session's model); defaultModel is the configured default.
	settings     *agentsession.ModelSettings
	defaultModel string
	// tools is the session's registry: the built-in tools (through the
	// client where it offers them) and the editor's MCP servers' tools.
	tools       *agentsession.ToolRegistry
	mcp         *mcptools.Set // nil without MCP servers
	mcpCalls    atomic.Int64  // numbers the MCP calls agent steps make (RUN/STEP/mcp-N)
	mcpProblems string        // servers that did not start, said after the commands
	caps        sdk.ClientCapabilities
	writer      workspace.FileWriter // the client's fs, or nil (disk)
	book        *review.Book         // change sets reviewed in this session

	mu         sync.Mutex
	saved      savedSession
	busy       bool
	turnCancel context.CancelFunc
	turnDone   chan struct{} // closed when the running turn ends
	overlays   map[string]int32
	watch      *watcher // the running turn's, if any
	// Usage: the planner's as last counted, and the running turn's.
	plannerSeen engine.Usage
	turnUsage   engine.Usage
	lastChunk   string // the end of the last agent text sent (chunk)
	// recovered is what the store did at open about a restore or an undo
	// a crash interrupted, said first in the session's next reply.
	recovered string
	answered  map[sdk.ToolCallId]int // approvals answered, per tool call
}

// savedSession is what survives a restart: the plan, the last run (with
// its snapshots), the undo of the last restore and the conversation.
type savedSession struct {
	ID           string              `json:"id"`
	Cwd          string              `json:"cwd"`
	Mode         string              `json:"mode"`
	Model        string              `json:"model,omitempty"` // chosen in the editor ("" = the default)
	Plan         *plans.Plan         `json:"plan,omitempty"`
	Run          *engine.RunState    `json:"run,omitempty"`
	Runs         []string            `json:"runs,omitempty"`
	Tokens       int                 `json:"tokens"` // input + output
	InputTokens  int                 `json:"inputTokens"`
	OutputTokens int                 `json:"outputTokens"`
	CostUSD      float64             `json:"costUSD"`
	UpdatedAt    time.Time           `json:"updatedAt"`
	Transcript   []sdk.SessionUpdate `json:"transcript,omitempty"`
	// ChatID is the session's chat in the workspace's chat store: its
	// conversation, what each prompt's planner is told about the turns
	// before it (session.Conversation), shared with the editors'
	// agentd/chat/* and agentd chat --resume.
	ChatID string `json:"chatId,omitempty"`
	// Conversation is where sessions saved before the chat store kept
	// their turns; a loaded one moves them into a chat.
	Conversation agentsession.Conversation `json:"conversation,omitempty"`
}

func newSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "sess-" + hex.EncodeToString(b[:])
}

// newSession opens the workspace at cwd; with id set it loads that saved
// session (fs.ErrNotExist when there is none).
func newSession(ctx context.Context, a *agent, cwd, id string) (*session, error) {
	// Where agentd may work and write: refused before anything is opened
	// or written (the same rules as every front end's).
	if err := agentsession.CheckPlaces(cwd, a.opts.StateDir, a.opts.AllowBroadWorkspace); err != nil {
		field := "cwd"
		if pe := (*agentsession.PlaceError)(nil); errors.As(err, &pe) && pe.Field == "stateDir" {
			field = "stateDir"
		}
		return nil, sdk.NewInvalidParams(map[string]any{field: err.Error()})
	}
	ws, err := agentsession.OpenWorkspace(cwd, 0) // the config's maxFileSize, as every front end
	if err != nil {
		return nil, sdk.NewInvalidParams(map[string]any{"cwd": fmt.Sprintf("cannot open the workspace %s: %v", cwd, err)})
	}
	s := &session{a: a, cwd: cwd, ws: ws, caps: a.clientCaps(), overlays: map[string]int32{}}
	if id == "" {
		s.id = newSessionID()
		s.saved = savedSession{ID: s.id, Cwd: cwd, Mode: modeAsk}
	} else {
		s.id = id
		if filepath.Base(id) != id || id == "." || id == ".." {
			ws.Close()
			return nil, sdk.NewInvalidParams(map[string]any{"sessionId": "not a session id: " + id})
		}
	}
	s.log = a.log.With("session", s.id)
	// One session layer for every front end (package session): journal,
	// review book, snapshot store (with the agent's unsaved buffers),
	// approval policy, undo.
	sess, err := agentsession.Open(ctx, agentsession.Options{WS: ws, StateDir: a.opts.StateDir, Logger: s.log, AllowBroadWorkspace: a.opts.AllowBroadWorkspace})
	if err != nil {
		ws.Close()
		return nil, fmt.Errorf("cannot open the session of %s: %w (check the state dir, or set AGENTD_STATE_DIR)", ws.Root(), err)
	}
	j := sess.Journal
	s.sess, s.journal, s.book = sess, j, sess.Book
	sess.Buffers = clientBuffers{s}
	if id != "" {
		found, err := j.Load(sessionRecord(id), &s.saved)
		if err == nil && !found {
			err = errNotFound
		}
		if err != nil {
			_ = sess.Close()
			return nil, err
		}
	}
	if len(s.saved.Conversation.Turns) > 0 && s.saved.ChatID == "" {
		// A session saved before the chat store: its turns become a chat.
		if c, err := sess.ChatStore().Import(ctx, "", s.saved.Conversation); err != nil {
			s.log.Error("the session's earlier turns are not kept as a chat", "error", err)
		} else {
			s.saved.ChatID, s.saved.Conversation = c.ID, agentsession.Conversation{}
		}
	}
	s.store, _ = sess.Store()
	if rec, err := sess.Recovered(ctx); err != nil {
		s.log.Error("what the recovery of an interrupted restore or undo did cannot be read", "error", err)
	} else if rec != nil {
		s.recovered = rec.Message(func(args ...string) string { return agentsession.CommandLine(ws.Root(), a.opts.StateDir, args...) })
	}
	switch {
	case s.caps.Fs.WriteTextFile:
		s.writer = clientWriter{s}
	case s.caps.Fs.ReadTextFile:
		s.writer = overlayDropper{s, ws.DiskWriter()}
	}
	cfg := sess.Config()
	s.tools = s.toolRegistry()
	cfg.Tools = s.tools
	cfg.Approver, cfg.Reviewer, cfg.Inputter = (*approver)(s), (*reviewer)(s), (*inputter)(s)
	cfg.Writer, cfg.Logger = s.writer, s.log
	models, err := agentsession.LoadModels(agentsession.ModelOptions{Root: ws.Root(), Model: a.opts.Model, Getenv: a.opts.Getenv,
		LoadLogger: a.log, Logger: a.log.With("component", "llm"), Tools: cfg.Tools,
		StateDir:  a.opts.StateDir, // the map's cache file, beside the snapshots
		WatchMaps: true})           // a session lives long: later plans re-check only changed files
	if err != nil {
		s.log.Warn("model settings not loaded; prompts cannot be planned", "err", err)
	} else if models.Configured() {
		s.settings, s.defaultModel = models.Settings, models.Settings.Model
		s.models = models
		s.models.Planner.Logger = s.log.With("component", "planner")
		cfg.Model = &countingModel{models.Step, s}
		cfg.Planner = &recoverer{s: s}
		cfg.Rules = append(cfg.Rules, engine.DefaultRules()...)
	}
	s.eng = engine.New(cfg)
	s.restoreModel()
	return s, nil
}

// toolRegistry is the built-in tools, with the client's terminal and
// file system standing in where the client declares them.
func (s *session) toolRegistry() *agentsession.ToolRegistry {
	var et agentsession.EditorTools
	if s.caps.Terminal {
		et.RunCommand = func(t agentsession.Tool) agentsession.Tool { return &terminalTool{Tool: t, s: s} }
	}
	if s.caps.Fs.ReadTextFile {
		et.Read = s.readThroughClient
	}
	return agentsession.ToolsThroughEditor(s.ws, et)
}

func (s *session) close() {
	if s.mcp != nil {
		if err := s.mcp.Close(); err != nil {
			s.log.Debug("stopping MCP servers", "err", err)
		}
	}
	s.book.Close()       // what review.RecordDelay holds back is recorded
	_ = s.models.Close() // the map's file watcher
	if s.sess != nil {
		_ = s.sess.Close()
	} else if s.ws != nil {
		_ = s.ws.Close()
	}
}

// save writes the session to the state dir (before a prompt is answered).
func (s *session) save() error {
	s.mu.Lock()
	s.saved.UpdatedAt = time.Now().UTC()
	data, err := json.Marshal(s.saved)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.journal.Save(sessionRecord(s.id), json.RawMessage(data))
}

func (s *session) mode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saved.Mode
}

func (s *session) modeState() *sdk.SessionModeState {
	return &sdk.SessionModeState{AvailableModes: sessionModes, CurrentModeId: sdk.SessionModeId(s.mode())}
}

func (s *session) setMode(id string) error {
	switch id {
	case modePlanOnly, modeAsk, modeAuto:
	default:
		return sdk.NewInvalidParams(map[string]any{"modeId": fmt.Sprintf("unknown mode %q; the modes are plan-only, ask and auto", id)})
	}
	s.mu.Lock()
	s.saved.Mode = id
	s.mu.Unlock()
	s.send(sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{CurrentModeId: sdk.SessionModeId(id)}}, false)
	return s.save()
}

// send notifies the client; record keeps the update for session/load.
// Notifications use a background context: the last updates of a cancelled
// turn still reach the client.
func (s *session) send(u sdk.SessionUpdate, record bool) {
	if record {
		s.record(u)
	}
	s.a.out.mu.Lock()
	defer s.a.out.mu.Unlock()
	s.writeLocked(u)
}

// record keeps an update for session/load's replay.
func (s *session) record(u sdk.SessionUpdate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saved.Transcript = append(s.saved.Transcript, u)
	if n := len(s.saved.Transcript); n > maxTranscript {
		s.saved.Transcript = append([]sdk.SessionUpdate(nil), s.saved.Transcript[n-maxTranscript:]...)
	}
}

// say sends agent text.
func (s *session) say(text string) { s.chunk(text, true) }

// replay sends a loaded session's conversation again.
func (s *session) replay(ctx context.Context) {
	s.mu.Lock()
	list := append([]sdk.SessionUpdate(nil), s.saved.Transcript...)
	s.mu.Unlock()
	for _, u := range list {
		if ctx.Err() != nil {
			return
		}
		s.send(u, false)
	}
}

// commands offered to the client (available_commands_update).
var availableCommands = []sdk.AvailableCommand{
	{Name: "plan", Description: "Make a plan for a request and show it; run nothing", Input: &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: "what to do"}}},
	{Name: "run", Description: "Run the current plan"},
	{Name: "snapshots", Description: "List the workspace's snapshots (the start of each run and each step)"},
	{Name: "restore", Description: "Restore the workspace to a snapshot (undo with /undo-restore)", Input: &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: "snapshot id [--overwrite]"}}},
	{Name: "undo", Description: "Undo the last prompt's run (again: the run before)", Input: &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: "[--overwrite]"}}},
	{Name: "undo-restore", Description: "Undo the last restore (from any front end)", Input: &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: "[--overwrite]"}}},
	{Name: "rules", Description: "List the remembered approval rules (shared with the editors and agentd rules)"},
	{Name: "revoke", Description: "Forget remembered approval rules", Input: &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: "rule id..."}}},
}

func (s *session) announceCommands() {
	s.send(sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: availableCommands}}, false)
	if s.mcpProblems != "" {
		s.say(s.mcpProblems)
	}
}
