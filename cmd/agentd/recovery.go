package main

import (
	"fmt"
	"io"

	"github.com/agentd/agentd/session"
)

// sayRecovery prints, before anything else the command says, what the
// snapshot store did when it opened about a restore or an undo a crash
// interrupted (session.Recovery's words), with the way back as a command
// to paste (the hint builder's). It goes to stderr with the command's
// other notes, so that --json output stays JSON.
func sayRecovery(w io.Writer, name string, rec *session.Recovery, err error, root, stateDir string) {
	if err != nil {
		fmt.Fprintf(w, "agentd %s: warning: %v\n", name, err)
		return
	}
	if rec == nil {
		return
	}
	fmt.Fprintf(w, "agentd %s: %s\n", name, rec.Message(func(args ...string) string { return hintCommand(root, stateDir, args...) }))
}
