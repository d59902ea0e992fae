// Package diff computes line diffs between two texts and turns them into
// hunks with stable ids, unified diffs that `git apply` accepts, per-hunk
// application and reversal, three-way merges and word-level diffs for
// display. It hides go-diff and the details of the unified format.
//
// It imports nothing else of agentd.
package diff
