package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/workspace"
)

// editHeader opens the patch "e" shows in $EDITOR.
const editHeader = `# agentd: change %s from step %s.
# Delete a file's section or a hunk to leave it out; edit the + lines to
# change what is written (keep the - and context lines as they are).
# Lines starting with # are ignored. Save and quit to apply what is left;
# empty the file to apply nothing.
`

// editor is the user's editor command: $VISUAL, $EDITOR, else vi.
func editor() string {
	for _, v := range []string{"VISUAL", "EDITOR"} {
		if e := strings.TrimSpace(os.Getenv(v)); e != "" {
			return e
		}
	}
	return "vi"
}

// edit opens the change set in $EDITOR as a patch and applies what the
// user kept, through the review core: files or hunks deleted from the
// patch are left out (rejected), edited lines are written as edited.
func (t *terminal) edit(ctx context.Context, cs *workspace.ChangeSet) (*engine.ReviewOutcome, error) {
	var b strings.Builder
	fmt.Fprintf(&b, editHeader, cs.ID, cs.StepID)
	for _, f := range cs.Files {
		if f.Diff == nil || f.Binary {
			continue
		}
		b.WriteString(diff.Unified(f.Diff))
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
	}
	dir, err := os.MkdirTemp("", "agentd-edit-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "change-"+cs.ID+".patch")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return nil, err
	}
	ed := editor()
	t.con.Hold(func() {
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", ed+` "$1"`, "agentd", path)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		err = cmd.Run()
	})
	if err != nil {
		return nil, fmt.Errorf("the editor %q failed: %v (set $EDITOR to the editor you use)", ed, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var kept strings.Builder
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if !strings.HasPrefix(l, "#") {
			kept.WriteString(l)
		}
	}
	// The review decides: the patch is recounted as git add -p does, or
	// refused with the line and why; every file is recorded with what was
	// decided on it.
	set, decisions, err := review.Edited(cs, kept.String())
	if err != nil {
		return nil, fmt.Errorf("%v; nothing was applied: answer e to edit again, or s to choose hunks", err)
	}
	return t.resolve(ctx, review.New(set, engine.ReviewBefore), decisions, review.EditReason)
}
