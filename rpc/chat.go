package rpc

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	wire "github.com/agentd/agentd/protocol"
	"github.com/agentd/agentd/session"
)

// The editors' chats: the core's conversations (session.ChatStore, the
// same chats as agentd chat at the terminal and ACP sessions) on the wire.
// A chat's turns are made by agentd/plan/create with its chatId; what the
// turn's run did, its review and its undo are learned into the turn by the
// session, and agentd/chat/changed tells the editor to load it again.

func chatMethods() map[string]method {
	// Async: they read and write the chats' records (and wait for
	// another process's lock on them) off the connection's read loop.
	return map[string]method{
		"agentd/chat/new":        {call: (*Server).chatNew, async: true},
		"agentd/chat/list":       {call: (*Server).chatList, async: true},
		"agentd/chat/load":       {call: (*Server).chatLoad, async: true},
		"agentd/chat/rename":     {call: (*Server).chatRename, async: true},
		"agentd/chat/delete":     {call: (*Server).chatDelete, async: true},
		"agentd/chat/ask":        {call: (*Server).chatAsk, async: true},
		"agentd/chat/restore":    {call: (*Server).chatRestore, async: true},
		"agentd/chat/unrewind":   {call: (*Server).chatUnrewind, async: true},
		"agentd/chat/fork":       {call: (*Server).chatFork, async: true},
		"agentd/chat/queue":      {call: (*Server).chatQueue, async: true},
		"agentd/chat/queue/edit": {call: (*Server).chatQueueEdit, async: true},
		"agentd/chat/unqueue":    {call: (*Server).chatUnqueue, async: true},
		"agentd/chat/stop":       {call: (*Server).chatStop, async: true},
	}
}

// ChatView is agentd/chat/load's result: a chat with its turns, oldest
// first (session.Turn: request, planId, planTitle, planSteps, runId,
// status, steps, review, failure, undone, startSnapshot).
type ChatView struct {
	ChatID    string          `json:"chatId"`
	Title     string          `json:"title"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
	Turns     []*session.Turn `json:"turns"`
	// Condensed lists the turns (1-based) the next request condenses to
	// fit (session.ChatContextTokens).
	Condensed []int `json:"condensed,omitempty"`
	// ForkedFrom and Branches: the chat's place among its branches
	// (agentd/chat/fork).
	ForkedFrom *session.ChatRef  `json:"forkedFrom,omitempty"`
	Branches   []session.ChatRef `json:"branches,omitempty"`
	// Queued: the messages waiting for the next turns (agentd/chat/queue).
	Queued []session.QueuedMessage `json:"queued,omitempty"`
}

func chatView(c *session.Chat) ChatView {
	v := ChatView{ChatID: c.ID, Title: c.Title, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, Turns: c.Turns, Condensed: c.Condensed(),
		ForkedFrom: c.ForkedFrom, Branches: c.Branches, Queued: c.Queued}
	if v.Turns == nil {
		v.Turns = []*session.Turn{}
	}
	return v
}

// chatSession checks a chat id (when the method names a chat) and returns
// the session.
func (s *Server) chatSession(chatID string, needID bool) (*session.Session, error) {
	if needID && strings.TrimSpace(chatID) == "" {
		return nil, badParam("chatId", "name the chat (agentd/chat/list shows the chats, agentd/chat/new makes one)")
	}
	return s.session()
}

// chatIDParams decodes the params of a method that names a chat.
func (s *Server) chatIDParams(params json.RawMessage) (wire.ChatIDParams, *session.Session, error) {
	var p wire.ChatIDParams
	if err := decode(params, &p); err != nil {
		return p, nil, err
	}
	sess, err := s.chatSession(p.ChatID, true)
	return p, sess, err
}

// chatChanged is the session's word that a chat changed
// (agentd/chat/changed).
func (s *Server) chatChanged(chatID string) {
	s.notify("agentd/chat/changed", map[string]string{"chatId": chatID})
}

func (s *Server) chatNew(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ChatNewParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.chatSession("", false)
	if err != nil {
		return nil, err
	}
	c, err := sess.NewChat(ctx, p.Title)
	if err != nil {
		return nil, err
	}
	return c.Summary(), nil
}

func (s *Server) chatList(ctx context.Context, params json.RawMessage) (any, error) {
	sess, err := s.chatSession("", false)
	if err != nil {
		return nil, err
	}
	list, err := sess.Chats()
	if err != nil {
		return nil, err
	}
	return map[string]any{"chats": list}, nil
}

func (s *Server) chatLoad(ctx context.Context, params json.RawMessage) (any, error) {
	p, sess, err := s.chatIDParams(params)
	if err != nil {
		return nil, err
	}
	c, err := sess.Chat(p.ChatID)
	if err != nil {
		return nil, err
	}
	return chatView(c), nil
}

func (s *Server) chatRename(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ChatRenameParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.chatSession(p.ChatID, true)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.Title) == "" {
		return nil, badParam("title", "give the chat's new title")
	}
	c, err := sess.RenameChat(ctx, p.ChatID, p.Title)
	if err != nil {
		return nil, err
	}
	return c.Summary(), nil
}

func (s *Server) chatDelete(ctx context.Context, params json.RawMessage) (any, error) {
	p, sess, err := s.chatIDParams(params)
	if err != nil {
		return nil, err
	}
	if err := sess.DeleteChat(ctx, p.ChatID); err != nil {
		return nil, err
	}
	return map[string]any{"chatId": p.ChatID, "deleted": true}, nil
}
