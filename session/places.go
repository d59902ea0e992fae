package session

import (
	"path/filepath"

	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

// broadRemedy is the one remedy of a workspace root that is too broad,
// whichever front end the user stands in: each way to confirm it is named.
const broadRemedy = "Open the project's own folder, or confirm this one: " +
	"--allow-broad-workspace (agentd run, chat, plan, map, acp...), or allowBroadWorkspace in the editor's agentd settings " +
	"(VS Code: agentd.allowBroadWorkspace; Neovim: allow_broad_workspace = true; initializationOptions.allowBroadWorkspace)"

// PlaceError is a workspace root or a state dir where agentd may not work
// or write. Field is "root" or "stateDir", for the front end to name its
// own flag or field; the text is the same in every front end.
type PlaceError struct {
	Field string
	Err   error
}

func (e *PlaceError) Error() string { return e.Err.Error() }
func (e *PlaceError) Unwrap() error { return e.Err }

// CheckPlaces applies the rules on where agentd works and writes, the
// only caller of both (issue 24): a root that is the filesystem's root,
// the home directory or a folder holding it is refused unless allowBroad
// (workspace.CheckRoot); a state dir ("" = the default) inside the
// workspace or a .git directory is refused (gitops.CheckStateDir). Every
// front end calls it, through Open or before it asks anything else,
// before anything is opened or written and before any model is called.
func CheckPlaces(root, stateDir string, allowBroad bool) error {
	if err := workspace.CheckRoot(root, allowBroad, broadRemedy); err != nil {
		return &PlaceError{Field: "root", Err: err}
	}
	return checkStateDir(stateDir, root)
}

// checkStateDir is CheckPlaces' state-dir rule alone, for root as given
// (made absolute, links resolved).
func checkStateDir(stateDir, root string) error {
	if root != "" {
		if abs, err := filepath.Abs(root); err == nil {
			root = abs
		}
		if r, err := filepath.EvalSymlinks(root); err == nil {
			root = r
		}
	}
	if err := gitops.CheckStateDir(stateDir, root); err != nil {
		return &PlaceError{Field: "stateDir", Err: err}
	}
	return nil
}
