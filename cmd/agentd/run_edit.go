package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/diff"
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

// edit opens the pending units of set that path and hunkID select (as in
// review.Set.Select; "" "" is all of them) in $EDITOR as a patch, and
// decides them by what the user kept, through the review core
// (review.Book.Edit) in every review mode: files or hunks deleted from the
// patch are left out (rejected, or taken out of a file that holds them),
// edited lines are written as edited, merged onto the file as it is then.
// A patch that cannot be used is a *review.EditError: nothing is decided.
func (t *terminal) edit(ctx context.Context, set *review.Set, path, hunkID string) error {
	var cs *workspace.ChangeSet
	t.book.Read(func() { cs = set.PendingChangeOf(path, hunkID) })
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
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "change-"+cs.ID+".patch")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		return err
	}
	ed := editor()
	t.con.Hold(func() {
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", ed+` "$1"`, "agentd", file)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		err = cmd.Run()
	})
	if err != nil {
		return fmt.Errorf("the editor %q failed: %v (set $EDITOR to the editor you use); nothing was decided", ed, err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
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
	res, err := t.book.Edit(ctx, review.Files{WS: t.ws}, set, path, hunkID, kept.String(), review.EditReason)
	var ee *review.EditError
	if errors.As(err, &ee) {
		return &review.EditError{Line: ee.Line, Reason: ee.Reason + "; nothing was applied: answer e to edit again, or s to choose hunks"}
	}
	if err != nil {
		return err
	}
	for _, c := range res.Conflicts {
		t.con.Println(t.con.paint("31", "conflict: ") + c.Path + ": " + c.Message)
	}
	return nil
}
