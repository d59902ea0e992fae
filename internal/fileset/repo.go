package fileset

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// repository is the user's git repository that contains the workspace.
type repository struct {
	workTree  string // absolute top of the working tree
	gitDir    string // absolute; holds index (and HEAD)
	commonDir string // absolute; holds config and info/exclude
	prefix    string // the workspace relative to workTree, "" or "a/b/"
}

// findRepository looks for the repository that contains root the way git
// discovers one: a `.git` directory or a `.git` file ("gitdir: ...") in
// root or one of its parents. It returns nil if there is none.
func findRepository(root string) (*repository, error) {
	dir := root
	for {
		gitDir, err := gitDirAt(dir)
		if err != nil {
			return nil, err
		}
		if gitDir != "" {
			r := &repository{workTree: dir, gitDir: gitDir, commonDir: gitDir}
			if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
				c := strings.TrimSpace(string(b))
				if !filepath.IsAbs(c) {
					c = filepath.Join(gitDir, c)
				}
				r.commonDir = filepath.Clean(c)
			}
			if dir != root {
				rel, err := filepath.Rel(dir, root)
				if err != nil {
					return nil, fmt.Errorf("locate workspace %s in repository %s: %w", root, dir, err)
				}
				r.prefix = filepath.ToSlash(rel) + "/"
			}
			return r, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil, nil
		}
		dir = parent
	}
}

// gitDirAt returns the git directory that dir/.git names, or "" if dir/.git
// is not a repository.
func gitDirAt(dir string) (string, error) {
	dotGit := filepath.Join(dir, ".git")
	fi, err := os.Stat(dotGit)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			return "", nil
		}
		return "", nil
	}
	if fi.IsDir() {
		if isGitDir(dotGit) {
			return dotGit, nil
		}
		return "", nil
	}
	b, err := os.ReadFile(dotGit)
	if err != nil {
		return "", nil
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	target, ok := strings.CutPrefix(strings.TrimSpace(string(line)), "gitdir:")
	if !ok {
		return "", nil
	}
	target = strings.TrimSpace(target)
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	target = filepath.Clean(target)
	if !isGitDir(target) {
		return "", nil
	}
	return target, nil
}

// isGitDir mirrors git's is_git_directory: HEAD, objects/ and refs/ (the
// latter two possibly in the common dir of a linked worktree).
func isGitDir(d string) bool {
	if _, err := os.Lstat(filepath.Join(d, "HEAD")); err != nil {
		return false
	}
	common := d
	if b, err := os.ReadFile(filepath.Join(d, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(d, c)
		}
		common = c
	}
	for _, sub := range []string{"objects", "refs"} {
		fi, err := os.Stat(filepath.Join(common, sub))
		if err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}
