// Package fileset lists the files of a workspace exactly as git would
// consider them (`git ls-files --cached --others --exclude-standard`,
// restricted to files that exist on disk): tracked files from the user's
// index (read-only), plus untracked files that no .gitignore at any level,
// the repository's info/exclude, or the global core.excludesFile ignores.
// It walks large trees in parallel and, in the daemon, watches them with
// fsnotify to keep a dirty set.
//
// The ignore matcher is a port of git's dir.c and wildmatch.c rather than a
// glob library, because small differences (how "**" binds, a negation that
// cannot re-include a file below an excluded directory, escaped trailing
// spaces, which pattern list wins) change which files a snapshot holds. It
// is tested against the git CLI on generated trees.
//
// Deliberate differences from git: nested repositories and submodules are
// walked into (their working files are listed as ordinary files; every
// `.git` is skipped), and a workspace outside any repository still honours
// its .gitignore files and the global excludes file. Config includeIf and
// core.ignoreCase are not supported.
//
// It never writes anything inside the workspace or its .git.
package fileset
