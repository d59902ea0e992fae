package gitops

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// StateDirError says why a state dir cannot be used for a workspace.
type StateDirError struct {
	StateDir string // as given (or the default)
	Root     string // the workspace
	Reason   string
	Instead  string // a state dir that can be used
}

func (e *StateDirError) Error() string {
	return fmt.Sprintf("the state dir %s %s; agentd writes nothing there: put the state dir outside the workspace and outside any .git directory (--state-dir, AGENTD_STATE_DIR, or stateDir in the editor's settings), for instance %s",
		e.StateDir, e.Reason, e.Instead)
}

// CheckStateDir refuses a state dir ("" = DefaultStateDir()) that is
// inside the workspace root (its snapshots would hold the store, and a
// restore could delete the store's own files) or inside a .git directory
// (agentd never writes in the user's repository). Symbolic links are
// resolved as far as the paths exist. Every front end calls it before it
// writes anything (journal, snapshots, caches), whatever set the state dir:
// a flag, the environment or the editor's initializationOptions.
func CheckStateDir(stateDir, root string) error {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	dir, err := filepath.Abs(stateDir)
	if err != nil {
		return fmt.Errorf("the state dir %s: %w", stateDir, err)
	}
	dir = realPathPrefix(dir)
	instead := suggestStateDir(root)
	if root != "" {
		r, err := filepath.Abs(root)
		if err == nil {
			r = realPathPrefix(r)
			if isInside(r, dir) {
				return &StateDirError{StateDir: stateDir, Root: root, Reason: "is inside the workspace " + root + " (its snapshots would hold the store, and an undo could delete it)", Instead: instead}
			}
		}
	}
	for _, part := range strings.Split(filepath.ToSlash(dir), "/") {
		if strings.EqualFold(part, ".git") {
			return &StateDirError{StateDir: stateDir, Root: root, Reason: "is inside a .git directory, which belongs to git and the user", Instead: instead}
		}
	}
	return nil
}

// suggestStateDir is the default state dir if it is fit for root, else
// the usual place under the home directory.
func suggestStateDir(root string) string {
	home, err := os.UserHomeDir()
	fallback := "~/.local/state/agentd"
	if err == nil {
		fallback = filepath.Join(home, ".local", "state", "agentd")
	}
	for _, d := range []string{fallback, filepath.Join(os.TempDir(), "agentd-state")} {
		if root == "" || !isInside(realPathPrefix(root), realPathPrefix(d)) {
			return d
		}
	}
	return fallback
}

// realPathPrefix resolves the symbolic links of p's longest existing
// prefix and appends the rest.
func realPathPrefix(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}
