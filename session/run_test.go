package session

import (
	"errors"
	"strings"
	"testing"
)

// A review mode's name is read by one parser: a bad one names the field
// it came in and the allowed values, whichever front end gave it.
func TestParseReview(t *testing.T) {
	for _, name := range []string{"", "before", "after", "none"} {
		if m, err := ParseReview("--review", name); err != nil || string(m) != name {
			t.Errorf("ParseReview(%q) = %q, %v", name, m, err)
		}
	}
	_, err := ParseReview("options.review", "later")
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "options.review" || !strings.Contains(fe.Message, "before, after or none") || !strings.Contains(fe.Message, `"later"`) {
		t.Fatalf("ParseReview(later) = %v, want a FieldError naming options.review, the allowed modes and the bad name", err)
	}
}
