package rpc

import (
	"context"
	"encoding/json"
	"errors"

	wire "github.com/agentd/agentd/protocol"
	"github.com/agentd/agentd/review"
)

// agentd/changes/repropose adapts review.Book.Repropose: the way out of a
// stale hunk (docs/protocol.md).
func reproposeMethods() map[string]method {
	return map[string]method{
		"agentd/changes/repropose": {call: (*Server).changesRepropose, async: true},
	}
}

func (s *Server) changesRepropose(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ReproposeParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	c, err := s.changes.get(p.ChangeID)
	if err != nil {
		return nil, err
	}
	ws, err := s.workspace()
	if err != nil {
		return nil, err
	}
	path := ""
	if p.URI != "" {
		path = s.relOf(p.URI)
	}
	if _, err := s.changes.Repropose(ctx, ws, c, path, p.HunkID); err != nil {
		var se *review.SelectError
		switch {
		case errors.As(err, &se):
			return nil, badParam(se.Field, "%s", se.Message)
		case errors.Is(err, review.ErrNothingToRepropose):
			field := "changeId"
			if p.HunkID != "" {
				field = "hunkId"
			}
			return nil, badParam(field, "%v", err)
		}
		return nil, err
	}
	var ci ChangeSetInfo
	s.changes.Read(func() { ci = s.changeInfo(c, true) })
	return ci, nil
}
