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

// Ask is a question turn of the chat id, the same for every front end:
// the model is told the chat's turns before and asked to answer in words
// (Conversation.QuestionContext), answer gives the answer (onText gets
// each piece with the turn's index), and the chat keeps the turn. When ctx
// is cancelled while it answers, the chat keeps the turn with what was
// said so far, marked cancelled, and Ask returns ctx's error. where names
// the front end ("in the editor", "at the terminal").
func (cs *ChatStore) Ask(ctx context.Context, id, where, question string, answer AnswerFunc, onText func(turn int, text string)) (*Turn, int, error) {
	if strings.TrimSpace(question) == "" {
		return nil, 0, errors.New("the question is empty: say what you want to know")
	}
	c, err := cs.Get(id)
	if err != nil {
		return nil, 0, err
	}
	turn := len(c.Turns)
	var mu sync.Mutex
	var said strings.Builder
	mctx, used := llm.WithUsageMeter(ctx)
	text, read, err := answer(mctx, c.QuestionContext(where)+question, func(piece string) {
		if piece == "" {
			return
		}
		mu.Lock()
		said.WriteString(piece)
		mu.Unlock()
		if onText != nil {
			onText(turn, piece)
		}
	})
	if err != nil {
		if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
			return nil, 0, err
		}
		// Stopped by the user: the chat shows what was said, and the next
		// turns know the answer was cut.
		mu.Lock()
		so := strings.TrimSpace(said.String())
		mu.Unlock()
		if _, _, rerr := cs.AddAnswer(context.WithoutCancel(ctx), id, Turn{Request: question, Answer: so, Status: engine.RunCancelled, Tokens: turnTokens(used)}); rerr != nil {
			return nil, 0, errors.Join(err, rerr)
		}
		return nil, 0, err
	}
	return cs.AddAnswer(ctx, id, Turn{Request: question, Answer: text, Read: read, Tokens: turnTokens(used)})
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
