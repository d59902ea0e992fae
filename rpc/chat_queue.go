package rpc

import (
	"context"
	"encoding/json"
	"errors"

	wire "github.com/agentd/agentd/protocol"
)

// The chat's queue on the wire (docs/protocol.md "Chats"): messages sent
// while a turn runs, kept in the chat's record and planned by the session
// when the running turn ends (after) or once it is stopped (now).

var errQueueNotBuilt = errors.New("the chat's queue is not built yet in this daemon: send the message when the running turn ends")

func (s *Server) chatQueue(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ChatQueueParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	return nil, errQueueNotBuilt
}

func (s *Server) chatQueueEdit(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ChatQueueEditParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	return nil, errQueueNotBuilt
}

func (s *Server) chatUnqueue(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ChatUnqueueParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	return nil, errQueueNotBuilt
}
