package rpc

import (
	"context"
	"encoding/json"
	"strings"

	wire "github.com/agentd/agentd/protocol"
	"github.com/agentd/agentd/session"
)

// The chat's queue on the wire (docs/protocol.md "Chats", "The queue"):
// messages sent while a turn of the chat is going, kept in the chat's
// record and planned by the session (session.ChatStore.Queue) when the
// going turn ends (after) or once it is stopped (now). The session plans
// them with planQueued, as agentd/plan/create plans a chat's request.

// ChatQueueResult is the result of agentd/chat/queue, queue/edit and
// unqueue: the message's id and the chat's queue now.
type ChatQueueResult struct {
	ChatID  string                  `json:"chatId"`
	QueueID string                  `json:"queueId"`
	Queued  []session.QueuedMessage `json:"queued"`
	// For when guidance only: given to the going turn (what took it), or
	// not, saying why (the message then queued as after).
	Delivered   *bool    `json:"delivered,omitempty"`
	DeliveredTo []string `json:"deliveredTo,omitempty"`
	Reason      string   `json:"reason,omitempty"`
}

// ChatStopResult is agentd/chat/stop's result: what was stopped.
type ChatStopResult struct {
	ChatID  string   `json:"chatId"`
	Stopped []string `json:"stopped"`
}

func (s *Server) chatQueue(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ChatQueueParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.chatSession(p.ChatID, true)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.Request) == "" {
		return nil, badParam("request", "say what the next turn should do")
	}
	m := session.QueuedMessage{Request: p.Request, When: p.When}
	if p.Context != nil {
		if m.Context, err = json.Marshal(p.Context); err != nil {
			return nil, badParam("context", "%v", err)
		}
	}
	id, q, guided, err := sess.ChatStore().Queue(ctx, p.ChatID, m)
	if err != nil {
		return nil, err
	}
	res := ChatQueueResult{ChatID: p.ChatID, QueueID: id, Queued: q}
	if guided != nil {
		res.Delivered, res.DeliveredTo, res.Reason = &guided.Delivered, guided.To, guided.Reason
	}
	return res, nil
}

func (s *Server) chatQueueEdit(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ChatQueueEditParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.chatSession(p.ChatID, true)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.QueueID) == "" {
		return nil, badParam("queueId", "name the queued message (agentd/chat/load lists the queue)")
	}
	q, err := sess.ChatStore().EditQueued(ctx, p.ChatID, p.QueueID, p.Request)
	if err != nil {
		return nil, err
	}
	return ChatQueueResult{ChatID: p.ChatID, QueueID: p.QueueID, Queued: q}, nil
}

func (s *Server) chatUnqueue(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ChatUnqueueParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.chatSession(p.ChatID, true)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.QueueID) == "" {
		return nil, badParam("queueId", "name the queued message (agentd/chat/load lists the queue)")
	}
	q, err := sess.ChatStore().Unqueue(ctx, p.ChatID, p.QueueID)
	if err != nil {
		return nil, err
	}
	return ChatQueueResult{ChatID: p.ChatID, QueueID: p.QueueID, Queued: q}, nil
}

// planQueued is the turn that plans a queued message of the chat
// (session.QueuePlanner): agentd/plan/create's, with the context the
// message was queued with, read when it is planned.
func (s *Server) planQueued(chatID string, m session.QueuedMessage) session.ChatTurn {
	var pc *wire.PlanContext
	var bad error
	if len(m.Context) > 0 {
		pc = new(wire.PlanContext)
		bad = decode(m.Context, pc)
	}
	req := PlanRequest{Approve: (*approver)(s).Approve}
	if bad == nil {
		req.URIs, req.Selection = planContext(pc)
	}
	return s.planTurn(chatID, m.Request, req, func(ctx context.Context, imgs *[]session.Image) (string, error) {
		if bad != nil {
			return "", bad
		}
		return s.attachedContext(ctx, pc, imgs)
	}, nil)
}

func (s *Server) chatStop(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ChatStopParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.chatSession(p.ChatID, true)
	if err != nil {
		return nil, err
	}
	stopped, err := sess.ChatStore().Stop(ctx, p.ChatID)
	if err != nil {
		return nil, err
	}
	return ChatStopResult{ChatID: p.ChatID, Stopped: stopped}, nil
}
