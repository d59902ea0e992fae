package session

import (
	"context"
	"slices"
	"strings"

	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

// Open buffers, restores and undos: the one rule, here for every front
// end (issue 33); a front end lends only its read and write of the
// editor's buffers (EditorBuffers). The agent's edits that reach a buffer
// through the editor are the agent's whoever saves them
// (workspace.BufferState), so a restore
//   - leaves alone, as a conflict, every file whose buffer holds unsaved
//     edits of the user's (on disk too: the editor would otherwise hold
//     text that no longer matches its file), and every buffer mixing the
//     agent's unsaved edits with the user's;
//   - puts the restored text back into the other open buffers of the files
//     it restored, and into buffers that hold only the agent's edits
//     (BuffersToRefresh); how a front end writes into its editor is its own.
//
// An undo (a revert, undo.go) follows the same rule: a file the undo
// would write whose buffer holds the user's unsaved edits is never
// written under, on disk or in the buffer; it is a conflict named
// "unsaved in the editor" (UnsavedUndoReason), so a plain undo changes
// nothing, and an undo that keeps or overwrites conflicts leaves that
// file as it is, named. Clean open buffers of the files it wrote are
// given the new text through the front end.

// EditorBuffers is what a front end lends the session of its editor's
// buffers. The rule (which files may be written, which buffers then show
// the new text) is the session's.
type EditorBuffers interface {
	// ReadBuffers makes the workspace know what the editor holds for
	// paths (files a restore or undo is about to write), when the front
	// end learns it only by asking (ACP's fs/read_text_file); a front end
	// told of every change (the editor server) does nothing.
	ReadBuffers(ctx context.Context, paths []string)
	// WriteBuffers gives the editor the disk's new text after a restore
	// or undo wrote: written are the files written or re-created, deleted
	// the files deleted, refresh the open buffers that must now show the
	// disk's text (BuffersToRefresh); reason says why, for the editor.
	// It returns the files whose buffer could not be given the text.
	WriteBuffers(ctx context.Context, w BufferWrite) []gitops.RestoreConflict
}

// BufferWrite is what a restore or undo wrote, for EditorBuffers.
type BufferWrite struct {
	Reason  string
	Written []string
	Deleted []string
	Refresh []workspace.BufferState
}

// UnsavedUndoReason is the conflict of a file an undo would write whose
// open buffer holds the user's unsaved edits.
const UnsavedUndoReason = "unsaved in the editor: save or discard, then undo again"

// UnsavedEditsMessage is the conflict of a buffer with the user's unsaved
// edits.
const UnsavedEditsMessage = "the file has unsaved edits in the editor; left alone (on disk too): save or undo them, then restore again"

// inScope reports whether rel is under one of paths (all when empty).
func inScope(paths []string, rel string) bool {
	if len(paths) == 0 {
		return true
	}
	for _, p := range paths {
		if p == "." || rel == p || strings.HasPrefix(rel, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

// RestoreAroundBuffers runs store.Restore without touching the files whose
// open buffers hold the user's unsaved edits. Those come back as extra
// conflicts beside the result.
func RestoreAroundBuffers(ctx context.Context, store *gitops.Store, ws *workspace.Workspace, id string, opts gitops.RestoreOptions) (*gitops.RestoreResult, []gitops.RestoreConflict, error) {
	userBufs := map[string]bool{}
	mixed := map[string]bool{} // unsaved edits of both the agent and the user
	if ws != nil {
		for _, b := range ws.Buffers() {
			if b.UserUnsaved && inScope(opts.Paths, b.Path) {
				userBufs[b.Path] = true
				mixed[b.Path] = b.AgentUnsaved
			}
		}
	}
	var extra []gitops.RestoreConflict
	if len(userBufs) > 0 {
		// Find what the restore would touch, and take the buffers with
		// the user's unsaved edits out of it.
		dry := opts
		dry.DryRun = true
		plan, err := store.Restore(ctx, id, dry)
		if err != nil {
			return nil, nil, err
		}
		var keep []string
		for _, l := range [][]string{plan.Restored, plan.Created, plan.Deleted} {
			for _, rel := range l {
				if userBufs[rel] {
					extra = append(extra, gitops.RestoreConflict{Path: rel, Message: UnsavedEditsMessage})
				} else {
					keep = append(keep, rel)
				}
			}
		}
		for _, c := range plan.Conflicts {
			if !userBufs[c.Path] {
				keep = append(keep, c.Path)
			}
		}
		// A buffer that mixes the agent's unsaved edits with the user's
		// is a conflict even when its file on disk needs no change: the
		// agent's edits cannot be taken out of it without the user's.
		for rel, both := range mixed {
			if both && !slices.ContainsFunc(extra, func(c gitops.RestoreConflict) bool { return c.Path == rel }) {
				extra = append(extra, gitops.RestoreConflict{Path: rel, Message: UnsavedEditsMessage})
			}
		}
		slices.SortFunc(extra, func(a, b gitops.RestoreConflict) int { return strings.Compare(a.Path, b.Path) })
		if len(extra) > 0 {
			if len(keep) == 0 || opts.DryRun {
				return filterRestore(plan, userBufs), extra, nil
			}
			opts.Paths = keep
		}
	}
	res, err := store.Restore(ctx, id, opts)
	return res, extra, err
}

// filterRestore drops paths from a dry run's lists.
func filterRestore(r *gitops.RestoreResult, drop map[string]bool) *gitops.RestoreResult {
	out := *r
	keep := func(l []string) []string {
		var o []string
		for _, rel := range l {
			if !drop[rel] {
				o = append(o, rel)
			}
		}
		return o
	}
	out.Restored, out.Created, out.Deleted = keep(r.Restored), keep(r.Created), keep(r.Deleted)
	out.Conflicts = nil
	for _, c := range r.Conflicts {
		if !drop[c.Path] {
			out.Conflicts = append(out.Conflicts, c)
		}
	}
	return &out
}

// BuffersToRefresh lists the open buffers that should now show the restored
// text: within paths, not left alone by the restore, with no unsaved edits
// of the user's, and either of a file the restore wrote or holding only the
// agent's edits.
func BuffersToRefresh(ws *workspace.Workspace, res *gitops.RestoreResult, paths []string) []workspace.BufferState {
	if ws == nil || res == nil {
		return nil
	}
	var skip []string
	for _, c := range res.Conflicts {
		skip = append(skip, c.Path)
	}
	for _, c := range res.LeftAlone {
		skip = append(skip, c.Path)
	}
	return buffersToRefresh(ws, append(append([]string(nil), res.Restored...), res.Created...), skip, paths)
}

// buffersToRefresh is BuffersToRefresh's rule on lists: written are the
// files written, skip those left alone.
func buffersToRefresh(ws *workspace.Workspace, written, skipped, paths []string) []workspace.BufferState {
	if ws == nil {
		return nil
	}
	skip := map[string]bool{}
	for _, p := range skipped {
		skip[p] = true
	}
	restored := map[string]bool{}
	for _, rel := range written {
		restored[rel] = true
	}
	var out []workspace.BufferState
	for _, b := range ws.Buffers() {
		if !inScope(paths, b.Path) || skip[b.Path] || b.UserUnsaved || !(restored[b.Path] || b.AgentOnly()) {
			continue
		}
		out = append(out, b)
	}
	return out
}
