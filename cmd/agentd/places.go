package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

// allowBroadFlag confirms a workspace of / or the home directory.
const allowBroadFlag = "--allow-broad-workspace"

func addAllowBroadFlag(fs *pflag.FlagSet, allow *bool) {
	fs.BoolVar(allow, allowBroadFlag[2:], false, "allow a workspace that is / or your home directory (or holds it)")
}

// checkPlaces applies the core's rules on where agentd works and writes
// (workspace.CheckRoot, gitops.CheckStateDir) before anything is written;
// on failure it prints why (as agentd NAME) and returns false.
func checkPlaces(name, dir, stateDir string, allowBroad bool, stderr io.Writer) bool {
	if err := workspace.CheckRoot(dir, allowBroad, "Open the project's own folder (--workspace DIR), or confirm with "+allowBroadFlag); err != nil {
		fmt.Fprintf(stderr, "agentd %s: %v\n", name, err)
		return false
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		root = dir
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if err := gitops.CheckStateDir(stateDir, root); err != nil {
		fmt.Fprintf(stderr, "agentd %s: %v\n", name, err)
		return false
	}
	return true
}
