package rpc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/agentd/agentd/session"
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

// editorBuffers is the editor server's read and write of the editor's
// buffers (session.EditorBuffers); the rule of which buffers a restore or
// undo may write, and which then show the new text, is the session's.
type editorBuffers struct {
	s  *Server
	ws *workspace.Workspace
}

// ReadBuffers does nothing: the editor tells the server of every change
// to its buffers (textDocument/didChange).
func (editorBuffers) ReadBuffers(context.Context, []string) {}

// WriteBuffers puts the disk's new text into the open buffers the session
// chose (w.Refresh).
func (b editorBuffers) WriteBuffers(ctx context.Context, w session.BufferWrite) []session.RestoreConflict {
	// Binary and non-UTF-8 files have no buffer text (documents.diskOnly):
	// the editor reads them again from disk.
	b.s.reloadDiskOnly(ctx, b.s.docs.diskOnlyPaths(), w.Reason)
	return b.s.restoreBuffers(ctx, b.ws, w.Reason, w.Refresh)
}

// restoreBuffers puts the disk's restored text into bufs (chosen by
// session.BuffersToRefresh) through workspace/applyEdit, then asks the
// editor to save them, saying reason.
func (s *Server) restoreBuffers(ctx context.Context, ws *workspace.Workspace, reason string, bufs []workspace.BufferState) []session.RestoreConflict {
	if !s.capabilities().applyEdit {
		return nil
	}
	var conflicts []session.RestoreConflict
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
			conflicts = append(conflicts, session.RestoreConflict{Path: b.Path, Message: msg})
			continue
		}
		edited = append(edited, s.bufferURI(b.Path))
	}
	if len(edited) > 0 {
		var sr SaveResult
		if err := s.call(ctx, "agentd/documents/save", SaveParams{URIs: edited, Reason: reason}, &sr); err != nil {
			s.log.Warn("asking the editor to save restored buffers failed; they stay modified, with the restored text", "error", err)
		}
	}
	return conflicts
}
