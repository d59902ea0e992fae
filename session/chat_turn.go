package session

import (
	"context"
	"fmt"

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
	// Keep, if set, validates and stores the plan before the turn is
	// recorded (a plan that is not kept makes no turn).
	Keep func(*plans.Plan) (*plans.Plan, error)
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

// PlanTurn plans a turn of a chat: the planner is told the turns before
// (Context, worded for t.Where) ahead of the request; the plan's Request
// is the user's words (the chat keeps the rest); t.Keep keeps it; the
// turn is recorded in the chat (started now with t.NewChat). A chat that
// cannot be read stops the turn before anything is planned. It returns
// the plan and the chat's id; a failed record is a *TurnNotKeptError
// returned with both.
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
	// The turn's tokens: what the providers report for the calls made
	// to plan it (exploration included).
	mctx, used := llm.WithUsageMeter(ctx)
	pl, err := t.Plan(mctx, prior+ask)
	if err != nil {
		return nil, t.ChatID, err
	}
	pl.Request = t.Request
	if t.Keep != nil {
		if pl, err = t.Keep(pl); err != nil {
			return nil, t.ChatID, err
		}
	}
	id := t.ChatID
	if id == "" {
		if !t.NewChat {
			return pl, "", nil
		}
		c, err := cs.New(ctx, "")
		if err != nil {
			return pl, "", &TurnNotKeptError{Err: err}
		}
		id = c.ID
	}
	if _, err := cs.addTurn(ctx, id, t.Request, pl, turnTokens(used)); err != nil {
		return pl, id, &TurnNotKeptError{ChatID: id, Err: err}
	}
	return pl, id, nil
}

// PlanChatTurn is ChatStore.PlanTurn on the session's chats.
func (s *Session) PlanChatTurn(ctx context.Context, t ChatTurn) (*plans.Plan, string, error) {
	return s.chats.PlanTurn(ctx, t)
}

// turnTokens is what the meter m counted, nil when the provider reported
// nothing (a model that gives no usage, or no model call).
func turnTokens(m *llm.UsageMeter) *TurnTokens {
	u := m.Used()
	if u.InputTokens == 0 && u.OutputTokens == 0 {
		return nil
	}
	return &TurnTokens{Input: u.InputTokens, Output: u.OutputTokens}
}
