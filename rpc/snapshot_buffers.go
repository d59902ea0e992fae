package rpc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

// Open buffers and snapshots. The agent's edits that reach a buffer
// through workspace/applyEdit are the agent's whoever saves them (the rule
// is workspace.BufferState's), so:
//   - a snapshot that records the agent's state records those buffers'
//     text (agentContents), saved or not;
//   - a restore puts the restored text back into open buffers that hold
//     no unsaved edits of the user's (through workspace/applyEdit, then
//     agentd/documents/save so the editor's buffer is clean again), and
//     leaves alone, as a conflict, every buffer with unsaved user edits,
//     on disk too.

// agentContents is gitops.SnapshotOptions.Contents for a snapshot that
// records the agent's state.
func (s *Server) agentContents() map[string][]byte {
	ws, err := s.workspace()
	if err != nil {
		return nil
	}
	return ws.AgentContents()
}

// unsavedEditsMessage is the conflict of a buffer with the user's unsaved
// edits.
const unsavedEditsMessage = "the file has unsaved edits in the editor; left alone (on disk too): save or undo them, then restore again"

// restoreWithBuffers runs store.Restore and brings the open buffers along.
// Extra conflicts (buffers left alone) are returned beside the result.
func (s *Server) restoreWithBuffers(ctx context.Context, store *gitops.Store, ws *workspace.Workspace, id string, opts gitops.RestoreOptions) (*gitops.RestoreResult, []gitops.RestoreConflict, error) {
	inScope := func(rel string) bool {
		if len(opts.Paths) == 0 {
			return true
		}
		for _, p := range opts.Paths {
			if p == "." || rel == p || strings.HasPrefix(rel, strings.TrimSuffix(p, "/")+"/") {
				return true
			}
		}
		return false
	}
	userBufs := map[string]bool{}
	mixed := map[string]bool{} // unsaved edits of both the agent and the user
	for _, b := range ws.Buffers() {
		if b.UserUnsaved && inScope(b.Path) {
			userBufs[b.Path] = true
			mixed[b.Path] = b.AgentUnsaved
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
		add := func(rel string) {
			if userBufs[rel] {
				extra = append(extra, gitops.RestoreConflict{Path: rel, Message: unsavedEditsMessage})
				return
			}
			keep = append(keep, rel)
		}
		for _, l := range [][]string{plan.Restored, plan.Created, plan.Deleted} {
			for _, rel := range l {
				add(rel)
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
		for rel := range mixed {
			if mixed[rel] && !slices.ContainsFunc(extra, func(c gitops.RestoreConflict) bool { return c.Path == rel }) {
				extra = append(extra, gitops.RestoreConflict{Path: rel, Message: unsavedEditsMessage})
			}
		}
		slices.SortFunc(extra, func(a, b gitops.RestoreConflict) int { return strings.Compare(a.Path, b.Path) })
		if len(extra) > 0 {
			if len(keep) == 0 || opts.DryRun {
				plan = filterRestore(plan, userBufs)
				return plan, extra, nil
			}
			opts.Paths = keep
		}
	}
	res, err := store.Restore(ctx, id, opts)
	if err != nil || opts.DryRun {
		return res, extra, err
	}
	extra = append(extra, s.restoreBuffers(ctx, ws, id, res, inScope)...)
	return res, extra, nil
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

// restoreBuffers puts the restored text into the open buffers of restored
// files and of files whose buffer holds only the agent's edits, when they
// hold no unsaved edits of the user's and the restore did not leave the
// file alone, then asks the editor to save them.
func (s *Server) restoreBuffers(ctx context.Context, ws *workspace.Workspace, id string, res *gitops.RestoreResult, inScope func(string) bool) []gitops.RestoreConflict {
	if !s.capabilities().applyEdit {
		return nil
	}
	skip := map[string]bool{}
	for _, c := range res.Conflicts {
		skip[c.Path] = true
	}
	for _, c := range res.LeftAlone {
		skip[c.Path] = true
	}
	restored := map[string]bool{}
	for _, l := range [][]string{res.Restored, res.Created} {
		for _, rel := range l {
			restored[rel] = true
		}
	}
	var conflicts []gitops.RestoreConflict
	var edited []string
	w := (*editorWriter)(s)
	for _, b := range ws.Buffers() {
		if !inScope(b.Path) || skip[b.Path] || b.UserUnsaved || !(restored[b.Path] || b.AgentOnly()) {
			continue
		}
		disk, err := os.ReadFile(filepath.Join(ws.Root(), filepath.FromSlash(b.Path)))
		if err != nil {
			continue // deleted by the restore: the editor shows that
		}
		if bytes.Equal(b.Text, disk) {
			if b.AgentUnsaved {
				edited = append(edited, s.bufferURI(b.Path))
			}
			continue
		}
		if err := w.WriteFile(ctx, b.Path, b.Text, disk, 0); err != nil {
			if now, ok := ws.Buffer(b.Path); ok && bytes.Equal(now.Text, disk) {
				continue // the editor reloaded the file meanwhile
			}
			var ce *workspace.ConflictError
			msg := "could not put the restored text into the open buffer: " + err.Error()
			if errors.As(err, &ce) {
				msg = "the buffer changed while the restore put the restored text into it; left as it is"
			}
			conflicts = append(conflicts, gitops.RestoreConflict{Path: b.Path, Message: msg})
			continue
		}
		edited = append(edited, s.bufferURI(b.Path))
	}
	if len(edited) > 0 {
		var sr SaveResult
		if err := s.call(ctx, "agentd/documents/save", SaveParams{URIs: edited, Reason: "restoring snapshot " + id + " put the restored text into the buffer"}, &sr); err != nil {
			s.log.Warn("asking the editor to save restored buffers failed; they stay modified, with the restored text", "error", err)
		}
	}
	return conflicts
}
