package rpc

import (
	"context"
	"encoding/json"

	wire "github.com/agentd/agentd/protocol"
	"github.com/agentd/agentd/session"
)

// Checkpoints of a chat on the wire (docs/protocol.md "Chats"): restore
// to before a turn (files, conversation or both, a dry run first, the
// files part undoable with agentd/undo/restore, the conversation part
// with agentd/chat/unrewind), and a branch from a turn. The rules are the
// session's; these only decode the params and put the result in wire
// terms (URIs, ways back).

func (s *Server) chatRestore(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ChatRestoreParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.chatSession(p.ChatID, true)
	if err != nil {
		return nil, err
	}
	if p.Turn == nil {
		// 0 is a turn: a missing one must not restore to before the first.
		return nil, badParam("turn", "name the turn (0-based) to restore to before; agentd/chat/load lists the turns")
	}
	opts := session.ChatRestoreOptions{Turn: *p.Turn, What: p.What,
		UndoOptions: session.UndoOptions{DryRun: p.DryRun, OnConflict: session.ConflictChoice(p.OnConflict)}}
	res, err := sess.RestoreChat(ctx, p.ChatID, opts)
	if err != nil {
		return nil, err
	}
	out := wire.ChatRestoreResult{ChatID: res.ChatID, Turn: res.Turn, What: res.What, DryRun: res.DryRun, Applied: res.Applied}
	if f := res.Files; f != nil {
		if len(f.Runs) > 0 {
			s.readRecordedRuns() // the run lists show them undone
		}
		u, rr := s.undoResult(&f.UndoResult)
		out.Files = &wire.ChatRestoreFiles{UndoResult: u, Runs: f.Runs, Turns: f.Turns, Created: rr.Created, Deleted: rr.Deleted}
	}
	if c := res.Conversation; c != nil {
		out.Conversation = &wire.ChatRewind{RewindID: c.RewindID, Turns: c.Turns}
		if c.RewindID != "" {
			out.Conversation.WayBack = &WayBack{Method: "agentd/chat/unrewind", Params: map[string]any{"chatId": res.ChatID, "rewindId": c.RewindID}}
		}
	}
	return out, nil
}

func (s *Server) chatUnrewind(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ChatUnrewindParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.chatSession(p.ChatID, true)
	if err != nil {
		return nil, err
	}
	turns, err := sess.UnrewindChat(ctx, p.ChatID, p.RewindID)
	if err != nil {
		return nil, err
	}
	return wire.ChatUnrewindResult{ChatID: p.ChatID, RewindID: p.RewindID, Turns: turns}, nil
}

func (s *Server) chatFork(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ChatForkParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.chatSession(p.ChatID, true)
	if err != nil {
		return nil, err
	}
	c, err := sess.ForkChat(ctx, p.ChatID, p.Turn, p.Request)
	if err != nil {
		return nil, err
	}
	return struct {
		session.ChatSummary
		Request string `json:"request,omitempty"`
	}{c.Summary(), p.Request}, nil
}
