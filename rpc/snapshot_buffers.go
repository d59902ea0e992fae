package rpc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/workspace"
)

// Open buffers and snapshots. The agent's edits that reach a buffer
// through workspace/applyEdit are the agent's whoever saves them (the rule
// is workspace.BufferState's), so:
//   - a snapshot that records the agent's state records those buffers'
//     text (session.Snapshotter), saved or not;
//   - a restore puts the restored text back into open buffers that hold
//     no unsaved edits of the user's (through workspace/applyEdit, then
//     agentd/documents/save so the editor's buffer is clean again), and
//     leaves alone, as a conflict, every buffer with unsaved user edits,
//     on disk too.

// restoreWithBuffers restores through the core's buffer rule
// (engine.RestoreAroundBuffers) and then puts the restored text into the
// open buffers it names (engine.BuffersToRefresh). Extra conflicts
// (buffers left alone) are returned beside the result.
func (s *Server) restoreWithBuffers(ctx context.Context, store *gitops.Store, ws *workspace.Workspace, id string, opts gitops.RestoreOptions) (*gitops.RestoreResult, []gitops.RestoreConflict, error) {
	res, extra, err := engine.RestoreAroundBuffers(ctx, store, ws, id, opts)
	if err != nil || opts.DryRun {
		return res, extra, err
	}
	extra = append(extra, s.restoreBuffers(ctx, ws, id, engine.BuffersToRefresh(ws, res, opts.Paths))...)
	return res, extra, nil
}

// restoreBuffers puts the disk's restored text into bufs (chosen by
// engine.BuffersToRefresh) through workspace/applyEdit, then asks the
// editor to save them.
func (s *Server) restoreBuffers(ctx context.Context, ws *workspace.Workspace, id string, bufs []workspace.BufferState) []gitops.RestoreConflict {
	if !s.capabilities().applyEdit {
		return nil
	}
	var conflicts []gitops.RestoreConflict
	var edited []string
	w := (*editorWriter)(s)
	for _, b := range bufs {
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
