package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
)

// Recording the agent's writes for undo.
//
// Undo takes back what the agent wrote (docs/undo.md): every write made for
// a run is recorded, with the file's state just before and just after it,
// before the write is made. The before state is what the write was merged
// against (Apply's old: the editor's buffer when one is open, else the
// disk), so a line the user typed into the file meanwhile is in Before, not
// in the agent's change, and an undo keeps it.
//
// RecordingWriter is the one place that records: Apply and Revert write
// through it, and record through it the writes they make on disk directly
// (symbolic links, the rename of a move that only changes case).

// FileState is a file's content and kind as recorded: Mode is 0o644 for a
// regular file, 0o755 for an executable one and fs.ModeSymlink for a link
// (Data is then the link's target).
type FileState struct {
	Data []byte
	Mode fs.FileMode
}

// Edit is one file a write changes: Before nil is a create, After nil a
// delete; a move is two edits (the old path deleted, the new one created).
type Edit struct {
	Path   string // slash-separated, relative to the root
	Before *FileState
	After  *FileState
}

// EditRecorder records the edits of a run's step durably before they are
// made (engine.LedgerRecorder maps it to the snapshot store's ledger).
type EditRecorder interface {
	RecordEdits(ctx context.Context, runID, stepID string, edits []Edit) error
}

// ErrNotRecorded is wrapped by the error of a write that was not made
// because it could not be recorded for undo.
var ErrNotRecorded = errors.New("the change could not be recorded for undo, so it was not made")

// RecordError names the file whose change could not be recorded.
type RecordError struct {
	Path string
	Err  error // the recorder's error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("%s: %v (%v); check that the workspace's snapshot store works, then retry", e.Path, ErrNotRecorded, e.Err)
}
func (e *RecordError) Unwrap() []error { return []error{ErrNotRecorded, e.Err} }

// RecordingWriter returns a FileWriter (also a FileRemover and a
// FileRenamer) that records every write, removal and rename through rec
// under runID and stepID before it makes it through inner (nil: the disk
// writer). If recording fails nothing is written and the error wraps
// ErrNotRecorded. With rec nil it returns inner unchanged.
func (w *Workspace) RecordingWriter(inner FileWriter, rec EditRecorder, runID, stepID string) FileWriter {
	if rec == nil {
		return inner
	}
	if inner == nil {
		inner = w.DiskWriter()
	}
	return &ledgerWriter{w: w, inner: inner, rec: rec, runID: runID, stepID: stepID}
}

type ledgerWriter struct {
	w             *Workspace
	inner         FileWriter
	rec           EditRecorder
	runID, stepID string
}

func (r *ledgerWriter) record(ctx context.Context, edits ...Edit) error {
	if err := r.rec.RecordEdits(ctx, r.runID, r.stepID, edits); err != nil {
		return &RecordError{Path: edits[0].Path, Err: err}
	}
	return nil
}

func (r *ledgerWriter) WriteFile(ctx context.Context, rel string, old, new []byte, mode fs.FileMode) error {
	before, err := r.w.stateOf(rel)
	if err != nil {
		return err
	}
	if old != nil {
		// What the write was merged against is what it replaces.
		m := fs.FileMode(0o644)
		if before != nil {
			m = before.Mode
		}
		before = &FileState{Data: bytes.Clone(old), Mode: m}
	}
	if err := r.record(ctx, Edit{Path: rel, Before: before, After: &FileState{Data: bytes.Clone(new), Mode: recordedMode(mode)}}); err != nil {
		return err
	}
	return r.inner.WriteFile(ctx, rel, old, new, mode)
}

func (r *ledgerWriter) RemoveFile(ctx context.Context, rel string) error {
	before, err := r.w.stateOf(rel)
	if err != nil {
		return err
	}
	if before != nil {
		if err := r.record(ctx, Edit{Path: rel, Before: before}); err != nil {
			return err
		}
	}
	if rm, ok := r.inner.(FileRemover); ok {
		return rm.RemoveFile(ctx, rel)
	}
	return r.w.Remove(ctx, rel)
}

func (r *ledgerWriter) RenameFile(ctx context.Context, from, to string) error {
	st, err := r.w.stateOf(from)
	if err != nil {
		return err
	}
	if st != nil {
		if err := r.record(ctx, Edit{Path: from, Before: st}, Edit{Path: to, After: st}); err != nil {
			return err
		}
	}
	if rn, ok := r.inner.(FileRenamer); ok {
		return rn.RenameFile(ctx, from, to)
	}
	return r.w.Rename(ctx, from, to)
}

// recordDirect records, when writer records, what a write Apply or Revert
// makes on disk directly (not through the writer) will do: each path's
// state now becomes the given after state (nil: removed).
func (w *Workspace) recordDirect(ctx context.Context, writer FileWriter, changes ...Edit) error {
	r, ok := writer.(*ledgerWriter)
	if !ok {
		return nil
	}
	edits := make([]Edit, 0, len(changes))
	for _, c := range changes {
		before, err := w.stateOf(c.Path)
		if err != nil {
			return err
		}
		if before == nil && c.After == nil {
			continue
		}
		edits = append(edits, Edit{Path: c.Path, Before: before, After: c.After})
	}
	if len(edits) == 0 {
		return nil
	}
	return r.record(ctx, edits...)
}

// recordEdits records edits as given, when writer records.
func recordEdits(ctx context.Context, writer FileWriter, edits ...Edit) error {
	if r, ok := writer.(*ledgerWriter); ok && len(edits) > 0 {
		return r.record(ctx, edits...)
	}
	return nil
}

// stateOf is the file's state now as a write would find it (the editor's
// buffer when one is open, else the disk; a link as its target), nil if
// there is no file.
func (w *Workspace) stateOf(rel string) (*FileState, error) {
	rs, err := w.resolveEntryWrite(rel)
	if err != nil {
		return nil, err
	}
	data, exists, mode, err := w.entry(rs.real)
	if err != nil {
		return nil, &PathError{Path: rel, Err: err}
	}
	if !exists {
		return nil, nil
	}
	return &FileState{Data: data, Mode: recordedMode(mode)}, nil
}

// recordedMode is a mode as FileState records it.
func recordedMode(m fs.FileMode) fs.FileMode {
	switch {
	case m&fs.ModeSymlink != 0:
		return fs.ModeSymlink
	case m&0o111 != 0:
		return 0o755
	default:
		return 0o644
	}
}

// linkState is the recorded state of a link to target.
func linkState(target []byte) *FileState {
	return &FileState{Data: bytes.Clone(target), Mode: fs.ModeSymlink}
}

// newState is the state a create or modify of fc leaves.
func newState(fc *FileChange) *FileState {
	if fc.Mode&fs.ModeSymlink != 0 {
		return linkState(fc.New)
	}
	return &FileState{Data: bytes.Clone(fc.New), Mode: recordedMode(fc.Mode)}
}
