package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

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

// document is the server's mirror of an editor buffer. The workspace keeps
// the overlay tools read; the mirror lets the server compute edits for
// workspace/applyEdit and know which buffers hold accepted but unsaved
// changes, even for files outside the workspace.
type document struct {
	uri     string
	text    []byte
	version int32
	// acceptedUnsaved is set when accepted hunks reached the buffer through
	// workspace/applyEdit and the buffer has not been saved since.
	acceptedUnsaved bool
	// userEdited is set when the user changed the buffer since it was last
	// saved (not through agentd's own applyEdit).
	userEdited bool
	// applying counts agentd's own applyEdit calls in flight for the buffer.
	applying int
}

type documents struct {
	mu   sync.Mutex
	docs map[string]*document
}

func newDocuments() *documents { return &documents{docs: map[string]*document{}} }

// get returns a copy of the document's state.
func (d *documents) get(uri string) (document, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	doc, ok := d.docs[uri]
	if !ok {
		return document{}, false
	}
	c := *doc
	c.text = append([]byte(nil), doc.text...)
	return c, true
}

func (d *documents) update(uri string, f func(*document)) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	doc, ok := d.docs[uri]
	if ok {
		f(doc)
	}
	return ok
}

// unsavedAccepted lists buffers that received accepted hunks and are not saved.
func (d *documents) unsavedAccepted() (uris []string, userEdited map[string]bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	userEdited = map[string]bool{}
	for uri, doc := range d.docs {
		if doc.acceptedUnsaved {
			uris = append(uris, uri)
			userEdited[uri] = doc.userEdited
		}
	}
	return uris, userEdited
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

func (s *Server) didOpen(ctx context.Context, params json.RawMessage) error {
	var p struct {
		TextDocument textDocumentItem `json:"textDocument"`
	}
	if err := decode(params, &p); err != nil {
		return err
	}
	td := p.TextDocument
	s.docs.mu.Lock()
	s.docs.docs[td.URI] = &document{uri: td.URI, text: []byte(td.Text), version: td.Version}
	s.docs.mu.Unlock()
	if rel, ok := s.relPath(td.URI); ok {
		ws, _ := s.workspace()
		if err := ws.OpenOverlay(rel, []byte(td.Text), td.Version); err != nil {
			return fmt.Errorf("didOpen %s: %w", td.URI, err)
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
	var applyErr error
	own := false
	known := s.docs.update(uri, func(doc *document) {
		for _, c := range p.ContentChanges {
			if c.Range == nil {
				doc.text = []byte(c.Text)
				continue
			}
			t, err := applyEdit(doc.text, *c.Range, c.Text)
			if err != nil {
				applyErr = err
				return
			}
			doc.text = t
		}
		doc.version = p.TextDocument.Version
		own = doc.applying > 0
		if !own {
			doc.userEdited = true
		}
	})
	if !known {
		return fmt.Errorf("didChange for %s, which is not open", uri)
	}
	if applyErr != nil {
		return fmt.Errorf("didChange %s: %w", uri, applyErr)
	}
	rel, ok := s.relPath(uri)
	if !ok {
		return nil
	}
	ws, _ := s.workspace()
	edits := make([]workspace.TextEdit, len(p.ContentChanges))
	for i, c := range p.ContentChanges {
		edits[i] = workspace.TextEdit{Range: c.Range, Text: c.Text}
	}
	if err := ws.EditOverlay(rel, edits, p.TextDocument.Version); err != nil {
		return fmt.Errorf("didChange %s: %w", uri, err)
	}
	if !own {
		s.onUserEdit(uri, rel)
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
	s.docs.mu.Lock()
	delete(s.docs.docs, p.TextDocument.URI)
	s.docs.mu.Unlock()
	if rel, ok := s.relPath(p.TextDocument.URI); ok {
		ws, _ := s.workspace()
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
	s.docs.update(p.TextDocument.URI, func(doc *document) {
		if p.Text != nil {
			doc.text = []byte(*p.Text)
		}
		doc.acceptedUnsaved = false
		doc.userEdited = false
	})
	return nil
}

// offsetOf converts an LSP position (UTF-16 character) to a byte offset.
// A character past the end of its line clamps to the line end; a line past
// the end of the text clamps to the end (as LSP clients expect).
func offsetOf(text []byte, pos workspace.Position) (int, error) {
	if pos.Line < 0 || pos.Character < 0 {
		return 0, fmt.Errorf("negative position %d:%d", pos.Line, pos.Character)
	}
	off := 0
	for line := 0; line < pos.Line; line++ {
		i := indexByteFrom(text, off, '\n')
		if i < 0 {
			return len(text), nil
		}
		off = i + 1
	}
	units := 0
	for off < len(text) && units < pos.Character {
		if text[off] == '\n' || (text[off] == '\r' && off+1 < len(text) && text[off+1] == '\n') {
			break
		}
		r, size := utf8.DecodeRune(text[off:])
		n := utf16.RuneLen(r)
		if n < 0 {
			n = 1
		}
		if units+n > pos.Character {
			break
		}
		units += n
		off += size
	}
	return off, nil
}

func indexByteFrom(b []byte, from int, c byte) int {
	for i := from; i < len(b); i++ {
		if b[i] == c {
			return i
		}
	}
	return -1
}

// positionOf converts a byte offset to an LSP position.
func positionOf(text []byte, off int) workspace.Position {
	var pos workspace.Position
	lineStart := 0
	for i := 0; i < off && i < len(text); i++ {
		if text[i] == '\n' {
			pos.Line++
			lineStart = i + 1
		}
	}
	for i := lineStart; i < off && i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		n := utf16.RuneLen(r)
		if n < 0 {
			n = 1
		}
		pos.Character += n
		i += size
	}
	return pos
}

// applyEdit replaces rng in text with newText.
func applyEdit(text []byte, rng workspace.Range, newText string) ([]byte, error) {
	start, err := offsetOf(text, rng.Start)
	if err != nil {
		return nil, err
	}
	end, err := offsetOf(text, rng.End)
	if err != nil {
		return nil, err
	}
	if end < start {
		return nil, fmt.Errorf("range end %d:%d before start %d:%d", rng.End.Line, rng.End.Character, rng.Start.Line, rng.Start.Character)
	}
	out := make([]byte, 0, len(text)-(end-start)+len(newText))
	out = append(out, text[:start]...)
	out = append(out, newText...)
	out = append(out, text[end:]...)
	return out, nil
}

// minimalEdit returns one edit turning old into new: the range of old that
// differs and its replacement.
func minimalEdit(old, new []byte) (workspace.Range, string) {
	p := 0
	for p < len(old) && p < len(new) && old[p] == new[p] {
		p++
	}
	// Do not split a UTF-8 sequence.
	for p > 0 && p < len(old) && !utf8.RuneStart(old[p]) {
		p--
	}
	so, sn := len(old), len(new)
	for so > p && sn > p && old[so-1] == new[sn-1] {
		so--
		sn--
	}
	for so < len(old) && !utf8.RuneStart(old[so]) {
		so++
		sn++
	}
	return workspace.Range{Start: positionOf(old, p), End: positionOf(old, so)}, string(new[p:sn])
}
