package fileset

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
)

// rules is everything that decides membership for one walk or query,
// loaded once at its start.
type rules struct {
	top     string      // absolute directory that repository-relative paths start from
	repo    *repository // nil without a repository
	index   *gitIndex   // never nil (empty without a repository)
	exclude *patternList
	global  *patternList
}

// dirNode is the chain of per-directory ignore files from a directory up
// to the top, deepest first, as git's exclude stack.
type dirNode struct {
	parent *dirNode
	list   *patternList // nil when the directory has no .gitignore
}

// excluded reports whether the repository-relative path is excluded by the
// ignore files in n's chain, info/exclude or the global excludes file,
// given that no parent directory is excluded (the walk never descends into
// excluded directories; Ignored checks parents first).
func (r *rules) excluded(n *dirNode, path string, isDir bool) bool {
	base := path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		base = path[i+1:]
	}
	for ; n != nil; n = n.parent {
		if n.list == nil {
			continue
		}
		if p := n.list.match(path, base, isDir); p != nil {
			return p.flags&patNegative == 0
		}
	}
	for _, pl := range [...]*patternList{r.exclude, r.global} {
		if pl == nil {
			continue
		}
		if p := pl.match(path, base, isDir); p != nil {
			return p.flags&patNegative == 0
		}
	}
	return false
}

// loadRules reads (or revalidates) the index, info/exclude, the config
// files and the global excludes file.
func (s *Set) loadRules() (*rules, error) {
	r := &rules{top: s.root, repo: s.repo}
	commonDir := ""
	hashSize := 20
	if s.repo != nil {
		r.top = s.repo.workTree
		commonDir = s.repo.commonDir
	}
	excludesFile := ""
	for _, f := range configFiles(commonDir, s.env) {
		v, err := s.cache.load(f, true, func(b []byte) (any, error) { return parseGitConfig(b), nil })
		if err != nil || v == nil {
			continue // git ignores missing files; unreadable ones are not ours to fix
		}
		for _, e := range expandIncludes(f, v.([]configEntry), &s.cache, s.env, 0) {
			switch e.key {
			case "core.excludesfile":
				excludesFile = e.value
			case "extensions.objectformat":
				if strings.EqualFold(e.value, "sha256") {
					hashSize = 32
				}
			}
		}
	}
	if excludesFile == "" {
		if x := xdgConfigHome(s.env); x != "" {
			excludesFile = filepath.Join(x, "git", "ignore")
		}
	} else {
		excludesFile = expandUserPath(excludesFile, s.env)
		if !filepath.IsAbs(excludesFile) {
			excludesFile = filepath.Join(r.top, excludesFile)
		}
	}
	var err error
	if excludesFile != "" {
		if r.global, err = s.loadPatterns(excludesFile, "", true); err != nil {
			return nil, err
		}
	}
	if s.repo == nil {
		r.index = emptyIndex()
		return r, nil
	}
	if r.exclude, err = s.loadPatterns(filepath.Join(commonDir, "info", "exclude"), "", true); err != nil {
		return nil, err
	}
	v, err := s.cache.load(filepath.Join(s.repo.gitDir, "index"), true, func(b []byte) (any, error) {
		return parseIndex(b, hashSize, s.readSharedIndex)
	})
	if err != nil {
		return nil, err
	}
	if v == nil {
		r.index = emptyIndex()
	} else {
		r.index = v.(*gitIndex)
	}
	return r, nil
}

func (s *Set) readSharedIndex(id string) ([]byte, error) {
	return os.ReadFile(filepath.Join(s.repo.gitDir, "sharedindex."+id))
}

func emptyIndex() *gitIndex {
	return &gitIndex{fp: sha256.Sum256(nil), gitlink: map[string]struct{}{}, tracked: map[string]struct{}{}}
}

// loadPatterns returns the parsed ignore file at abs (nil if none); base
// is the repository-relative directory it applies to ("" or "a/b/").
func (s *Set) loadPatterns(abs, base string, follow bool) (*patternList, error) {
	v, err := s.cache.load(abs, follow, func(b []byte) (any, error) { return parsePatterns(b, base), nil })
	if err != nil || v == nil {
		return nil, err
	}
	pl := v.(*patternList)
	if len(pl.patterns) == 0 {
		return nil, nil
	}
	return pl, nil
}

// dirRules returns the node for the repository-relative directory dir
// (no trailing slash, "" for the top) given its parent's node.
func (s *Set) dirRules(r *rules, parent *dirNode, dir string) (*dirNode, error) {
	abs := r.top
	base := ""
	if dir != "" {
		abs = filepath.Join(r.top, filepath.FromSlash(dir))
		base = dir + "/"
	}
	pl, err := s.loadPatterns(filepath.Join(abs, ".gitignore"), base, false)
	if err != nil {
		return nil, err
	}
	if pl == nil {
		return parent, nil
	}
	return &dirNode{parent: parent, list: pl}, nil
}

// chain builds the ignore chain from the top down to the repository-relative
// directory dir and reports whether dir or one of its parents is excluded.
func (s *Set) chain(r *rules, dir string) (*dirNode, bool, error) {
	n, err := s.dirRules(r, nil, "")
	if err != nil {
		return nil, false, err
	}
	if dir == "" {
		return n, false, nil
	}
	parts := strings.Split(dir, "/")
	for i := range parts {
		d := strings.Join(parts[:i+1], "/")
		if r.excluded(n, d, true) {
			return n, true, nil
		}
		if n, err = s.dirRules(r, n, d); err != nil {
			return nil, false, err
		}
	}
	return n, false, nil
}

// expandIncludes inlines include.path files (relative to the including
// file), in order, as git does. includeIf is not supported.
func expandIncludes(file string, entries []configEntry, c *fileCache, env envFunc, depth int) []configEntry {
	has := false
	for _, e := range entries {
		if e.key == "include.path" {
			has = true
			break
		}
	}
	if !has || depth > 10 {
		return entries
	}
	var out []configEntry
	for _, e := range entries {
		if e.key != "include.path" {
			out = append(out, e)
			continue
		}
		p := expandUserPath(e.value, env)
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(file), p)
		}
		v, err := c.load(p, true, func(b []byte) (any, error) { return parseGitConfig(b), nil })
		if err != nil || v == nil {
			continue
		}
		out = append(out, expandIncludes(p, v.([]configEntry), c, env, depth+1)...)
	}
	return out
}

func (s *Set) ignored(rel string, isDir bool) (bool, error) {
	rel, err := cleanRel(rel)
	if err != nil {
		return true, nil
	}
	if rel == "" {
		return false, nil
	}
	if hasGitComponent(rel) {
		return true, nil
	}
	r, err := s.loadRules()
	if err != nil {
		return false, err
	}
	p := rel
	if s.repo != nil {
		p = s.repo.prefix + rel
	}
	if _, ok := r.index.tracked[p]; ok {
		return false, nil
	}
	if _, ok := r.index.gitlink[p]; ok {
		return false, nil
	}
	if isDir && r.index.hasUnder(p) {
		return false, nil
	}
	dir := ""
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		dir = p[:i]
	}
	n, excluded, err := s.chain(r, dir)
	if err != nil || excluded {
		return excluded, err
	}
	return r.excluded(n, p, isDir), nil
}

// IgnoredBy is Ignored with the workspace's .gitignore files as read
// returns them (read gets a workspace-relative slash path such as
// "sub/.gitignore" and returns nil when there is none), for instance a
// snapshot's; the index, info/exclude, the global excludes file and the
// ignore files above the workspace are the current ones.
func (s *Set) IgnoredBy(rel string, isDir bool, read func(string) []byte) bool {
	rel, err := cleanRel(rel)
	if err != nil || hasGitComponent(rel) {
		return true
	}
	if rel == "" {
		return false
	}
	r, err := s.loadRules()
	if err != nil {
		s.logger().Warn("fileset: cannot evaluate ignore rules", "path", rel, "err", err)
		return false
	}
	prefix := ""
	if s.repo != nil {
		prefix = s.repo.prefix
	}
	p := prefix + rel
	if _, ok := r.index.tracked[p]; ok {
		return false
	}
	if _, ok := r.index.gitlink[p]; ok {
		return false
	}
	if isDir && r.index.hasUnder(p) {
		return false
	}
	rules := func(parent *dirNode, dir string) *dirNode {
		if prefix != "" && len(dir)+1 < len(prefix) { // above the workspace: from disk
			n, err := s.dirRules(r, parent, dir)
			if err != nil {
				return parent
			}
			return n
		}
		wsDir := strings.TrimPrefix(strings.TrimPrefix(dir, strings.TrimSuffix(prefix, "/")), "/")
		name := ".gitignore"
		if wsDir != "" {
			name = wsDir + "/.gitignore"
		}
		data := read(name)
		if data == nil {
			return parent
		}
		base := ""
		if dir != "" {
			base = dir + "/"
		}
		return &dirNode{parent: parent, list: parsePatterns(data, base)}
	}
	n := rules(nil, "")
	parts := strings.Split(p, "/")
	for i := range parts[:len(parts)-1] {
		d := strings.Join(parts[:i+1], "/")
		if r.excluded(n, d, true) {
			return true
		}
		n = rules(n, d)
	}
	return r.excluded(n, p, isDir)
}
