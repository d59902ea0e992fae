package acp

// Every call from the ACP front end into a rule the user relies on is in
// this file: the approval policy and the remembered rules (engine), the
// journal of runs, plans and sessions (engine.Journal), the hunk review
// model (review) and restore protection (gitops). Each is the same core
// the editor server and the terminal call; nothing here decides anything
// itself.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/review"
	agentsession "github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// ---- Approvals -------------------------------------------------------

// A run's policy is composed by the session (session.RunRequest): "ask"
// runs under the workspace's policy, "auto" under AllowAllPolicy. The
// engine decides every call.

// Remembered "always" answers are the engine's: with Config.Journal set
// (openJournal), a question the policy asks is first answered from the
// workspace's one rule store (approval.ApprovalRules, shared with the
// editor server and `agentd run`, listed and revoked with `agentd
// rules`), and an "always" answer the Approver returns is added to it.

// ---- Review ----------------------------------------------------------

// reviewChangeSet decides a whole change set held in review mode
// "before" with the one hunk review model (package review), the same the
// editor server and the terminal use: accepting writes each hunk through
// writer (the client's file system, or the disk when nil), rebased onto
// the file as it is now or reported as a conflict; rejecting writes
// nothing. The outcome is what the engine hands to the step.
func reviewChangeSet(ctx context.Context, book *review.Book, ws *workspace.Workspace, writer workspace.FileWriter,
	cs *workspace.ChangeSet, accept bool, reason string) (*engine.ReviewOutcome, error) {
	set := review.New(cs, engine.ReviewBefore)
	book.Put(set)
	action := review.Reject
	if accept {
		action = review.Accept
	}
	if _, err := book.Resolve(ctx, review.Files{WS: ws, Writer: writer}, set, []review.Decision{{Action: action}}, reason); err != nil {
		return nil, err
	}
	return set.Outcome(), nil
}

// ---- Snapshots and restore -------------------------------------------

// restoreSnapshot restores the workspace to snapshot id through the
// shadow repository, which takes a safety snapshot first (the undo).
// Since is left empty: gitops picks the protection base itself (the state
// the agent last left the workspace in), so files someone else changed
// since are left alone and reported as conflicts; when it cannot tell,
// the restore fails with session.ErrNoProtectionBase instead of
// overwriting, as in every front end.
// With overwrite, files changed by someone else are restored too.
// Open buffers follow the same rule as in the editors
// (session.RestoreAroundBuffers): a file whose buffer holds the user's
// unsaved edits is left alone and reported. The session records the
// restore in the journal, so /undo-restore (or any front end) undoes it.
func restoreSnapshot(ctx context.Context, sess *agentsession.Session, id string, overwrite bool) (*agentsession.RestoreResult, error) {
	store, err := sess.Store()
	if err != nil {
		return nil, err
	}
	snap, err := store.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("snapshot %q: %w (list them with /snapshots)", id, err)
	}
	res, err := sess.Restore(ctx, snap.ID, agentsession.RestoreOptions{Overwrite: overwrite})
	if errors.Is(err, agentsession.ErrNoProtectionBase) {
		return nil, fmt.Errorf("%w; to restore anyway, overwriting what anyone changed since: /restore %s --overwrite", err, id)
	}
	return res, err
}

// ---- Journal ---------------------------------------------------------

// The workspace's journal comes from the session (package session), the
// one every front end writes: the engine records each run's state in it
// and keeps the approval rules there; an ACP session is one more record
// of it.

// sessionRecord names a session's record in the journal.
func sessionRecord(id string) string { return "acp/sessions/" + id + ".json" }

// errNotFound is a missing saved session.
var errNotFound = fs.ErrNotExist

func isNotFound(err error) bool { return errors.Is(err, errNotFound) }
