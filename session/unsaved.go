package session

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentd/agentd/workspace"
)

// What the editor shows is what is on disk (issue 35): the agent's edits
// that reach an open buffer (workspace/applyEdit) are on disk only once the
// buffer is saved. A change applied at once (review after or none) is saved
// at once (engine.BufferSaver); an accepted change (review before) stays in
// the buffer, as the user's own typing would, until the user saves it. A
// run that ends with such changes still unsaved says so, naming the files
// (UnsavedNote), so its status never claims what the disk does not hold.

// UnsavedAgentFiles are the relative paths of the open buffers of ws that
// hold the agent's edits not saved since (whether or not the user also
// typed in them), sorted.
func UnsavedAgentFiles(ws *workspace.Workspace) []string {
	if ws == nil {
		return nil
	}
	var out []string
	for _, b := range ws.Buffers() {
		if b.AgentUnsaved {
			out = append(out, b.Path)
		}
	}
	slices.Sort(out)
	return out
}

// UnsavedNote is what a run's end says when paths (UnsavedAgentFiles) are
// not empty: the files and what to do; "" when there are none. Every front
// end with buffers says these words.
func UnsavedNote(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	files := fmt.Sprintf("%d files", len(paths))
	if len(paths) == 1 {
		files = "1 file"
	}
	return fmt.Sprintf("the accepted changes to %s are only in the editor, not on disk yet: %s; save them (a command, agentd review or another program reads the disk)",
		files, strings.Join(paths, ", "))
}
