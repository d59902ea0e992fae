package rpc

import (
	"context"
	"encoding/json"
	"errors"

	wire "github.com/agentd/agentd/protocol"
)

// Checkpoints of a chat on the wire (docs/protocol.md "Chats"): restore
// to before a turn (files, conversation or both), bring rewound turns
// back, and branch from a turn. The rules are the session's; these only
// decode the params and word the result.

var errNotBuilt = errors.New("not built yet in this daemon")

func (s *Server) chatRestore(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ChatRestoreParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	return nil, errNotBuilt
}

func (s *Server) chatUnrewind(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ChatUnrewindParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	return nil, errNotBuilt
}

func (s *Server) chatFork(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ChatForkParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	return nil, errNotBuilt
}
