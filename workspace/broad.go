package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrBroadRoot is wrapped by CheckRoot's error for a workspace root that
// is the filesystem's root, the home directory or a folder above it.
var ErrBroadRoot = errors.New("too broad a workspace")

// CheckRoot refuses, unless allowBroad, a workspace root that is the
// filesystem's root (or a volume's), the user's home directory, or a
// folder that holds it: agentd would walk and snapshot everything below
// before the first step, and a plan's paths would reach every project.
// remedy is the error's last sentence, in the front end's own words: how
// to open another folder and how to confirm this one there (a flag, an
// editor setting). Every front end calls it before it opens or writes
// anything.
func CheckRoot(root string, allowBroad bool, remedy string) error {
	if allowBroad || root == "" {
		return nil
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil // Open reports it
	}
	real := abs
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		real = r
	}
	what := ""
	if filepath.Dir(real) == real {
		what = "the root of the filesystem"
	} else if home, err := os.UserHomeDir(); err == nil && home != "" {
		h := home
		if r, err := filepath.EvalSymlinks(home); err == nil {
			h = r
		}
		switch {
		case real == h:
			what = "your home directory"
		case within(real, h):
			what = "a folder that holds your home directory"
		}
	}
	if what == "" {
		return nil
	}
	return fmt.Errorf("the workspace %s is %s: %w; agentd would walk and snapshot everything below it, and a plan could change any project in it. %s", abs, what, ErrBroadRoot, remedy)
}

// within says whether p lies below dir (not dir itself).
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !filepath.IsAbs(rel) && !startsDotDot(rel)
}

func startsDotDot(rel string) bool {
	return len(rel) >= 3 && rel[:2] == ".." && os.IsPathSeparator(rel[2])
}
