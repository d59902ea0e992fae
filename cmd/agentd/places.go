package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/agentd/agentd/session"
)

// allowBroadFlag confirms a workspace of / or the home directory.
const allowBroadFlag = "--allow-broad-workspace"

func addAllowBroadFlag(fs *pflag.FlagSet, allow *bool) {
	fs.BoolVar(allow, allowBroadFlag[2:], false, "allow a workspace that is / or your home directory (or holds it)")
}

// checkPlaces applies the core's rules on where agentd works and writes
// (session.CheckPlaces) before anything is written or asked; on failure it
// prints why (as agentd NAME) and returns false.
func checkPlaces(name, dir, stateDir string, allowBroad bool, stderr io.Writer) bool {
	if err := session.CheckPlaces(dir, stateDir, allowBroad); err != nil {
		fmt.Fprintf(stderr, "agentd %s: %v\n", name, err)
		return false
	}
	return true
}
