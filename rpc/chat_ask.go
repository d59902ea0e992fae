package rpc

import (
	"context"
	"encoding/json"
	"strings"

	wire "github.com/agentd/agentd/protocol"
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
	var p wire.ChatAskParams
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
	req := PlanRequest{Approve: (*approver)(s).Approve}
	req.URIs, req.Selection = planContext(p.Context)
	attached, err := s.attachedContext(ctx, p.Context, &req.Images)
	if err != nil {
		return nil, err
	}
	var end func()
	req.Progress, end = s.planProgress(p.WorkDoneToken)
	defer end()
	answer := func(ctx context.Context, request string, onText func(string)) (string, []string, error) {
		r := req
		r.Request = request + attached
		a, err := ans.Answer(ctx, r, onText)
		if err != nil {
			return "", nil, err
		}
		return a.Text, a.Read, nil
	}
	t, idx, _, err := sess.ChatStore().Ask(ctx, session.ChatQuestion{ChatID: p.ChatID, Where: "in the editor", Question: p.Question, Answer: answer,
		OnText: func(turn int, text string) {
			s.notifyBatched(chatStreamMethod, chatStream{ChatID: p.ChatID, Turn: turn, Text: text})
		}})
	if err != nil {
		return nil, err
	}
	return ChatAskResult{ChatID: p.ChatID, Index: idx, Turn: t}, nil
}

// chatStream is agentd/chat/stream's params: the next piece of a turn's
// answer (or of a plan turn's model text), or what its planner is doing.
type chatStream struct {
	ChatID   string `json:"chatId"`
	Turn     int    `json:"turn"`
	Text     string `json:"text,omitempty"`
	Activity string `json:"activity,omitempty"`
}

const chatStreamMethod = "agentd/chat/stream"
