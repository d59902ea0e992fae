package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"go.lsp.dev/jsonrpc2"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// agentd's error codes (docs/protocol.md, "Errors").
const (
	CodePlanInvalid    jsonrpc2.Code = -32001
	CodeStaleVersion   jsonrpc2.Code = -32002
	CodeNotFound       jsonrpc2.Code = -32003
	CodeOutsideRoot    jsonrpc2.Code = -32004
	CodeConflict       jsonrpc2.Code = -32005
	CodeNoModel        jsonrpc2.Code = -32006
	CodeBudget         jsonrpc2.Code = -32007
	CodeNotInitialized jsonrpc2.Code = -32008
	CodeNoProtection   jsonrpc2.Code = -32009
	CodeRunActive      jsonrpc2.Code = -32010
	CodeCancelled      jsonrpc2.Code = -32800
)

// ErrNotFound is wrapped by errors for unknown plans, runs, change sets,
// steps and snapshots.
var ErrNotFound = errors.New("not found")

// notFound returns an error naming what was not found.
func notFound(kind, id string) error {
	return fmt.Errorf("%s %q: %w", kind, id, ErrNotFound)
}

// paramError is a bad parameter; it maps to -32602 with data.field.
type paramError struct {
	Field string
	Msg   string
}

func (e *paramError) Error() string {
	if e.Field == "" {
		return "invalid params: " + e.Msg
	}
	return "invalid params: " + e.Field + ": " + e.Msg
}

func badParam(field, format string, args ...any) error {
	return &paramError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// toRPCError maps any error a handler returns to the wire error. It is the
// only place that knows the codes.
func toRPCError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var wire *jsonrpc2.Error
	if errors.As(err, &wire) && wire.Error() == err.Error() {
		return wire
	}
	withData := func(code jsonrpc2.Code, data any) *jsonrpc2.Error {
		e := &jsonrpc2.Error{Code: code, Message: err.Error()}
		if data != nil {
			e.Data, _ = json.Marshal(data)
		}
		return e
	}
	var (
		verr *plans.ValidationError
		perr *paramError
		cerr *workspace.ConflictError
		nsnp *session.NoSnapshotsError
		ferr *session.FieldError
		rerr *session.RuleError
		terr *json.UnmarshalTypeError
		serr *json.SyntaxError
		aerr *engine.ActiveRunError
		chnf *session.ChatNotFoundError
	)
	switch {
	case errors.As(err, &perr):
		return withData(jsonrpc2.InvalidParams, map[string]string{"field": perr.Field})
	case errors.As(err, &ferr):
		return withData(jsonrpc2.InvalidParams, map[string]string{"field": ferr.Field})
	case errors.As(err, &rerr):
		return withData(jsonrpc2.InvalidParams, map[string]string{"field": rerr.Field})
	case errors.As(err, &nsnp):
		// Undo names the run it cannot undo rather than skip it.
		return withData(CodeNotFound, map[string]string{"runId": nsnp.RunID, "reason": "noSnapshots"})
	case errors.As(err, &chnf):
		return withData(CodeNotFound, map[string]string{"chatId": chnf.ID})
	case errors.Is(err, session.ErrNothingToUndo), errors.Is(err, session.ErrNoRestoreToUndo), errors.Is(err, session.ErrNoSuchRun),
		errors.Is(err, session.ErrNoRewind), errors.Is(err, session.ErrNoQueued):
		return withData(CodeNotFound, nil)
	case errors.As(err, &terr):
		return withData(jsonrpc2.InvalidParams, map[string]string{"field": terr.Field})
	case errors.As(err, &serr):
		return withData(jsonrpc2.InvalidParams, map[string]string{"field": ""})
	case errors.As(err, &verr):
		problems := verr.Problems
		if problems == nil {
			problems = []plans.Problem{}
		}
		return withData(CodePlanInvalid, map[string]any{"problems": problems})
	case errors.As(err, &aerr):
		// The engine says what is active; the way out is worded here.
		e := &jsonrpc2.Error{Code: CodeRunActive, Message: fmt.Sprintf("%v: resume it or cancel it first (agentd/run/resume, agentd/run/cancel), or start with options.concurrent: true", aerr)}
		e.Data, _ = json.Marshal(map[string]string{"runId": aerr.RunID, "status": string(aerr.Status)})
		return e
	case errors.Is(err, plans.ErrStaleVersion):
		return withData(CodeStaleVersion, nil)
	case errors.Is(err, session.ErrNoProtectionBase):
		// Before not found: the message names the snapshot it lacks.
		return withData(CodeNoProtection, nil)
	case errors.Is(err, ErrNotFound), errors.Is(err, fs.ErrNotExist), errors.Is(err, session.ErrSnapshotNotFound):
		return withData(CodeNotFound, nil)
	case errors.Is(err, workspace.ErrOutsideRoot):
		var pe *workspace.PathError
		if errors.As(err, &pe) {
			return withData(CodeOutsideRoot, map[string]string{"path": pe.Path})
		}
		return withData(CodeOutsideRoot, nil)
	case errors.As(err, &cerr):
		return withData(CodeConflict, map[string]string{"path": cerr.Path})
	case errors.Is(err, engine.ErrNoModel):
		return withData(CodeNoModel, nil)
	case errors.Is(err, engine.ErrBudgetExceeded):
		return withData(CodeBudget, nil)
	case errors.Is(err, errNotInitialized):
		return withData(CodeNotInitialized, nil)
	case errors.Is(err, session.ErrChatStopped):
		return withData(CodeCancelled, nil)
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return &jsonrpc2.Error{Code: CodeCancelled, Message: "request cancelled"}
	case errors.As(err, &wire):
		return withData(wire.Code, nil)
	}
	return withData(jsonrpc2.InternalError, nil)
}

var errNotInitialized = errors.New("server not initialized: send initialize first")

// errNoModel says how to configure a model.
var errNoModel = fmt.Errorf("%w: agentd/plan/create needs a model. Set AGENTD_MODEL=openai:<model> with OPENAI_API_KEY, "+
	"or point OPENAI_BASE_URL at a local OpenAI-compatible server (for example ollama: OPENAI_BASE_URL=http://localhost:11434/v1 AGENTD_MODEL=openai:llama3.1), "+
	"or pass initializationOptions.model; plans can also be loaded without a model with agentd/plan/load", engine.ErrNoModel)
