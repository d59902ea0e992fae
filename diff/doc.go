// Package diff computes line diffs between two texts and turns them into
// hunks with stable ids, unified diffs that `git apply` accepts, per-hunk
// application and reversal, three-way merges and word-level diffs for
// display. It hides go-diff and the details of the unified format.
//
// Diffs are always minimal (fewest deleted plus inserted lines). Compute
// trims the common prefix and suffix, drops every line that occurs on only
// one side (it cannot be part of a longest common subsequence; git's xdiff
// does the same), runs go-diff's Myers algorithm without a time limit on
// what is left, and maps the matches back. Lines keep their terminators, so
// "a\n", "a\r\n" and a final "a" without newline are different lines, as
// they are for git.
//
// It imports nothing else of agentd.
package diff
