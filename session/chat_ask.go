package session

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/llm"
	"github.com/agentd/agentd/workspace"
)

// AnswerFunc answers request (the question with the chat's turns before
// it) in words, calling onText with each piece of the answer as it comes;
// it returns the answer and what was read for it.
type AnswerFunc func(ctx context.Context, request string, onText func(string)) (text string, read []string, err error)

// ChatQuestion is a question turn of a chat (ChatStore.Ask).
type ChatQuestion struct {
	// ChatID is the chat; with NewChat and no ChatID a chat is started
	// for the question.
	ChatID  string
	NewChat bool
	// Where names the front end ("in the editor", "at the terminal").
	Where    string
	Question string
	// Answer gives the answer; OnText, if set, gets each piece with the
	// turn's index.
	Answer AnswerFunc
	OnText func(turn int, text string)
}

// Ask is a question turn of a chat, the same for every front end: the
// model is told the chat's turns before and asked to answer in words
// (Conversation.QuestionContext), q.Answer gives the answer (q.OnText gets
// each piece with the turn's index), and the chat keeps the turn. When ctx
// is cancelled while it answers (or a message queued "now" stops it), the
// chat keeps the turn with what was said so far, marked cancelled, and
// Ask returns the context's error. It returns the turn, its index and the
// chat's id (the new chat's with q.NewChat).
func (cs *ChatStore) Ask(ctx context.Context, q ChatQuestion) (*Turn, int, string, error) {
	id := q.ChatID
	if strings.TrimSpace(q.Question) == "" {
		return nil, 0, id, errors.New("the question is empty: say what you want to know")
	}
	if id == "" && q.NewChat {
		c, err := cs.New(ctx, "")
		if err != nil {
			return nil, 0, "", &TurnNotKeptError{Err: err}
		}
		id = c.ID
	}
	c, err := cs.Get(id)
	if err != nil {
		return nil, 0, id, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	g := cs.startGoing(id, GoingAnswer)
	g.setCancel(cancel)
	defer cs.endGoing(g) // last: the queue is looked at once the turn is kept
	turn := len(c.Turns)
	var mu sync.Mutex
	var said strings.Builder
	mctx, used := llm.WithUsageMeter(ctx)
	text, read, err := q.Answer(mctx, c.QuestionContext(q.Where)+q.Question, func(piece string) {
		if piece == "" {
			return
		}
		mu.Lock()
		said.WriteString(piece)
		mu.Unlock()
		if q.OnText != nil {
			q.OnText(turn, piece)
		}
	})
	if err != nil {
		if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
			return nil, 0, id, err
		}
		// Stopped by the user: the chat shows what was said, and the next
		// turns know the answer was cut.
		mu.Lock()
		so := strings.TrimSpace(said.String())
		mu.Unlock()
		if cause := stoppedCause(ctx); cause != nil {
			err = cause
		}
		if _, _, rerr := cs.AddAnswer(context.WithoutCancel(ctx), id, Turn{Request: q.Question, Answer: so, Status: engine.RunCancelled, Tokens: turnTokens(used)}); rerr != nil {
			return nil, 0, id, errors.Join(err, rerr)
		}
		return nil, 0, id, err
	}
	t, idx, err := cs.AddAnswer(ctx, id, Turn{Request: q.Question, Answer: text, Read: read, Tokens: turnTokens(used)})
	return t, idx, id, err
}

// Answerer is the models' AnswerFunc over the workspace ws: the planner's
// model reads with the exploration tools (the sensitive files the gate
// of approve guards; nil approve leaves them out) and answers in words;
// progress, if set, gets each read. Without a configured model it fails
// as planning does (engine.ErrNoModel, saying how to configure one).
func (m *Models) Answerer(ws *workspace.Workspace, approve func(context.Context, approval.ApprovalRequest) (approval.ApprovalDecision, error), progress func(string)) AnswerFunc {
	return func(ctx context.Context, request string, onText func(string)) (string, []string, error) {
		if m == nil || m.Planner == nil {
			return "", nil, engine.ErrNoModel
		}
		req := llm.CreateRequest{Request: request, Workspace: ws, OnText: onText, Approve: approve}
		if progress != nil {
			req.OnProgress = func(p llm.Progress) { progress(p.String()) }
		}
		a, err := m.Planner.Answer(ctx, req)
		if err != nil {
			return "", nil, err
		}
		return a.Text, a.Read, nil
	}
}
