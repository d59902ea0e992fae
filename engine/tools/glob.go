package tools

import (
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// globMatcher matches workspace-relative slash paths against a glob the way
// ripgrep's -g and .gitignore do: a pattern without a slash matches the file
// name at any depth ("*.go"), a pattern with one matches the whole path from
// the root ("cmd/**/*.go"). "**" crosses directories; "{a,b}" alternates.
type globMatcher struct {
	pattern  string
	baseOnly bool
	// dir is the directory the pattern is confined to ("" for all), so the
	// walk need not visit the rest of the tree.
	dir string
}

func newGlobMatcher(tool, glob string) (*globMatcher, error) {
	g := strings.TrimSpace(glob)
	g = strings.TrimPrefix(g, "./")
	g = strings.TrimPrefix(g, "/")
	if g == "" {
		return nil, errorf(CodeInvalidArgs, "%s: glob is empty; use for example \"**/*.go\"", tool)
	}
	if !doublestar.ValidatePattern(g) {
		return nil, errorf(CodeInvalidArgs, "%s: glob %q is malformed (unbalanced [ ] or { }); use for example \"src/**/*.ts\"", tool, glob)
	}
	m := &globMatcher{pattern: g}
	if !strings.Contains(g, "/") {
		m.baseOnly = true
		return m, nil
	}
	if base, _ := doublestar.SplitPattern(g); base != "." && base != "" {
		m.dir = base
	}
	return m, nil
}

func (m *globMatcher) match(rel string) bool {
	if m.baseOnly {
		ok, _ := doublestar.Match(m.pattern, path.Base(rel))
		return ok
	}
	ok, _ := doublestar.Match(m.pattern, rel)
	return ok
}
