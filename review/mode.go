package review

import "fmt"

// Mode is when file changes are shown to the user (protocol RunOptions
// review).
type Mode string

const (
	Before Mode = "before" // held until accepted
	After  Mode = "after"  // applied at once, offered for review
	None   Mode = "none"   // applied silently
)

// ParseMode is the one reader of a review mode's name, for every front
// end and the engine's RunOptions decoder: "" (the default, decided by
// session.StartRun), before, after or none. The error is what follows the
// field's name ("--review", "options.review") in each front end's words.
func ParseMode(name string) (Mode, error) {
	switch m := Mode(name); m {
	case "", Before, After, None:
		return m, nil
	}
	return "", fmt.Errorf("must be before, after or none, not %q", name)
}

// HunkRejection is a rejected hunk and the user's reason.
type HunkRejection struct {
	Path   string `json:"path"`
	HunkID string `json:"hunkId"`
	Reason string `json:"reason,omitempty"`
}

// Outcome is what the user decided on a change set.
type Outcome struct {
	Applied  []string        `json:"applied"` // hunk ids (or paths for whole-file ops)
	Rejected []HunkRejection `json:"rejected,omitempty"`
	// Conflicts lists files left alone because they changed meanwhile.
	Conflicts []string `json:"conflicts,omitempty"`
	// Aborted is set when the user chose to stop the whole run (CLI "q").
	Aborted bool `json:"aborted,omitempty"`
}
