package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
)

// overlay is an editor buffer. Edits modify text in place (a didChange per
// keystroke must not copy a large file each time), so it is only read
// under the lock, by copying.
type overlay struct {
	text    []byte
	version int32

	// Whose edits the buffer holds (see BufferState).
	agentText      []byte   // the buffer as the agent's last edit left it; nil if none
	expect         [][]byte // texts the agent's edits in flight will produce
	inFlight       int      // agent edits sent to the editor and not answered
	agentUnsaved   bool     // agent edits reached the buffer since the last save
	userUnsaved    bool     // the user edited the buffer since the last save
	userSinceAgent bool     // the user edited the buffer since the agent's last edit
}

// ErrNotOpen is wrapped by EditOverlay's error for a buffer that was never
// opened (or was closed).
var ErrNotOpen = errors.New("document is not open")

// OpenOverlay records an editor buffer (didOpen). Version is the editor's.
// Reopening an open buffer replaces it.
func (w *Workspace) OpenOverlay(p string, content []byte, version int32) error {
	r, err := w.resolve(p)
	if err != nil {
		return err
	}
	text := append([]byte(nil), content...)
	w.mu.Lock()
	w.overlays[r.real] = &overlay{text: text, version: version}
	w.mu.Unlock()
	return nil
}

// EditOverlay applies incremental edits with UTF-16 positions (didChange);
// see EditOverlayIn.
func (w *Workspace) EditOverlay(p string, edits []TextEdit, version int32) error {
	_, err := w.EditOverlayIn(p, edits, version, UTF16)
	return err
}

// EditOverlayIn applies incremental edits in order (didChange), with
// positions converted as OffsetIn does in enc. A range whose end is before
// its start fails the whole call and leaves the buffer unchanged.
//
// byUser reports whether the edit is the user's: an edit is the agent's
// when it produces the text of an agent edit in flight (BeginAgentEdit), or
// arrives while one is in flight; any other edit is the user's.
func (w *Workspace) EditOverlayIn(p string, edits []TextEdit, version int32, enc PositionEncoding) (byUser bool, err error) {
	r, err := w.resolve(p)
	if err != nil {
		return false, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.overlays[r.real]
	if !ok {
		return false, &PathError{Path: p, Err: ErrNotOpen}
	}
	text := o.text
	if len(edits) > 1 {
		// All or nothing: a later edit may fail after earlier ones changed
		// the text, so work on a copy. A single edit fails before it
		// changes anything.
		text = bytes.Clone(text)
	}
	for i, e := range edits {
		text, err = applyEdit(text, e, enc)
		if err != nil {
			return false, &PathError{Path: p, Err: fmt.Errorf("edit %d of version %d: %w", i, version, err)}
		}
	}
	o.text, o.version = text, version
	if i := slices.IndexFunc(o.expect, func(t []byte) bool { return bytes.Equal(t, text) }); i >= 0 {
		o.expect = slices.Delete(o.expect, i, i+1)
		return false, nil
	}
	if o.inFlight > 0 {
		return false, nil
	}
	o.expect = nil // an agent edit whose text never showed up is not coming
	o.userEdited()
	return true, nil
}

// CloseOverlay forgets a buffer (didClose); reads go to disk again.
func (w *Workspace) CloseOverlay(p string) {
	r, err := w.resolve(p)
	if err != nil {
		return
	}
	w.mu.Lock()
	delete(w.overlays, r.real)
	w.mu.Unlock()
}

// SaveOverlay records that the editor saved the buffer (didSave). text,
// when not nil, is the buffer's content as the editor saved it. Neither the
// agent's nor the user's edits are unsaved any more.
func (w *Workspace) SaveOverlay(p string, text []byte) error {
	r, err := w.resolve(p)
	if err != nil {
		return err
	}
	w.mu.Lock()
	o, ok := w.overlays[r.real]
	if !ok {
		w.mu.Unlock()
		return &PathError{Path: p, Err: ErrNotOpen}
	}
	if text != nil {
		o.text = bytes.Clone(text)
	}
	o.agentUnsaved, o.userUnsaved = false, false
	w.mu.Unlock()
	w.noteSave(r.real)
	return nil
}

// BeginAgentEdit starts an edit of an open buffer by the agent (sent to the
// editor, which answers and reports the change with didChange). want is the
// buffer's content after the edit. It returns the buffer's content and
// version now. Every BeginAgentEdit is followed by one EndAgentEdit.
func (w *Workspace) BeginAgentEdit(p string, want []byte) (text []byte, version int32, err error) {
	r, err := w.resolve(p)
	if err != nil {
		return nil, 0, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.overlays[r.real]
	if !ok {
		return nil, 0, &PathError{Path: p, Err: ErrNotOpen}
	}
	o.inFlight++
	if !bytes.Equal(o.text, want) {
		o.expect = append(o.expect, bytes.Clone(want))
	}
	return bytes.Clone(o.text), o.version, nil
}

// EndAgentEdit ends an edit started by BeginAgentEdit; applied says whether
// the editor applied it. The buffer then holds the agent's edit, whether or
// not the editor's didChange has arrived yet.
func (w *Workspace) EndAgentEdit(p string, want []byte, applied bool) {
	r, err := w.resolve(p)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.overlays[r.real]
	if !ok {
		return
	}
	o.inFlight--
	if !applied {
		if i := slices.IndexFunc(o.expect, func(t []byte) bool { return bytes.Equal(t, want) }); i >= 0 {
			o.expect = slices.Delete(o.expect, i, i+1)
		}
		return
	}
	o.agentEdited(want)
}

// agentEdited records that the agent's edit left the buffer holding want.
func (o *overlay) agentEdited(want []byte) {
	o.agentUnsaved = true
	if o.userUnsaved {
		// The buffer held unsaved edits of the user's: it holds both now,
		// and counts as the user's (nothing of it is ever treated as only
		// the agent's).
		o.agentText, o.userSinceAgent = nil, true
		return
	}
	o.agentText, o.userSinceAgent = bytes.Clone(want), false
}

// userEdited records that the user edited the buffer and did not save it.
func (o *overlay) userEdited() { o.userUnsaved, o.userSinceAgent = true, true }

// SyncOverlay records a buffer's whole text from a client that reports
// texts rather than edits (ACP's fs/read_text_file and
// fs/write_text_file), keeping whose edits it holds by the same rule as
// the editor server's (BufferState). byAgent says the text is the agent's
// own write through the client, as an applied BeginAgentEdit/EndAgentEdit
// (saved when the disk holds it afterwards, as some clients save).
// Otherwise the text was read from the client: unchanged, it changes
// nothing; the same as the file on disk, the buffer was saved (or never
// edited); anything else is the user's unsaved edit. A buffer first seen
// with text the disk does not hold is the user's too. Version is the
// caller's count.
func (w *Workspace) SyncOverlay(p string, content []byte, version int32, byAgent bool) error {
	r, err := w.resolve(p)
	if err != nil {
		return err
	}
	text := bytes.Clone(content)
	// Read outside the lock; a file that cannot be read (missing, too
	// large) does not hold the buffer's text.
	disk, _, err := w.readDisk(r.real)
	saved := err == nil && bytes.Equal(disk, text)
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.overlays[r.real]
	if !ok {
		o = &overlay{}
		w.overlays[r.real] = o
	}
	changed := !ok || !bytes.Equal(o.text, text)
	o.text, o.version = text, version
	switch {
	case byAgent:
		o.agentEdited(text)
		if saved {
			// The client saved the write (the buffer, all of it).
			o.agentUnsaved, o.userUnsaved = false, false
		}
	case !changed:
	case saved:
		// The user saved (or reverted) the buffer: nothing is unsaved,
		// and a text that is not the agent's last is the user's.
		o.agentUnsaved, o.userUnsaved = false, false
		if o.agentText == nil || !bytes.Equal(o.agentText, text) {
			o.userSinceAgent = true
		}
	default:
		o.userEdited()
	}
	return nil
}

// BufferState is an open buffer and whose edits it holds. This is the one
// rule for "which edits count as the user's": edits the agent made through
// the editor (BeginAgentEdit/EndAgentEdit) are the agent's, whoever saves
// them later; every other edit is the user's.
type BufferState struct {
	Path    string // symlink-resolved, slash-separated
	Text    []byte
	Version int32
	// AgentUnsaved: agent edits reached the buffer and it was not saved
	// since. UserUnsaved: the user edited it and it was not saved since.
	AgentUnsaved, UserUnsaved bool
	// AgentText is the buffer as the agent's last edit left it, nil if the
	// user edited the buffer since (or the agent never did).
	AgentText []byte
}

// AgentOnly reports whether the buffer holds the agent's edits and none of
// the user's since: its content is AgentText.
func (b BufferState) AgentOnly() bool { return b.AgentText != nil }

// Buffer returns the state of an open buffer.
func (w *Workspace) Buffer(p string) (BufferState, bool) {
	r, err := w.resolve(p)
	if err != nil {
		return BufferState{}, false
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	o, ok := w.overlays[r.real]
	if !ok {
		return BufferState{}, false
	}
	return o.state(r.real), true
}

// Buffers returns the state of every open buffer.
func (w *Workspace) Buffers() []BufferState {
	w.mu.RLock()
	defer w.mu.RUnlock()
	out := make([]BufferState, 0, len(w.overlays))
	for rel, o := range w.overlays {
		out = append(out, o.state(rel))
	}
	slices.SortFunc(out, func(a, b BufferState) int { return cmpString(a.Path, b.Path) })
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (o *overlay) state(rel string) BufferState {
	b := BufferState{Path: rel, Text: bytes.Clone(o.text), Version: o.version, AgentUnsaved: o.agentUnsaved, UserUnsaved: o.userUnsaved}
	if o.agentText != nil && !o.userSinceAgent {
		b.AgentText = bytes.Clone(o.agentText)
	}
	return b
}

// AgentContents returns, for every open buffer that holds the agent's edits
// and none of the user's since, the text the agent left, by path. A
// snapshot that records the agent's state records these, not the disk: the
// agent's edits are the agent's whether or not the editor saved them.
func (w *Workspace) AgentContents() map[string][]byte {
	w.mu.RLock()
	defer w.mu.RUnlock()
	var out map[string][]byte
	for rel, o := range w.overlays {
		if o.agentText == nil || o.userSinceAgent {
			continue
		}
		if out == nil {
			out = map[string][]byte{}
		}
		out[rel] = bytes.Clone(o.agentText)
	}
	return out
}

// Overlay returns the buffer's content and version if the file is open.
// The content is the caller's to keep and modify.
func (w *Workspace) Overlay(p string) (content []byte, version int32, ok bool) {
	r, err := w.resolve(p)
	if err != nil {
		return nil, 0, false
	}
	return w.overlayOf(r.real)
}

// overlayOf returns a copy of the buffer of a real rel.
func (w *Workspace) overlayOf(real string) ([]byte, int32, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	o, ok := w.overlays[real]
	if !ok {
		return nil, 0, false
	}
	return bytes.Clone(o.text), o.version, true
}

// isOpen reports whether a real rel has a buffer.
func (w *Workspace) isOpen(real string) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	_, ok := w.overlays[real]
	return ok
}

// OpenOverlays lists the (symlink-resolved, slash-separated) paths of the
// open buffers.
func (w *Workspace) OpenOverlays() []string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	paths := make([]string, 0, len(w.overlays))
	for rel := range w.overlays {
		paths = append(paths, rel)
	}
	return paths
}

// ApplyEdits applies incremental edits to text in order, as EditOverlayIn
// does to a buffer, and returns the result (text is not changed).
func ApplyEdits(text []byte, edits []TextEdit, enc PositionEncoding) ([]byte, error) {
	out := bytes.Clone(text)
	for i, e := range edits {
		var err error
		if out, err = applyEdit(out, e, enc); err != nil {
			return nil, fmt.Errorf("edit %d: %w", i, err)
		}
	}
	return out, nil
}

// applyEdit applies one edit to text, in place when its capacity allows,
// and returns the result. On error text is unchanged.
func applyEdit(text []byte, e TextEdit, enc PositionEncoding) ([]byte, error) {
	if e.Range == nil {
		return append(text[:0], e.Text...), nil
	}
	simple := lfOnly(text)
	start, err := offsetFrom(text, simple, 0, 0, e.Range.Start, enc)
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	// The end is usually on the start's line or soon after: search from
	// the start's line (unless the start was clamped to the end).
	s := e.Range.Start
	fromOff, fromLine := start-startColumnBytes(text, start), s.Line
	if start == len(text) {
		fromOff, fromLine = 0, 0
	}
	end, err := offsetFrom(text, simple, fromOff, fromLine, e.Range.End, enc)
	if err != nil {
		return nil, fmt.Errorf("end: %w", err)
	}
	if end < start {
		return nil, fmt.Errorf("range end %d:%d is before its start %d:%d",
			e.Range.End.Line, e.Range.End.Character, e.Range.Start.Line, e.Range.Start.Character)
	}
	n := len(text) - (end - start) + len(e.Text)
	if n > cap(text) {
		out := make([]byte, n, n+n/4+64)
		copy(out, text[:start])
		copy(out[start:], e.Text)
		copy(out[start+len(e.Text):], text[end:])
		return out, nil
	}
	out := text[:n]
	copy(out[start+len(e.Text):], text[end:]) // copy handles the overlap
	copy(out[start:], e.Text)
	return out, nil
}
