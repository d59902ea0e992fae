package rpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// editorWriter implements workspace.FileWriter: a file open in the editor
// is changed through workspace/applyEdit (so the editor's undo works and
// the buffer never diverges from what the user sees), when the client can;
// anything else is written atomically on disk.
type editorWriter Server

func (w *editorWriter) WriteFile(ctx context.Context, rel string, old, new []byte, mode fs.FileMode) error {
	s := (*Server)(w)
	ws, err := s.workspace()
	if err != nil {
		return err
	}
	buf, open := ws.Buffer(rel)
	if open && NotText(new) {
		// Binary or non-UTF-8 content cannot pass through a buffer: it
		// goes on disk and the editor reloads the buffer, unless the
		// buffer holds the user's unsaved edits.
		if buf.UserUnsaved {
			return fmt.Errorf("%s: the new content is binary or not UTF-8, so it is written on disk, but the open buffer holds your unsaved edits; save or revert them, then accept again: %w", rel, &workspace.ConflictError{Path: rel})
		}
		ws.CloseOverlay(rel)
		s.docs.mu.Lock()
		s.docs.diskOnly[rel] = true
		s.docs.mu.Unlock()
		open = false
	}
	if !open || !s.capabilities().applyEdit {
		if mode == 0 {
			mode = 0o644
		}
		if err := ws.WriteFile(ctx, rel, new, mode.Perm()); err != nil {
			return err
		}
		s.reloadDiskOnly(ctx, []string{rel}, "agentd wrote the file on disk")
		return nil
	}
	u := s.bufferURI(buf.Path)
	cur, version, err := ws.BeginAgentEdit(rel, new)
	if err != nil {
		return err
	}
	applied := false
	defer func() { ws.EndAgentEdit(rel, new, applied) }()
	if old != nil && !bytes.Equal(cur, old) {
		// The buffer moved on since the content was computed.
		return &workspace.ConflictError{Path: rel}
	}
	info, _ := ctx.Value(stepInfoKey{}).(stepInfo)
	rng, text := workspace.MinimalEdit(cur, new, s.encoding())
	annID := protocol.ChangeAnnotationIdentifier("agentd")
	label := "agentd"
	if info.stepID != "" {
		annID = protocol.ChangeAnnotationIdentifier("agentd/" + info.runID + "/" + info.stepID)
		label = "agentd: step " + info.stepID
	}
	no := false
	desc := fmt.Sprintf("change set %s of run %s", info.changeID, info.runID)
	params := &protocol.ApplyWorkspaceEditParams{
		Label: &label,
		Edit: protocol.WorkspaceEdit{
			DocumentChanges: []protocol.DocumentChange{&protocol.TextDocumentEdit{
				TextDocument: protocol.OptionalVersionedTextDocumentIdentifier{
					TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: uri.URI(u)},
					Version:                &version,
				},
				Edits: []protocol.TextDocumentEditElement{&protocol.AnnotatedTextEdit{
					TextEdit:     protocol.TextEdit{Range: toProtocolRange(rng), NewText: text},
					AnnotationID: annID,
				}},
			}},
			ChangeAnnotations: map[protocol.ChangeAnnotationIdentifier]protocol.ChangeAnnotation{
				annID: {Label: label, NeedsConfirmation: &no, Description: &desc},
			},
		},
	}
	res, err := s.client.ApplyEdit(ctx, params)
	applied = err == nil && res != nil && res.Applied
	if err != nil {
		return fmt.Errorf("%s: workspace/applyEdit: %w", rel, err)
	}
	if res == nil || !res.Applied {
		reason := "no reason given"
		if res != nil && res.FailureReason != nil {
			reason = *res.FailureReason
		}
		return fmt.Errorf("%s: the editor did not apply the change (%s): %w", rel, reason, &workspace.ConflictError{Path: rel})
	}
	if workspace.EmptyText(old) && workspace.EmptyText(cur) && emptyOnDisk(ws, rel) {
		// A create into the empty buffer of a file not on disk yet, or
		// empty there (the user opened or wrote it before accepting):
		// the file is written on disk too, so accepting a create always
		// leaves the file, and the buffer holds what the disk does.
		if mode == 0 {
			mode = 0o644
		}
		if err := ws.WriteFile(ctx, rel, new, mode.Perm()); err != nil {
			return err
		}
	}
	return nil
}

// emptyOnDisk reports whether rel is missing on disk or empty there.
func emptyOnDisk(ws *workspace.Workspace, rel string) bool {
	fi, err := ws.Stat(rel)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return fi.Mode().IsRegular() && fi.Size() == 0
}

// reloadDiskOnly tells the editor to read again from disk those of rels
// open in buffers that cannot hold their bytes (binary or non-UTF-8: the
// daemon wrote them on disk). An editor that does not know the request
// reloads them by itself, as it does any file changed on disk.
func (s *Server) reloadDiskOnly(ctx context.Context, rels []string, reason string) {
	var uris []string
	s.docs.mu.Lock()
	for _, rel := range rels {
		if s.docs.diskOnly[rel] {
			uris = append(uris, s.docs.uris[rel])
		}
	}
	s.docs.mu.Unlock()
	if len(uris) == 0 {
		return
	}
	var res struct {
		Reloaded []string `json:"reloaded"`
	}
	if err := s.call(ctx, "agentd/documents/reload", ReloadParams{URIs: uris, Reason: reason}, &res); err != nil {
		s.log.Debug("asking the editor to reload buffers failed; it reloads files changed on disk itself", "uris", uris, "error", err)
	}
}

func toProtocolRange(r workspace.Range) protocol.Range {
	return protocol.Range{
		Start: protocol.Position{Line: uint32(r.Start.Line), Character: uint32(r.Start.Character)},
		End:   protocol.Position{Line: uint32(r.End.Line), Character: uint32(r.End.Character)},
	}
}

// SaveWritten implements engine.BufferSaver: the buffers of paths that
// hold the agent's unsaved edits are saved (agentd/documents/save; one
// that also holds the user's unsaved edits only if the user agrees). It
// returns the paths left unsaved.
func (w *editorWriter) SaveWritten(ctx context.Context, paths []string, reason string) []string {
	s := (*Server)(w)
	ws, err := s.workspace()
	if err != nil {
		return nil
	}
	var uris []string
	byURI := map[string]string{}
	for _, rel := range session.UnsavedAgentFiles(ws) {
		if slices.Contains(paths, rel) {
			u := s.bufferURI(rel)
			uris = append(uris, u)
			byURI[u] = rel
		}
	}
	var left []string
	for _, u := range s.saveBuffers(ctx, uris, reason) {
		left = append(left, byURI[u])
	}
	return left
}

// saveAcceptedBuffers asks the editor to save the buffers that received
// accepted hunks, before a step reads the disk from another process. It
// returns the URIs left unsaved.
func (s *Server) saveAcceptedBuffers(ctx context.Context, reason string) []string {
	return s.saveBuffers(ctx, s.unsavedAgentBuffers(), reason)
}

// saveBuffers asks the editor to save the buffers of uris and returns
// those left unsaved.
func (s *Server) saveBuffers(ctx context.Context, uris []string, reason string) []string {
	if len(uris) == 0 {
		return nil
	}
	var res SaveResult
	if err := s.call(ctx, "agentd/documents/save", SaveParams{URIs: uris, Reason: reason, UserEdited: s.userEditedBuffers(uris)}, &res); err != nil {
		s.log.Warn("asking the editor to save buffers failed", "error", err)
		return uris
	}
	saved := map[string]bool{}
	for _, u := range res.Saved {
		saved[u] = true
	}
	var left []string
	for _, u := range uris {
		if !saved[u] {
			left = append(left, u)
		}
	}
	return left
}
