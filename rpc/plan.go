package rpc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/engine/plans"
	wire "github.com/agentd/agentd/protocol"
	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

func planMethods() map[string]method {
	return map[string]method{
		"agentd/plan/create":     {call: (*Server).planCreate, async: true},
		"agentd/plan/load":       {call: (*Server).planLoad, async: true},
		"agentd/plan/validate":   {call: (*Server).planValidate, async: true},
		"agentd/plan/get":        {call: (*Server).planGet},
		"agentd/plan/list":       {call: (*Server).planList},
		"agentd/plan/edit":       {call: (*Server).planEdit, async: true},
		"agentd/plan/regenerate": {call: (*Server).planRegenerate, async: true},
	}
}

// planStore holds the server's plans: the session's store (session.PlanStore,
// one store and one version rule for every front end), kept in memory
// until a workspace's session keeps them in its journal.
type planStore struct{ *session.PlanStore }

func newPlans() *planStore { return &planStore{session.NewPlanStore(nil, nil)} }

func (p *planStore) get(id string) (*plans.Plan, error) {
	pl, ok := p.Get(id)
	if !ok {
		return nil, notFound("plan", id)
	}
	return pl, nil
}

func newID(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func itoa(n int) string { return fmt.Sprint(n) }

// parsePlanParam reads a plan given inline or by URI.
// parsePlanParam reads how a client names a plan: inline (plan), by file
// inside the workspace (uri), or as the text of a file the user chose
// outside it (text, with name for its format and messages).
func (s *Server) parsePlanParam(ctx context.Context, p wire.PlanLoadParams) (*plans.Plan, error) {
	raw, uri := p.Plan, p.URI
	switch {
	case len(raw) > 0 && string(raw) != "null":
		if raw[0] != '{' {
			return nil, badParam("plan", "must be a plan object")
		}
		return plans.ParsePlan("plan.json", raw)
	case p.Text != nil:
		if int64(len(*p.Text)) > plans.MaxPlanSize {
			return nil, badParam("text", "%d bytes, more than the %d a plan may have", len(*p.Text), plans.MaxPlanSize)
		}
		name := p.Name
		if name == "" {
			name = "plan.json"
		}
		return plans.ParsePlan(path.Base(name), []byte(*p.Text))
	case uri != "":
		data, name, err := s.readURI(ctx, uri)
		if err != nil {
			return nil, err
		}
		return plans.ParsePlan(name, data)
	}
	return nil, badParam("plan", "give the plan inline (plan), by file inside the workspace (uri), or as text (text, name)")
}

// readURI reads a plan file the editor names. Only files inside the
// workspace are read (what the editor shows, unsaved edits included):
// regular files of at most plans.MaxPlanSize, within
// plans.PlanReadTimeout. A path outside is refused before anything is
// opened, so no error can echo its content.
func (s *Server) readURI(ctx context.Context, uri string) ([]byte, string, error) {
	ws, err := s.workspace()
	if err != nil {
		return nil, "", err
	}
	rel, _, err := ws.Resolve(uri)
	if err != nil {
		if errors.Is(err, workspace.ErrOutsideRoot) {
			return nil, "", fmt.Errorf("agentd/plan/load reads plan files inside the workspace only; send the plan inline instead: %w", err)
		}
		return nil, "", badParam("uri", "%v", err)
	}
	if fi, err := ws.Stat(rel); err == nil && fi.Mode().IsRegular() && fi.Size() > plans.MaxPlanSize {
		return nil, "", badParam("uri", "plan %s: %d bytes, more than the %d a plan may have", rel, fi.Size(), plans.MaxPlanSize)
	}
	ctx, cancel := context.WithTimeout(ctx, plans.PlanReadTimeout)
	defer cancel()
	data, err := ws.ReadFile(ctx, rel) // refuses FIFOs, devices and directories unread
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("reading plan %s: %w", rel, err)
		}
		return nil, "", badParam("uri", "reading plan %s: %v", rel, err)
	}
	if int64(len(data)) > plans.MaxPlanSize {
		return nil, "", badParam("uri", "plan %s: %d bytes, more than the %d a plan may have", rel, len(data), plans.MaxPlanSize)
	}
	return data, rel, nil
}

func (s *Server) validatePlan(p *plans.Plan) error {
	eng, err := s.engine()
	if err != nil {
		if probs := plans.ValidatePlan(p, s.opts.Tools, 0); len(probs) > 0 {
			return &plans.ValidationError{Problems: probs}
		}
		return nil
	}
	if probs := eng.Validate(p); len(probs) > 0 {
		return &plans.ValidationError{Problems: probs}
	}
	return nil
}

// storePlan keeps p in the plan store (an id, the next version, a
// history entry); a plan that cannot be saved is not acknowledged.
func (s *Server) storePlan(p *plans.Plan, source, reason string) (*plans.Plan, error) {
	return s.plans.Store(p, source, reason)
}

// planContext is what the user pointed at (plan/create's and chat/ask's
// context), as a PlanRequest has it.
func planContext(c *wire.PlanContext) ([]string, *Selection) {
	if c == nil {
		return nil, nil
	}
	if c.Selection == nil {
		return c.URIs, nil
	}
	r := c.Selection.Range
	return c.URIs, &Selection{URI: c.Selection.URI, Range: workspace.Range{
		Start: workspace.Position{Line: r.Start.Line, Character: r.Start.Character},
		End:   workspace.Position{Line: r.End.Line, Character: r.End.Character}}}
}

func (s *Server) planCreate(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.PlanCreateParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.Request) == "" {
		return nil, badParam("request", "say what the plan should do")
	}
	if s.opts.PlanMaker == nil {
		return nil, errNoModel
	}
	req := PlanRequest{ExploreRounds: p.ExploreRounds, MapTokens: p.MapTokens, Approve: (*approver)(s).Approve}
	var chats *session.ChatStore // nil: a plan of no chat
	if p.ChatID != "" {
		sess, err := s.session()
		if err != nil {
			return nil, err
		}
		chats = sess.ChatStore()
	}
	progress, end := s.planProgress(p.WorkDoneToken)
	defer end()
	req.URIs, req.Selection = planContext(p.Context)
	attached, err := s.attachedContext(ctx, p.Context, &req.Images)
	if err != nil {
		return nil, err
	}
	// The chat's turns before this one, as every conversation's planner
	// is told them (session.ChatStore.PlanTurn).
	pl, _, err := chats.PlanTurn(ctx, s.planTurn(p.ChatID, p.Request, req, func(context.Context, *[]session.Image) (string, error) { return attached, nil }, progress))
	if err != nil {
		return nil, err
	}
	return pl, nil
}

// planTurn is the chat turn of a plan request (agentd/plan/create's, or a
// message of a chat's queue): the planner is asked with what the user
// attached (attached, read when it plans), its work streams to the chat
// (agentd/chat/stream activity, with the turn's index) and to progress
// ($/progress), and the plan is validated and kept in the plan store.
func (s *Server) planTurn(chatID, request string, req PlanRequest, attached func(context.Context, *[]session.Image) (string, error), progress func(string)) session.ChatTurn {
	var turn atomic.Int64
	turn.Store(-1)
	req.Progress = func(msg string) {
		if progress != nil {
			progress(msg)
		}
		if n := turn.Load(); chatID != "" && n >= 0 {
			s.notifyBatched(chatStreamMethod, chatStream{ChatID: chatID, Turn: int(n), Activity: msg})
		}
	}
	return session.ChatTurn{ChatID: chatID, Where: "in the editor", Request: request,
		Started: func(n int) { turn.Store(int64(n)) },
		Guide:   func(next func() []string) { req.Guidance = next },
		Plan: func(ctx context.Context, request string) (*plans.Plan, error) {
			if s.opts.PlanMaker == nil {
				return nil, errNoModel
			}
			r := req
			att, err := attached(ctx, &r.Images)
			if err != nil {
				return nil, err
			}
			r.Request = request + att
			return s.opts.PlanMaker.MakePlan(ctx, r)
		},
		Keep: func(pl *plans.Plan) (*plans.Plan, error) {
			if err := s.validatePlan(pl); err != nil {
				return nil, err
			}
			return s.storePlan(pl, "model", "created from a request")
		}}
}

func (s *Server) planLoad(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.PlanLoadParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	pl, err := s.parsePlanParam(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := s.validatePlan(pl); err != nil {
		return nil, err
	}
	return s.storePlan(pl, "load", "loaded")
}

// ValidateResult is agentd/plan/validate's result.
type ValidateResult struct {
	Valid    bool            `json:"valid"`
	Problems []plans.Problem `json:"problems"`
}

func (s *Server) planValidate(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.PlanLoadParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	res := ValidateResult{Valid: true, Problems: []plans.Problem{}}
	pl, err := s.parsePlanParam(ctx, p)
	if err == nil {
		err = s.validatePlan(pl)
	}
	if err != nil {
		if _, bad := err.(*paramError); bad {
			return nil, err
		}
		res.Valid = false
		if verr, ok := err.(*plans.ValidationError); ok {
			res.Problems = verr.Problems
		} else {
			res.Problems = []plans.Problem{{Message: err.Error()}}
		}
	}
	return res, nil
}

func (s *Server) planGet(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.PlanIDParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	return s.plans.get(p.PlanID)
}

// PlanSummary is one entry of agentd/plan/list.
type PlanSummary struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"createdAt"`
	LastRun   string    `json:"lastRun,omitempty"`
}

func (s *Server) planList(ctx context.Context, params json.RawMessage) (any, error) {
	list := s.plans.List()
	out := make([]PlanSummary, 0, len(list))
	for _, pl := range list {
		out = append(out, PlanSummary{ID: pl.ID, Title: pl.Title, Version: pl.Version, CreatedAt: pl.CreatedAt, LastRun: s.plans.LastRun(pl.ID)})
	}
	return out, nil
}

func (s *Server) planEdit(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.PlanEditParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	edits, err := planEdits(p.Edits)
	if err != nil {
		return nil, err
	}
	eng, err := s.engine()
	if err != nil {
		return nil, err
	}
	if _, err := s.plans.get(p.PlanID); err != nil {
		return nil, err
	}
	reason := p.Reason
	if reason == "" {
		reason = "edited in the editor"
	}
	// The store checks the version and keeps the next one; the engine
	// checks the ops, steps and tools.
	np, err := s.plans.Edit(p.PlanID, p.Version, func(cur *plans.Plan) (*plans.Plan, error) {
		return eng.EditPlan(cur, edits, reason)
	})
	if err != nil {
		return nil, err
	}
	s.chatPlanChanged(ctx, np)
	return np, nil
}

func (s *Server) planRegenerate(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.PlanRegenerateParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	cur, err := s.plans.get(p.PlanID)
	if err != nil {
		return nil, err
	}
	if s.opts.PlanMaker == nil {
		return nil, errNoModel
	}
	prev := cur.Clone()
	if sess, err := s.session(); err == nil {
		// A chat turn's plan is made again in the light of the turns
		// before it, as it was made.
		if prior, ok := sess.ChatStore().ContextOfPlan(cur.ID, "in the editor"); ok {
			prev.Request = prior + cur.Request
		}
	}
	pl, err := s.opts.PlanMaker.MakePlan(ctx, PlanRequest{Request: prev.Request, Previous: prev, Feedback: p.Feedback})
	if err != nil {
		return nil, err
	}
	pl, err = s.plans.Regenerated(cur, pl, p.Feedback, s.validatePlan)
	if err == nil {
		s.chatPlanChanged(ctx, pl)
	}
	return pl, err
}

// chatPlanChanged shows a chat turn's plan as edited or made again.
func (s *Server) chatPlanChanged(ctx context.Context, pl *plans.Plan) {
	if sess, err := s.session(); err == nil {
		sess.ChatStore().PlanChanged(ctx, pl)
	}
}

// planEdits reads agentd/plan/edit's edits as the engine has them: the
// step of an insert or update is decoded by the core (plans.Step), and a
// wrong type in it is reported at its path in the params, as a decode of
// the whole params would.
func planEdits(in []wire.PlanEdit) ([]plans.Edit, error) {
	out := make([]plans.Edit, len(in))
	for i, e := range in {
		out[i] = plans.Edit{Op: e.Op, StepID: e.StepID, After: e.After}
		if len(e.Step) == 0 || string(e.Step) == "null" {
			continue
		}
		out[i].Step = new(plans.Step)
		if err := json.Unmarshal(e.Step, out[i].Step); err != nil {
			var terr *json.UnmarshalTypeError
			if errors.As(err, &terr) {
				field := "edits.step"
				if terr.Field != "" {
					field += "." + terr.Field
				}
				return nil, badParam(field, "expected %s, got JSON %s", terr.Type, terr.Value)
			}
			return nil, badParam("", "%v", err)
		}
	}
	return out, nil
}
