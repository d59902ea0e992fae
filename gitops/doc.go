// Package gitops keeps snapshots of a workspace in a bare shadow git
// repository in the state dir, written with go-git's object storage (never
// the Worktree, never the git command line), with a persisted stat cache so
// unchanged files are never re-hashed. It restores snapshots writing only
// what differs, reports conflicts instead of overwriting other people's
// edits, prunes old runs within a quota, and never touches the user's .git.
// UserRepo runs the git tool's operations on the user's own repository.
package gitops
