package rpc

import (
	"github.com/agentd/agentd/session"
)

// Pasted images as context (session/context_image.go): an image item of
// context.items goes to the model as an image of the request, when the
// model in force takes images; the rule and its words are the session's
// (session.ModelSwitch.CheckImages), this is only its wire.

// ImageChecker is a PlanMaker that says whether images may go to its
// model (cmd/agentd's adapter over session.ModelSwitch).
type ImageChecker interface {
	CheckImages(imgs []session.Image) error
}

// imageCheck is the PlanMaker's check; without a model, every image is
// refused by the same words as a plan without one.
func (s *Server) imageCheck() session.ImageCheck {
	if ic, ok := s.opts.PlanMaker.(ImageChecker); ok {
		return ic.CheckImages
	}
	return func([]session.Image) error { return errNoModel }
}

// attachedImages is the image items of items, for the request's Images;
// one the model cannot take is refused naming context.items.
func (s *Server) attachedImages(items []session.ContextEntry) ([]session.Image, error) {
	imgs, err := session.ContextImages(items, s.imageCheck())
	if err != nil {
		return nil, badParam("context.items", "%v", err)
	}
	return imgs, nil
}
