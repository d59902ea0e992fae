package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/llm"
	"github.com/agentd/agentd/engine/plans"
)

// ChatTurn is a request to plan in a conversation (ChatStore.PlanTurn):
// the one way every front end composes a chat turn (the editors'
// agentd/plan/create with a chatId, ACP prompts, agentd chat).
type ChatTurn struct {
	// ChatID is the chat; "" is none (the plan is made alone), unless
	// NewChat starts one when the turn is recorded.
	ChatID  string
	NewChat bool
	// Where names the front end in what the planner is told of the turns
	// before ("in the editor", "at the terminal").
	Where string
	// Request is the user's words: the turn's request and the plan's.
	// Ask, if set, is what is planned instead (the terminal's "f" turn
	// shows "fix it" and asks FixRequest).
	Request, Ask string
	// Plan asks the planner for a plan for request (the turns before,
	// then the user's words).
	Plan func(ctx context.Context, request string) (*plans.Plan, error)
	// Keep, if set, validates and stores the plan before the turn gets it
	// (a plan that is not kept fails the turn).
	Keep func(*plans.Plan) (*plans.Plan, error)
	// Started, if set, is told the turn's index in the chat once it is
	// recorded, before the planner starts (chat/stream names it).
	Started func(turn int)
	// Guide, if set, says the planner takes the user's guidance while it
	// plans (ChatStore.Queue with QueueGuidance): PlanTurn gives it, before
	// Plan, the func that returns the words given since it was last called
	// (never blocking), for the planner's next model call
	// (llm.CreateRequest.Guidance).
	Guide func(next func() []string)

	going *goingTurn // the queue's: the chat's going turn, taken already
}

// TurnNotKeptError is a turn planned (and kept) whose record in its chat
// failed: PlanTurn returns it with the plan, and the front end says it or
// fails the request.
type TurnNotKeptError struct {
	ChatID string // "" when the chat could not be started
	Err    error
}

func (e *TurnNotKeptError) Error() string {
	if e.ChatID == "" {
		return fmt.Sprintf("the conversation is not kept: %v", e.Err)
	}
	return fmt.Sprintf("the turn is not kept in chat %s: %v", e.ChatID, e.Err)
}

func (e *TurnNotKeptError) Unwrap() error { return e.Err }

// TurnPlanning is the status of a plan turn while its plan is made: the
// turn is recorded when planning starts (PlanTurn), and keeps the plan,
// or RunCancelled / RunFailed (with Failure) when its planning was stopped
// or failed.
const TurnPlanning engine.RunStatus = "planning"

// PlanTurn plans a turn of a chat: the planner is told the turns before
// (Context, worded for t.Where) ahead of the request; the turn is recorded
// in the chat when planning starts (status "planning", started now with
// t.NewChat) and t.Started is told its index; the plan's Request is the
// user's words (the chat keeps the rest); t.Keep keeps it and the turn
// gets it. A planning stopped (ctx cancelled) keeps the turn as
// cancelled, one that failed (the model, an invalid plan) as failed with
// Failure saying why and what to do; PlanTurn returns the error. A chat
// that cannot be read stops the turn before anything is planned. It
// returns the plan and the chat's id; a failed record is a
// *TurnNotKeptError returned with both. While it plans, the turn is the
// chat's going turn: a queued message waits for it, and "now" stops it
// (chat_queue.go).
func (cs *ChatStore) PlanTurn(ctx context.Context, t ChatTurn) (*plans.Plan, string, error) {
	prior := ""
	if t.ChatID != "" {
		var err error
		if prior, err = cs.Context(t.ChatID, t.Where); err != nil {
			return nil, t.ChatID, err
		}
	}
	ask := t.Ask
	if ask == "" {
		ask = t.Request
	}
	id := t.ChatID
	var notKept error
	if id == "" && t.NewChat {
		c, err := cs.New(ctx, "")
		if err != nil {
			notKept = &TurnNotKeptError{Err: err}
		} else {
			id = c.ID
		}
	}
	idx := -1
	if id != "" {
		var cancel context.CancelCauseFunc
		outer := ctx
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		g := t.going
		if g == nil {
			g = cs.startGoing(id, GoingPlanning)
		}
		if t.Guide != nil {
			g.mu.Lock()
			g.guided = true
			g.mu.Unlock()
			t.Guide(g.readGuidance)
		}
		g.setCancel(cancel)
		// Last: the queue is looked at once the turn is recorded as ended.
		defer cs.endGoing(g)
		// Recorded even when stopped already (agentd/chat/stop as a queued
		// message is taken): the turn is then kept as cancelled, never lost.
		n, err := cs.startTurn(outer, id, t.Request, g)
		if err != nil {
			notKept = &TurnNotKeptError{ChatID: id, Err: err}
		} else {
			idx = n
			if t.Started != nil {
				t.Started(idx)
			}
		}
	}
	// The turn's tokens: what the providers report for the calls made
	// to plan it (exploration included).
	mctx, used := llm.WithUsageMeter(ctx)
	pl, err := t.Plan(mctx, prior+ask)
	if err == nil {
		pl.Request = t.Request
		if t.Keep != nil {
			pl, err = t.Keep(pl)
		}
	}
	if idx >= 0 {
		if rerr := cs.endTurn(context.WithoutCancel(ctx), id, idx, t.Request, pl, err, ctx.Err() != nil, turnTokens(used)); rerr != nil && notKept == nil {
			notKept = &TurnNotKeptError{ChatID: id, Err: rerr}
		}
	}
	if err != nil {
		if cause := stoppedCause(ctx); cause != nil {
			err = cause
		}
		return nil, id, err
	}
	if notKept != nil {
		return pl, id, notKept
	}
	return pl, id, nil
}

// startTurn records a plan turn of the chat id as its planning starts and
// returns its index; g holds the turn's planning (heldPlanning) from
// before the record is written. A chat without a title takes the
// request's.
func (cs *ChatStore) startTurn(ctx context.Context, id, request string, g *goingTurn) (int, error) {
	idx := 0
	_, err := cs.update(ctx, id, func(c *Chat) error {
		c.Turns = append(c.Turns, &Turn{Request: request, Status: TurnPlanning})
		idx = len(c.Turns) - 1
		// Words given before the turn was recorded are its own too.
		c.Turns[idx].Guidance = g.hold(cs.planningLock(id, idx), idx)
		if c.Title == "" {
			c.Title = titleOf(request)
		}
		return nil
	})
	return idx, err
}

// endTurn records how the planning of turn idx ended: the plan pl, or
// planErr (stopped: cancelled; else failed, saying why).
func (cs *ChatStore) endTurn(ctx context.Context, id string, idx int, request string, pl *plans.Plan, planErr error, stopped bool, tokens *TurnTokens) error {
	_, err := cs.update(ctx, id, func(c *Chat) error {
		if idx >= len(c.Turns) || c.Turns[idx].Request != request {
			return fmt.Errorf("turn %d is not the turn planned (%q): the chat changed under it", idx, request)
		}
		t := c.Turns[idx]
		t.Tokens = tokens
		switch {
		case planErr == nil:
			t.Status, t.Failure = "", ""
			t.SetPlan(pl)
			t.PlanID = pl.ID
		case stopped:
			t.Status = engine.RunCancelled
		default:
			t.Status, t.Failure = engine.RunFailed, planFailure(planErr)
		}
		return nil
	})
	if err == nil && planErr == nil && pl.ID != "" {
		cs.lmu.Lock()
		cs.planChat[pl.ID] = id
		cs.lmu.Unlock()
	}
	return err
}

// planFailure says why a turn's plan could not be made, and what to do.
func planFailure(err error) string {
	var ve *plans.ValidationError
	switch {
	case errors.Is(err, engine.ErrNoModel):
		return fmt.Sprintf("no plan was made: %v", err)
	case errors.As(err, &ve):
		return fmt.Sprintf("the model's plan is invalid (after a repair round): %v. Send the request again, in other words, or name the files and tools to use.", err)
	}
	return fmt.Sprintf("the plan could not be made: %v. Send the request again, or choose another model (agentd/model/set, /model at the terminal).", err)
}

// PlanChatTurn is ChatStore.PlanTurn on the session's chats.
func (s *Session) PlanChatTurn(ctx context.Context, t ChatTurn) (*plans.Plan, string, error) {
	return s.chats.PlanTurn(ctx, t)
}

// turnTokens is what the meter m counted, nil when the provider reported
// nothing (a model that gives no usage, or no model call); its cost only
// when every call's model has a price.
func turnTokens(m *llm.UsageMeter) *TurnTokens {
	u := m.Used()
	if u.InputTokens == 0 && u.OutputTokens == 0 {
		return nil
	}
	t := &TurnTokens{Input: u.InputTokens, Output: u.OutputTokens}
	if m.CostKnown() {
		t.Cost = u.CostUSD
	}
	return t
}
