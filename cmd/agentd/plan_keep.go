package main

import (
	"fmt"
	"io"
	"time"

	"github.com/agentd/agentd/session"
)

// keepInvalidPlan keeps the plan the model could not repair (err wraps
// it; session.KeepInvalidPlan says where) and says where and how to go
// on: fix the problems printed above it, validate, run. The plan is the
// user's to fix, not thrown away.
func keepInvalidPlan(cmd, request, root, stateDir string, err error, stderr io.Writer) {
	path, err := session.KeepInvalidPlan(stateDir, root, requestPlanID(request, time.Now()), err)
	if err != nil {
		fmt.Fprintf(stderr, "agentd %s: the model's plan could not be kept: %v\n", cmd, err)
		return
	}
	if path == "" {
		return
	}
	fmt.Fprintf(stderr, "agentd %s: the model's plan is kept in %s: fix the problems above in it, check it with %s and run it with %s\n",
		cmd, shq(path), hintCommand("", "", "validate", path), hintCommand(root, stateDir, "run", path))
}
