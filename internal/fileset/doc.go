// Package fileset lists the files of a workspace exactly as git would
// consider them (`git ls-files --cached --others --exclude-standard`):
// tracked files from the user's index (read-only), plus untracked files that
// no .gitignore at any level, the repository's info/exclude, or the global
// core.excludesFile ignores. It walks large trees in parallel and, in the
// daemon, watches them with fsnotify to keep a dirty set.
//
// It never writes anything inside the workspace or its .git.
package fileset
