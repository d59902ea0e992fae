// Package review is the one implementation of reviewing a change set hunk
// by hunk, for every front end (the editor server, the terminal, ACP).
//
// A Set holds a workspace.ChangeSet under review: each hunk (or each file
// that is decided as a whole: create, delete, move, binary) has a status,
// pending, accepted, rejected or stale. Book.Resolve accepts and rejects;
// in `before` mode accepting writes the hunk (rebased three-way onto the
// file as it is now, or marked stale when that does not merge), in `after`
// mode the change is on disk already and rejecting takes it out again.
// Rejecting an accepted hunk reverts it; accepting a rejected hunk undoes
// the rejection and puts it back. Book.Rebase moves the pending hunks of
// `before` sets onto the text the user typed, or marks them stale; a
// user's keystroke is never lost. Files are written through a
// workspace.FileWriter, so an editor front end can route open buffers
// through the editor.
package review
