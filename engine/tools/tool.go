package tools

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sort"
	"sync"

	"github.com/agentd/agentd/workspace"
)

// This file is the contract the engine, the planner and the server build
// against. The package's owner may add to it but must not change these
// signatures without updating every caller.

// Category groups tools for approval policy.
type Category string

const (
	CategoryRead    Category = "read"
	CategoryWrite   Category = "write"
	CategoryDelete  Category = "delete"
	CategoryCommand Category = "command"
	CategoryGit     Category = "git"
	CategoryInput   Category = "input"
	CategoryNetwork Category = "network"
)

// Risk is a tool's default risk; a step may override it.
type Risk string

const (
	RiskLow    Risk = "low"
	RiskMedium Risk = "medium"
	RiskHigh   Risk = "high"
)

// Tool is one built-in tool.
type Tool interface {
	Name() string
	// Description is the model-facing text (embedded next to the tool).
	Description() string
	Category() Category
	Risk() Risk
	// Schema is the JSON Schema (draft 2020-12) of the args object.
	Schema() json.RawMessage
	// Run executes the tool. args has been validated against Schema.
	//
	// A tool may return BOTH a non-nil Result and an error: the step failed,
	// but its output (for run_command: exitCode, stdout, stderr) is still
	// meaningful. The engine records that output on the failed step, so
	// recovery and later steps can refer to it.
	Run(ctx context.Context, env *Env, args json.RawMessage) (*Result, error)
}

// RiskAssessor is implemented by tools whose risk depends on the call (the
// git tool: status/diff/log are low, commit/apply high). The engine uses
// RiskOf instead of Risk when a tool implements it; a step's own risk still
// overrides both.
type RiskAssessor interface {
	RiskOf(args json.RawMessage) Risk
}

// UncheckedWriter is implemented by tools whose calls run outside agentd,
// in another process with the user's rights (an editor's MCP server's
// tools), and so may change any file whatever their category says. The
// engine brackets each call with snapshots as it does a command: what
// the call changed in the workspace is recorded as the run's, named in
// the summary and taken back by undo.
type UncheckedWriter interface {
	WritesUnchecked() bool
}

// Describer is implemented by tools that can say, for an approval prompt,
// what a call will do (the command line and its directory, the files).
type Describer interface {
	Describe(args json.RawMessage) Description
}

// ArgsChecker is implemented by tools whose args have rules a JSON Schema
// does not say well (json_patch: its paths are JSON Pointers). The engine's
// plan validation calls it after the schema check, so the problem is found
// before the run, not when the step runs. A string arg that is a whole
// reference ("$step", "${step.field}") is not known yet: skip it.
type ArgsChecker interface {
	CheckArgs(args json.RawMessage) []ArgProblem
}

// ArgProblem is one problem CheckArgs found. Field is the arg's path
// ("ops[0].path"); Message says what is wrong and how to fix it.
type ArgProblem struct {
	Field   string
	Message string
}

// Description is what an approval prompt shows.
type Description struct {
	Title   string
	Detail  string
	Command string // for commands: the command line
	Cwd     string
}

// Env is what a tool may use.
type Env struct {
	WS     *workspace.Workspace
	RunID  string
	StepID string
	// Output streams a chunk of output ("stdout", "stderr", "log"); never nil
	// when the engine calls Run (tests may leave it nil: use env.Emit).
	Output func(stream, text string)
	// Ask asks the user a question (ask_user); nil when nobody can answer.
	Ask func(ctx context.Context, question string, options []string) (string, error)
	// GitDir, if set, is the directory the git tool runs git in to find the
	// user's repository (default: the workspace root; the repository may be
	// the root or a folder above it).
	GitDir string
	// Logger receives the tools' diagnostics (files skipped by a search,
	// ...); nil discards them. Tools never use the global slog logger.
	Logger *slog.Logger
}

// discardLogger is what Log returns when no logger was passed in.
var discardLogger = slog.New(slog.DiscardHandler)

// Log returns the environment's logger, never nil.
func (e *Env) Log() *slog.Logger {
	if e == nil || e.Logger == nil {
		return discardLogger
	}
	return e.Logger
}

// Emit sends output if the environment has a sink.
func (e *Env) Emit(stream, text string) {
	if e != nil && e.Output != nil {
		e.Output(stream, text)
	}
}

// Result is a tool's outcome.
type Result struct {
	// Output is JSON-able; later steps refer to it as $step or ${step.field}.
	Output any
	// Changes is the proposed file change set (write tools), nil otherwise.
	Changes *workspace.ChangeSet
	// NeedsMoreContext asks the engine to re-plan (see plan-format.md).
	NeedsMoreContext  bool
	ContextSuggestion string
}

// Error is a tool error with a code; Retryable ones are retried by the
// engine's retry policy.
//
// Message is for a person (the terminal, the editor's step error): it says
// what went wrong and what a person can do. Hint is advice for a model
// only ("check the path with list_dir"): the engine adds it to what an
// agent step or the recovery planner is told (ModelText), never to what a
// person is shown.
type Error struct {
	Code      string // e.g. "NOT_FOUND", "AMBIGUOUS_MATCH", "EXIT_CODE", "TIMEOUT", "TEMPORARY"
	Message   string
	Hint      string
	Retryable bool
}

func (e *Error) Error() string { return e.Message }

// ModelText is err's text as a model is told it: the person's message
// followed by the model's hint of the tool error inside, if any.
func ModelText(err error) string {
	if err == nil {
		return ""
	}
	var te *Error
	if errors.As(err, &te) && te.Hint != "" {
		return err.Error() + "; " + te.Hint
	}
	return err.Error()
}

// IsRetryable reports whether the engine may retry after this error.
func (e *Error) IsRetryable() bool { return e.Retryable }

// Registry maps names to tools.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Tool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]Tool{}} }

// Register adds t, replacing a tool of the same name.
func (r *Registry) Register(t Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tools[t.Name()] = t
}

// Get returns the named tool.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// List returns the tools sorted by name.
func (r *Registry) List() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Tool, 0, len(r.tools))
	for _, t := range r.tools {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Builtin returns a registry with every built-in tool.
func Builtin() *Registry {
	r := NewRegistry()
	for _, t := range builtins() {
		r.Register(t)
	}
	return r
}
