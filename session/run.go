package session

import (
	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/review"
)

// ParseReview reads a review mode's name given in field (a flag such as
// "--review", an option such as "initializationOptions.review"): "" (the
// default), before, after or none. A bad name is a *FieldError naming the
// field and the allowed values, the same words in every front end.
func ParseReview(field, name string) (engine.ReviewMode, error) {
	m, err := review.ParseMode(name)
	if err != nil {
		return "", &FieldError{Field: field, Message: err.Error()}
	}
	return m, nil
}
