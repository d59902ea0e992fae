package diff

import "errors"

// The functions below are the package's exported operations. Their bodies
// are placeholders until the package is implemented.

var errUnimplemented = errors.New("diff: not implemented yet")

// Compute returns the line diff from oldText to newText with 3 lines of
// context, or a Binary FileDiff if either side looks binary (NUL byte in the
// first 8000 bytes, as git decides). It always returns a minimal diff.
func Compute(oldPath, newPath string, oldText, newText []byte) *FileDiff {
	return &FileDiff{OldPath: oldPath, NewPath: newPath}
}

// Unified renders fd as a git-style unified diff ("diff --git a/.. b/..",
// "---/+++", "@@ -a,b +c,d @@", "\ No newline at end of file", "new file
// mode", "deleted file mode", "Binary files ... differ") that `git apply`
// accepts.
func Unified(fd *FileDiff) string { return "" }

// Parse reads a unified diff (git or plain) with one or more files.
func Parse(patch string) ([]*FileDiff, error) { return nil, errUnimplemented }

// Apply applies the given hunks (a subset of a diff computed against old, in
// any order) to old. A hunk whose old side does not match at its position is
// searched for nearby (as patch does); if it cannot be placed Apply fails
// with an error naming the hunk.
func Apply(old []byte, hunks []Hunk) ([]byte, error) { return nil, errUnimplemented }

// Revert undoes hunks that were applied to produce cur.
func Revert(cur []byte, hunks []Hunk) ([]byte, error) { return nil, errUnimplemented }

// Merge3 merges the changes base->ours and base->theirs. When both change the
// same region differently, the result keeps ours there and the region is
// reported as a conflict.
func Merge3(base, ours, theirs []byte) (merged []byte, conflicts []Conflict) {
	return ours, nil
}

// Words returns the word-level differences between an old and a new line.
func Words(oldLine, newLine string) []Span { return nil }

// IsBinary reports whether data looks binary the way git decides.
func IsBinary(data []byte) bool { return false }
