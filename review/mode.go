package review

// Mode is when file changes are shown to the user (protocol RunOptions
// review).
type Mode string

const (
	Before Mode = "before" // held until accepted
	After  Mode = "after"  // applied at once, offered for review
	None   Mode = "none"   // applied silently
)

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
