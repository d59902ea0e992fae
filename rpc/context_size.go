package rpc

import (
	"context"
	"encoding/json"

	wire "github.com/agentd/agentd/protocol"
	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// agentd/context/size: the size in tokens of the context items an editor
// attaches to a request (its chips), read and counted by the session
// (session.ContextSizes), so the editor shows them before sending; and the
// same items carried by plan/create's and chat/ask's context.items.

func contextMethods() map[string]method {
	return map[string]method{
		"agentd/context/size": {call: (*Server).contextSize},
	}
}

func contextEntries(in []wire.ContextEntry) []session.ContextEntry {
	out := make([]session.ContextEntry, len(in))
	for i, e := range in {
		out[i] = session.ContextEntry{URI: e.URI, Text: e.Text, Title: e.Title, Kind: e.Kind}
		if e.Image != nil {
			out[i].Image = &session.ContextImage{MIMEType: e.Image.MimeType, Data: e.Image.Data}
		}
		if e.Range != nil {
			out[i].Range = &workspace.Range{
				Start: workspace.Position{Line: e.Range.Start.Line, Character: e.Range.Start.Character},
				End:   workspace.Position{Line: e.Range.End.Line, Character: e.Range.End.Character}}
		}
	}
	return out
}

func (s *Server) contextSize(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ContextSizeParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	sess, err := s.session()
	if err != nil {
		return nil, err
	}
	sizes := sess.ContextSizes(ctx, contextEntries(p.Items), s.imageCheck())
	res := wire.ContextSizeResult{Items: make([]wire.ContextSize, len(sizes))}
	for i, c := range sizes {
		res.Items[i] = wire.ContextSize{Title: c.Title, Tokens: c.Tokens, Clipped: c.Clipped, Note: c.Note, Error: c.Error}
		res.Total += c.Tokens
	}
	return res, nil
}

// attachedContext is context.items as the request carries them after the
// user's words ("" for none), and their images in *imgs (context_image.go).
func (s *Server) attachedContext(ctx context.Context, c *wire.PlanContext, imgs *[]session.Image) (string, error) {
	if c == nil || len(c.Items) == 0 {
		return "", nil
	}
	sess, err := s.session()
	if err != nil {
		return "", err
	}
	if *imgs, err = s.attachedImages(contextEntries(c.Items)); err != nil {
		return "", err
	}
	text, err := sess.ContextText(ctx, contextEntries(c.Items), (*approver)(s).Approve)
	if err != nil {
		return "", badParam("context.items", "%v", err)
	}
	return text, nil
}
