package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/session"
)

// Answerer answers a question about the workspace in words, with no plan
// (agentd/chat/ask). The server's PlanMaker answers questions when it is
// an Answerer too; req.Request is the question with the chat's turns
// before it, onText gets the answer as it streams in.
type Answerer interface {
	Answer(ctx context.Context, req PlanRequest, onText func(string)) (*Answer, error)
}

// Answer is an Answerer's answer: the text and what the model read for it
// ("read_file a.go (why)").
type Answer struct {
	Text string
	Read []string
}

// ChatAskResult is agentd/chat/ask's result: the question turn as the
// chat records it, with its index in the chat's turns.
type ChatAskResult struct {
	ChatID string `json:"chatId"`
	Index  int    `json:"turn"`
	*session.Turn
}

func (s *Server) chatAsk(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		ChatID   string `json:"chatId"`
		Question string `json:"question"`
		Context  *struct {
			URIs      []string   `json:"uris"`
			Selection *Selection `json:"selection"`
		} `json:"context"`
		WorkDoneToken json.RawMessage `json:"workDoneToken"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.ChatID) == "" {
		return nil, badParam("chatId", "name the chat (agentd/chat/list shows the chats, agentd/chat/new makes one)")
	}
	if strings.TrimSpace(p.Question) == "" {
		return nil, badParam("question", "say what you want to know")
	}
	ans, ok := s.opts.PlanMaker.(Answerer)
	if s.opts.PlanMaker == nil || !ok {
		return nil, errNoModel
	}
	sess, err := s.session()
	if err != nil {
		return nil, err
	}
	c, err := sess.Chat(p.ChatID)
	if err != nil {
		return nil, err
	}
	// The chat's turns before this one, as every conversation's model is
	// told them (session.Conversation), asked to answer in words.
	prior := c.QuestionContext("in the editor")
	turn := len(c.Turns)
	req := PlanRequest{Request: prior + p.Question, Approve: (*approver)(s).Approve}
	if p.Context != nil {
		req.URIs, req.Selection = p.Context.URIs, p.Context.Selection
	}
	var end func()
	req.Progress, end = s.planProgress(p.WorkDoneToken)
	defer end()
	var mu sync.Mutex
	var streamed strings.Builder
	onText := func(text string) {
		if text == "" {
			return
		}
		mu.Lock()
		streamed.WriteString(text)
		mu.Unlock()
		s.notifyBatched(chatStreamMethod, chatStream{ChatID: p.ChatID, Turn: turn, Text: text})
	}
	a, err := ans.Answer(ctx, req, onText)
	if err != nil {
		if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
			return nil, err
		}
		// Stopped by the user: the turn keeps what was said so far, so the
		// chat shows it and the next turns know the answer was cut.
		mu.Lock()
		so := streamed.String()
		mu.Unlock()
		t := session.Turn{Request: p.Question, Answer: strings.TrimSpace(so), Status: engine.RunCancelled}
		if _, _, rerr := sess.ChatStore().AddAnswer(context.WithoutCancel(ctx), p.ChatID, t); rerr != nil {
			s.log.Warn("the stopped question was not recorded", "chat", p.ChatID, "error", rerr)
		}
		return nil, err
	}
	t, idx, err := sess.ChatStore().AddAnswer(ctx, p.ChatID, session.Turn{Request: p.Question, Answer: a.Text, Read: a.Read})
	if err != nil {
		return nil, err
	}
	return ChatAskResult{ChatID: p.ChatID, Index: idx, Turn: t}, nil
}

// chatStream is agentd/chat/stream's params: the next piece of a turn's
// answer.
type chatStream struct {
	ChatID string `json:"chatId"`
	Turn   int    `json:"turn"`
	Text   string `json:"text"`
}

const chatStreamMethod = "agentd/chat/stream"
