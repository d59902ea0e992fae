package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

func documentMethods() map[string]method {
	return map[string]method{
		"textDocument/didOpen":   {notify: (*Server).didOpen},
		"textDocument/didChange": {notify: (*Server).didChange},
		"textDocument/didClose":  {notify: (*Server).didClose},
		"textDocument/didSave":   {notify: (*Server).didSave},
	}
}

// Open buffers live in one place, the workspace's overlays: this file only
// adapts the LSP notifications to them. Buffers of files outside the
// workspace are not kept (nothing agentd does reads or writes them).

// documents remembers the URI under which the editor opened each buffer
// (by workspace path), so edits sent back name the document as the editor
// knows it, even when it reached the workspace through a symlink.
type documents struct {
	mu   sync.Mutex
	uris map[string]string // rel -> the editor's URI
	// diskOnly are the open buffers of binary or non-UTF-8 files (by
	// workspace path): a buffer cannot hold their bytes (an editor sends
	// them as text, changed), so they get no overlay, the daemon writes
	// them on disk and tells the editor to reload them
	// (agentd/documents/reload).
	diskOnly map[string]bool
}

func newDocuments() *documents {
	return &documents{uris: map[string]string{}, diskOnly: map[string]bool{}}
}

// isDiskOnly tells whether rel is open in a buffer that cannot hold its
// bytes (see documents.diskOnly).
func (d *documents) isDiskOnly(rel string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.diskOnly[rel]
}

// diskOnlyPaths lists the paths of the open buffers that are disk-only.
func (d *documents) diskOnlyPaths() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for rel := range d.diskOnly {
		out = append(out, rel)
	}
	slices.Sort(out)
	return out
}

// NotText tells whether data cannot pass through an editor's buffer
// unchanged: binary (diff.IsBinary) or not UTF-8. Such files are written
// on disk and the editor reloads them (design/editors.md "Edits go
// through the editor").
func NotText(data []byte) bool {
	return diff.IsBinary(data) || !utf8.Valid(data)
}

// uri returns the editor's URI for an open buffer.
func (d *documents) uri(rel string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	u, ok := d.uris[rel]
	return u, ok
}

// negotiateEncoding picks the position encoding from the client's
// general.positionEncodings (in the client's order of preference): UTF-8
// or UTF-16, which LSP requires every client to support and is the default.
func negotiateEncoding(offered []string) workspace.PositionEncoding {
	for _, e := range offered {
		switch workspace.PositionEncoding(e) {
		case workspace.UTF8:
			return workspace.UTF8
		case workspace.UTF16:
			return workspace.UTF16
		}
	}
	return workspace.UTF16
}

// encoding is the position encoding negotiated at initialize.
func (s *Server) encoding() workspace.PositionEncoding {
	if e := s.capabilities().positionEncoding; e != "" {
		return e
	}
	return workspace.UTF16
}

type textDocumentItem struct {
	URI     string `json:"uri"`
	Version int32  `json:"version"`
	Text    string `json:"text"`
}

type contentChange struct {
	Range *workspace.Range `json:"range"`
	Text  string           `json:"text"`
}

// relPath returns the workspace path of a URI, false if it is outside the
// workspace (or there is none).
func (s *Server) relPath(uri string) (string, bool) {
	ws, err := s.workspace()
	if err != nil {
		return "", false
	}
	rel, _, err := ws.Resolve(uri)
	if err != nil {
		return "", false
	}
	return rel, true
}

// buffer returns the open buffer of a URI.
func (s *Server) buffer(uri string) (workspace.BufferState, bool) {
	ws, err := s.workspace()
	if err != nil {
		return workspace.BufferState{}, false
	}
	return ws.Buffer(uri)
}

func (s *Server) didOpen(ctx context.Context, params json.RawMessage) error {
	var p struct {
		TextDocument textDocumentItem `json:"textDocument"`
	}
	if err := decode(params, &p); err != nil {
		return err
	}
	td := p.TextDocument
	if rel, ok := s.relPath(td.URI); ok {
		ws, _ := s.workspace()
		if disk, err := ws.ReadFile(ctx, rel); err == nil && NotText(disk) {
			// The buffer holds the file's bytes as the editor decoded
			// them, not the bytes: no overlay, the disk stays the file.
			s.docs.mu.Lock()
			s.docs.uris[rel], s.docs.diskOnly[rel] = td.URI, true
			s.docs.mu.Unlock()
			return nil
		}
		if err := ws.OpenOverlay(rel, []byte(td.Text), td.Version); err != nil {
			return fmt.Errorf("didOpen %s: %w", td.URI, err)
		}
		if b, ok := ws.Buffer(rel); ok {
			s.docs.mu.Lock()
			s.docs.uris[b.Path] = td.URI
			s.docs.mu.Unlock()
		}
	}
	return nil
}

func (s *Server) didChange(ctx context.Context, params json.RawMessage) error {
	var p struct {
		TextDocument struct {
			URI     string `json:"uri"`
			Version int32  `json:"version"`
		} `json:"textDocument"`
		ContentChanges []contentChange `json:"contentChanges"`
	}
	if err := decode(params, &p); err != nil {
		return err
	}
	uri := p.TextDocument.URI
	rel, ok := s.relPath(uri)
	if !ok || s.docs.isDiskOnly(rel) {
		return nil
	}
	ws, _ := s.workspace()
	edits := make([]workspace.TextEdit, len(p.ContentChanges))
	for i, c := range p.ContentChanges {
		edits[i] = workspace.TextEdit{Range: c.Range, Text: c.Text}
	}
	// The rebase of pending hunks onto the user's edits waits for a pause in
	// the typing (typing.go).
	err := s.editTyped(uri, rel, edits, func() (bool, error) {
		return ws.EditOverlayIn(rel, edits, p.TextDocument.Version, s.encoding())
	})
	if err != nil {
		return fmt.Errorf("didChange %s: %w", uri, err)
	}
	return nil
}

func (s *Server) didClose(ctx context.Context, params json.RawMessage) error {
	var p struct {
		TextDocument struct {
			URI string `json:"uri"`
		} `json:"textDocument"`
	}
	if err := decode(params, &p); err != nil {
		return err
	}
	if rel, ok := s.relPath(p.TextDocument.URI); ok {
		s.docs.mu.Lock()
		if s.docs.diskOnly[rel] {
			delete(s.docs.diskOnly, rel)
			delete(s.docs.uris, rel)
		}
		s.docs.mu.Unlock()
		ws, _ := s.workspace()
		if b, ok := ws.Buffer(rel); ok {
			s.docs.mu.Lock()
			delete(s.docs.uris, b.Path)
			s.docs.mu.Unlock()
		}
		ws.CloseOverlay(rel)
	}
	return nil
}

func (s *Server) didSave(ctx context.Context, params json.RawMessage) error {
	var p struct {
		TextDocument struct {
			URI string `json:"uri"`
		} `json:"textDocument"`
		Text *string `json:"text"`
	}
	if err := decode(params, &p); err != nil {
		return err
	}
	rel, ok := s.relPath(p.TextDocument.URI)
	if !ok || s.docs.isDiskOnly(rel) {
		return nil
	}
	var text []byte
	if p.Text != nil {
		text = []byte(*p.Text)
	}
	ws, _ := s.workspace()
	if err := ws.SaveOverlay(rel, text); err != nil {
		return fmt.Errorf("didSave %s: %w", p.TextDocument.URI, err)
	}
	return nil
}

// unsavedAgentBuffers lists the URIs of open buffers that received the
// agent's edits and are not saved since.
func (s *Server) unsavedAgentBuffers() []string {
	ws, err := s.workspace()
	if err != nil {
		return nil
	}
	var uris []string
	for _, rel := range session.UnsavedAgentFiles(ws) {
		uris = append(uris, s.bufferURI(rel))
	}
	slices.Sort(uris)
	return uris
}

// userEditedBuffers are the URIs among uris whose open buffers hold unsaved
// edits of the user's.
func (s *Server) userEditedBuffers(uris []string) []string {
	ws, err := s.workspace()
	if err != nil {
		return nil
	}
	var out []string
	for _, b := range ws.Buffers() {
		if u := s.bufferURI(b.Path); b.UserUnsaved && slices.Contains(uris, u) {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out
}

// bufferURI is the URI of an open buffer as the editor named it.
func (s *Server) bufferURI(rel string) string {
	if u, ok := s.docs.uri(rel); ok {
		return u
	}
	return s.uriOf(rel)
}
