package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/agentd/agentd/diff"
)

// Apply writes the files of cs, each with only the hunks accept allows
// (accept == nil accepts every hunk; for binary files, create, delete and
// move the hunk argument is a zero Hunk and decides the whole file). A file
// whose current content (overlay or disk) no longer hashes to BaseHash is
// rebased with a three-way merge when that is clean, otherwise reported as a
// conflict and left alone. writer may be nil for atomic writes on disk.
//
// Deletes are applied first, then moves, then creates and modifications,
// so a change set may replace a file by a directory of the same name. A
// file whose change is already in place (created with the same content,
// already deleted) counts as applied. The error, if any, joins the I/O
// errors of the files that could not be written; the other files are
// applied regardless and listed in the result.
func (w *Workspace) Apply(ctx context.Context, cs *ChangeSet, accept func(*FileChange, diff.Hunk) bool, writer FileWriter) (*ApplyResult, error) {
	res := &ApplyResult{}
	if cs == nil {
		return res, nil
	}
	if writer == nil {
		writer = w.DiskWriter()
	}
	if accept == nil {
		accept = func(*FileChange, diff.Hunk) bool { return true }
	}
	w.applyMu.Lock()
	defer w.applyMu.Unlock()

	files := slices.Clone(cs.Files)
	slices.SortStableFunc(files, func(a, b *FileChange) int { return opOrder(a.Op) - opOrder(b.Op) })
	var errs []error
	for _, fc := range files {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		applied, conflict, err := w.applyFile(ctx, fc, accept, writer)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("apply %s: %w", fc.Path, err))
		case conflict != nil:
			res.Conflicts = append(res.Conflicts, conflict)
		case applied:
			res.Applied = append(res.Applied, fc.Path)
		}
	}
	return res, errors.Join(errs...)
}

func opOrder(op Op) int {
	switch op {
	case OpDelete:
		return 0
	case OpMove:
		return 1
	default:
		return 2
	}
}

// WholeFile reports whether the change is accepted or rejected as a whole
// (binary files, creates, deletes, moves, mode-only changes, symbolic
// links): accept is then asked about the zero Hunk.
func (fc *FileChange) WholeFile() bool {
	return fc.Binary || fc.Op != OpModify || fc.Diff == nil || len(fc.Diff.Hunks) == 0 || fc.IsLink()
}

// Hunk returns the hunk with the given id.
func (fc *FileChange) Hunk(id string) (diff.Hunk, bool) {
	if fc.Diff == nil {
		return diff.Hunk{}, false
	}
	for _, h := range fc.Diff.Hunks {
		if h.ID == id {
			return h, true
		}
	}
	return diff.Hunk{}, false
}

// hunks returns the hunks with the given ids, failing on an unknown id.
func (fc *FileChange) hunks(ids []string) ([]diff.Hunk, error) {
	hs := make([]diff.Hunk, 0, len(ids))
	for _, id := range ids {
		h, ok := fc.Hunk(id)
		if !ok {
			return nil, fmt.Errorf("%s: no hunk %q in this change", fc.Path, id)
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// ContentWith returns the file's content with only the given hunks of the
// change applied to Old. For a whole-file change (see WholeFile) any
// non-empty list means the whole change (New) and an empty one means Old.
func (fc *FileChange) ContentWith(hunkIDs []string) ([]byte, error) {
	if fc.WholeFile() {
		if len(hunkIDs) > 0 {
			return bytes.Clone(fc.New), nil
		}
		return bytes.Clone(fc.Old), nil
	}
	if len(hunkIDs) == len(fc.Diff.Hunks) && sameIDs(hunkIDs, fc.Diff.Hunks) {
		return bytes.Clone(fc.New), nil
	}
	hs, err := fc.hunks(hunkIDs)
	if err != nil {
		return nil, err
	}
	if len(hs) == 0 {
		return bytes.Clone(fc.Old), nil
	}
	out, err := diff.Apply(fc.Old, hs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fc.Path, err)
	}
	return out, nil
}

func sameIDs(ids []string, hs []diff.Hunk) bool {
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		seen[id] = true
	}
	for _, h := range hs {
		if !seen[h.ID] {
			return false
		}
	}
	return true
}

// RevertOn undoes the given hunks, applied earlier, on cur (the file's
// content now, possibly edited since). For a whole-file change it returns
// Old if cur is still New.
func (fc *FileChange) RevertOn(cur []byte, hunkIDs []string) ([]byte, error) {
	if fc.WholeFile() {
		if !bytes.Equal(cur, fc.New) {
			return nil, &ConflictError{Path: fc.Path, Op: fc.Op, Reason: "the file changed since the change was applied, so it cannot be reverted as a whole"}
		}
		return bytes.Clone(fc.Old), nil
	}
	hs, err := fc.hunks(hunkIDs)
	if err != nil {
		return nil, err
	}
	out, err := diff.Revert(cur, hs)
	if err != nil {
		return nil, &ConflictError{Path: fc.Path, Op: fc.Op, Reason: "the lines of the change were edited since it was applied (" + err.Error() + ")"}
	}
	return out, nil
}

// DiskWriter returns the default FileWriter: an atomic write on disk with
// exactly the given mode for a file that exists. A new file gets the mode
// under the umask, as any program's new file does, except where Apply or
// Revert restores a file that existed (a move, an undone delete): that one
// gets its mode back exactly.
func (w *Workspace) DiskWriter() FileWriter { return diskWriter{w} }

type diskWriter struct{ w *Workspace }

// exactModeKey marks a context in which a new file is a file restored with
// its own mode, not a new one.
type exactModeKey struct{}

func withExactMode(ctx context.Context) context.Context {
	return context.WithValue(ctx, exactModeKey{}, true)
}

func (d diskWriter) WriteFile(ctx context.Context, rel string, old, new []byte, mode fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// The entry itself: a link that appeared since the change was checked
	// is refused by writeAtomic, never written through.
	r, err := d.w.resolveEntryWrite(rel)
	if err != nil {
		return err
	}
	exact, _ := ctx.Value(exactModeKey{}).(bool)
	if err := d.w.writeAtomic(r.real, new, mode, writeOpts{exactNew: exact}); err != nil {
		return &PathError{Path: rel, Err: err}
	}
	return nil
}

func (w *Workspace) remove(ctx context.Context, writer FileWriter, rel string) error {
	if rm, ok := writer.(FileRemover); ok {
		return rm.RemoveFile(ctx, rel)
	}
	return w.Remove(ctx, rel)
}

// EmptyText reports whether text is an empty file as editors hold it:
// nothing, or the one line break of a buffer with a single empty line
// (Neovim sends an empty buffer as "\n": its 'eol' is set, yet writing
// it writes nothing). Nothing of the user's is in it.
func EmptyText(text []byte) bool {
	return len(text) == 0 || string(text) == "\n" || string(text) == "\r\n"
}

// CreatedMeanwhile is the conflict of a creation whose file exists now
// with other content: the review proposes the agent's text again as a
// change of that file (review.Book.Repropose), or it is rejected.
const CreatedMeanwhile = "the file was created since the change was computed, with other content; propose the change again to review the agent's text against it, or reject it"

// applyFile applies one file. applied is false when accept rejected all of
// it; a conflict leaves the file alone.
func (w *Workspace) applyFile(ctx context.Context, fc *FileChange, accept func(*FileChange, diff.Hunk) bool, writer FileWriter) (applied bool, conflict *ConflictError, err error) {
	conflictf := func(format string, args ...any) (bool, *ConflictError, error) {
		return false, &ConflictError{Path: fc.Path, Op: fc.Op, Reason: fmt.Sprintf(format, args...)}, nil
	}
	r, err := w.resolveEntryWrite(fc.Path)
	if err != nil {
		return false, nil, err
	}
	cur, exists, curMode, err := w.entry(r.real)
	if err != nil {
		return false, nil, err
	}
	if fc.Op == OpMove {
		return w.applyMove(ctx, fc, accept, writer, r.real, cur, exists)
	}
	if (exists && curMode&fs.ModeSymlink != 0) || fc.IsLink() {
		return w.applyLink(ctx, fc, accept, writer, r.real, cur, exists, curMode&fs.ModeSymlink != 0)
	}

	switch fc.Op {
	case OpCreate:
		if !accept(fc, diff.Hunk{}) {
			return false, nil, nil
		}
		if exists {
			if bytes.Equal(cur, fc.New) {
				return true, nil, nil
			}
			if !EmptyText(cur) {
				return conflictf("%s", CreatedMeanwhile)
			}
			// An empty file (the user opened or created it first) takes
			// the creation: nothing of the user's is in it. Its open
			// buffer may hold one line break (see EmptyText).
			if err := writer.WriteFile(ctx, fc.Path, cur, fc.New, curMode.Perm()); err != nil {
				return false, nil, err
			}
			return true, nil, nil
		}
		if err := writer.WriteFile(ctx, fc.Path, nil, fc.New, fc.Mode.Perm()); err != nil {
			return false, nil, err
		}
		return true, nil, nil

	case OpDelete:
		if !accept(fc, diff.Hunk{}) {
			return false, nil, nil
		}
		if !exists {
			return true, nil, nil
		}
		if Hash(cur) != fc.BaseHash {
			return conflictf("the file changed since the change was computed; not deleting it")
		}
		if err := w.remove(ctx, writer, fc.Path); err != nil {
			return false, nil, err
		}
		return true, nil, nil
	}

	// OpModify.
	if !exists {
		return conflictf("the file was deleted since the change was computed")
	}
	mode := curMode
	if fc.Diff != nil && fc.Diff.OldMode != fc.Diff.NewMode {
		mode = fc.Mode.Perm()
	}
	var proposed []byte
	if fc.WholeFile() {
		if !accept(fc, diff.Hunk{}) {
			return false, nil, nil
		}
		if Hash(cur) != fc.BaseHash {
			if bytes.Equal(cur, fc.New) && mode == curMode {
				return true, nil, nil
			}
			return conflictf("the file changed since the change was computed")
		}
		proposed = fc.New
	} else {
		var ids []string
		for _, h := range fc.Diff.Hunks {
			if accept(fc, h) {
				ids = append(ids, h.ID)
			}
		}
		if len(ids) == 0 {
			return false, nil, nil
		}
		proposed, err = fc.ContentWith(ids)
		if err != nil {
			return false, nil, err
		}
		if Hash(cur) != fc.BaseHash {
			merged, regions := diff.Merge3Adjacent(fc.Old, cur, proposed)
			if len(regions) > 0 {
				return false, &ConflictError{Path: fc.Path, Op: fc.Op, Regions: regions,
					Reason: fmt.Sprintf("the file changed since the change was computed and %d region(s) of the change overlap those edits", len(regions))}, nil
			}
			proposed = merged
		}
	}
	if bytes.Equal(proposed, cur) && mode == curMode {
		return true, nil, nil
	}
	if err := writer.WriteFile(ctx, fc.Path, cur, proposed, mode); err != nil {
		return false, nil, err
	}
	return true, nil, nil
}

// acceptedWhole asks accept about a change that can only be applied as a
// whole. A change whose hunks were reviewed one by one (a front end that
// does not know the change is about a link) is accepted if every hunk is,
// rejected if none is, and partly accepted (ok false) otherwise.
func acceptedWhole(fc *FileChange, accept func(*FileChange, diff.Hunk) bool) (yes, ok bool) {
	if accept(fc, diff.Hunk{}) {
		return true, true
	}
	if fc.Diff == nil || len(fc.Diff.Hunks) == 0 {
		return false, true
	}
	n := 0
	for _, h := range fc.Diff.Hunks {
		if accept(fc, h) {
			n++
		}
	}
	return n == len(fc.Diff.Hunks), n == 0 || n == len(fc.Diff.Hunks)
}

// applyLink applies a create, delete or modify where a symbolic link is
// involved: the change acts on a link, or there is a link at the path now.
// It goes straight to disk, never through the writer (an editor's writer
// would write through the link), and never writes through a link; the
// writer records it first when it records (RecordingWriter).
func (w *Workspace) applyLink(ctx context.Context, fc *FileChange, accept func(*FileChange, diff.Hunk) bool, writer FileWriter, real string, cur []byte, exists, curLink bool) (bool, *ConflictError, error) {
	conflictf := func(format string, args ...any) (bool, *ConflictError, error) {
		return false, &ConflictError{Path: fc.Path, Op: fc.Op, Reason: fmt.Sprintf(format, args...)}, nil
	}
	yes, ok := acceptedWhole(fc, accept)
	if !ok {
		return conflictf("a change to a symbolic link is accepted or rejected as a whole; accept all of its hunks or none")
	}
	if !yes {
		return false, nil, nil
	}
	wantLink := fc.Mode&fs.ModeSymlink != 0
	switch fc.Op {
	case OpCreate:
		if exists {
			if curLink == wantLink && bytes.Equal(cur, fc.New) {
				return true, nil, nil
			}
			if curLink {
				return conflictf("a symbolic link of that name (to %s) exists now; not replacing it", cur)
			}
			return conflictf("the file was created since the change was computed, with other content")
		}
		if err := w.recordDirect(ctx, writer, Edit{Path: fc.Path, After: newState(fc)}); err != nil {
			return false, nil, err
		}
		if wantLink {
			return true, nil, w.symlinkEntry(real, string(fc.New))
		}
		return true, nil, w.writeAtomic(real, fc.New, fc.Mode.Perm(), writeOpts{})
	case OpDelete:
		if !exists {
			return true, nil, nil
		}
		if curLink != wantLink {
			if curLink {
				return conflictf("it is a symbolic link (to %s) now; not deleting it", cur)
			}
			return conflictf("it is no longer a symbolic link; not deleting it")
		}
		if Hash(cur) != fc.BaseHash {
			return conflictf("the link points to %s now; not deleting it", cur)
		}
		if err := w.recordDirect(ctx, writer, Edit{Path: fc.Path}); err != nil {
			return false, nil, err
		}
		return true, nil, w.removeEntry(real)
	}
	// OpModify: a link replaced by a regular file.
	if !exists {
		return conflictf("the link was deleted since the change was computed")
	}
	if !curLink {
		if bytes.Equal(cur, fc.New) {
			return true, nil, nil
		}
		return conflictf("it is no longer a symbolic link; not replacing it")
	}
	if Hash(cur) != fc.BaseHash {
		return conflictf("it is a symbolic link to %s now; not writing through it", cur)
	}
	if wantLink {
		return false, nil, errors.New("changing where a symbolic link points is not supported; delete the link and create it anew")
	}
	if err := w.recordDirect(ctx, writer, Edit{Path: fc.Path, After: newState(fc)}); err != nil {
		return false, nil, err
	}
	return true, nil, w.writeAtomic(real, fc.New, fc.Mode.Perm(), writeOpts{replaceLink: true})
}

// applyMove applies a move to dst (real); dstCur/dstExists describe the
// destination.
func (w *Workspace) applyMove(ctx context.Context, fc *FileChange, accept func(*FileChange, diff.Hunk) bool, writer FileWriter, dst string, dstCur []byte, dstExists bool) (bool, *ConflictError, error) {
	if !accept(fc, diff.Hunk{}) {
		return false, nil, nil
	}
	conflictf := func(format string, args ...any) (bool, *ConflictError, error) {
		return false, &ConflictError{Path: fc.Path, Op: fc.Op, Reason: fmt.Sprintf(format, args...)}, nil
	}
	rs, err := w.resolveEntryWrite(fc.OldPath)
	if err != nil {
		return false, nil, err
	}
	src, srcExists, srcMode, err := w.entry(rs.real)
	if err != nil {
		return false, nil, err
	}
	srcLink := srcExists && srcMode&fs.ModeSymlink != 0
	if !srcExists {
		if dstExists && bytes.Equal(dstCur, fc.New) {
			return true, nil, nil // already moved
		}
		return conflictf("%s was deleted since the change was computed", fc.OldPath)
	}
	if Hash(src) != fc.BaseHash {
		return conflictf("%s changed since the change was computed; not moving it", fc.OldPath)
	}
	if srcLink != (fc.Mode&fs.ModeSymlink != 0 || fc.fromLink()) {
		if srcLink {
			return conflictf("%s is a symbolic link (to %s) now; not moving it", fc.OldPath, src)
		}
		return conflictf("%s is no longer a symbolic link; not moving it", fc.OldPath)
	}
	caseOnly := dstExists && w.sameEntry(rs.real, dst) // dst is the source under a new spelling
	if dstExists && !caseOnly {
		return conflictf("the file was created since the change was computed; not moving %s over it", fc.OldPath)
	}
	if caseOnly && !srcLink {
		// Rename first: writing dst and removing the source would remove
		// the one file both names are.
		st := &FileState{Data: src, Mode: recordedMode(srcMode)}
		if err := recordEdits(ctx, writer, Edit{Path: fc.OldPath, Before: st}, Edit{Path: fc.Path, After: st}); err != nil {
			return false, nil, err
		}
		if err := w.renameEntry(rs.real, dst); err != nil {
			return false, nil, err
		}
		if !bytes.Equal(fc.Old, fc.New) {
			if err := writer.WriteFile(withExactMode(ctx), fc.Path, nil, fc.New, fc.Mode.Perm()); err != nil {
				return false, nil, err
			}
		}
		return true, nil, nil
	}
	if srcLink {
		// The link itself, on disk: never through the writer.
		link := linkState(src)
		if bytes.Equal(fc.Old, fc.New) && fc.Mode&fs.ModeSymlink != 0 {
			if err := recordEdits(ctx, writer, Edit{Path: fc.OldPath, Before: link}, Edit{Path: fc.Path, After: link}); err != nil {
				return false, nil, err
			}
			return true, nil, w.renameEntry(rs.real, dst)
		}
		if err := recordEdits(ctx, writer, Edit{Path: fc.OldPath, Before: link}, Edit{Path: fc.Path, After: newState(fc)}); err != nil {
			return false, nil, err
		}
		if err := w.writeAtomic(dst, fc.New, fc.Mode.Perm(), writeOpts{}); err != nil {
			return false, nil, err
		}
		return true, nil, w.removeEntry(rs.real)
	}
	if bytes.Equal(fc.Old, fc.New) && !w.isOpen(rs.real) {
		if rn, ok := writer.(FileRenamer); ok {
			err = rn.RenameFile(ctx, fc.OldPath, fc.Path)
		} else {
			err = w.Rename(ctx, fc.OldPath, fc.Path)
		}
		if err != nil {
			return false, nil, err
		}
		return true, nil, nil
	}
	if err := writer.WriteFile(withExactMode(ctx), fc.Path, nil, fc.New, fc.Mode.Perm()); err != nil {
		return false, nil, err
	}
	if err := w.remove(ctx, writer, fc.OldPath); err != nil {
		return false, nil, err
	}
	return true, nil, nil
}

// Revert undoes hunks of fc that were applied earlier, on the file's
// current content (overlay or disk), and writes the result through writer
// (nil: atomic on disk). For a whole-file change hunkIDs is ignored: a
// create is removed, a delete re-created, a move moved back, a binary file
// restored, each only if the file is still what the change left. A file
// edited so that the hunks cannot be taken out is a conflict, left alone.
func (w *Workspace) Revert(ctx context.Context, fc *FileChange, hunkIDs []string, writer FileWriter) (*ApplyResult, error) {
	if writer == nil {
		writer = w.DiskWriter()
	}
	w.applyMu.Lock()
	defer w.applyMu.Unlock()
	res := &ApplyResult{}
	conflict := func(reason string) (*ApplyResult, error) {
		res.Conflicts = append(res.Conflicts, &ConflictError{Path: fc.Path, Op: fc.Op, Reason: reason})
		return res, nil
	}
	r, err := w.resolveEntryWrite(fc.Path)
	if err != nil {
		return nil, err
	}
	cur, exists, curMode, err := w.entry(r.real)
	if err != nil {
		return nil, &PathError{Path: fc.Path, Err: err}
	}
	curLink := exists && curMode&fs.ModeSymlink != 0
	isLink := fc.Mode&fs.ModeSymlink != 0 // the change left a link at Path
	wasLink := isLink || fc.fromLink()    // the change found a link (at OldPath for a move)
	if fc.Op == OpCreate || fc.Op == OpMove {
		wasLink = isLink
	}
	// A link and a file of the same text are not the same thing.
	if exists && fc.Op != OpDelete && curLink != isLink {
		return conflict("the path changed type since the change was applied; not reverting it")
	}
	switch fc.Op {
	case OpCreate:
		if !exists {
			res.Applied = append(res.Applied, fc.Path)
			return res, nil
		}
		if !bytes.Equal(cur, fc.New) {
			return conflict("the created file was edited since; not removing it")
		}
		if curLink {
			if err = recordEdits(ctx, writer, Edit{Path: fc.Path, Before: linkState(cur)}); err == nil {
				err = w.removeEntry(r.real)
			}
		} else {
			err = w.remove(ctx, writer, fc.Path)
		}
		if err != nil {
			return res, err
		}
	case OpDelete:
		if exists {
			if curLink == wasLink && bytes.Equal(cur, fc.Old) {
				res.Applied = append(res.Applied, fc.Path)
				return res, nil
			}
			return conflict("a file of that name exists again; not overwriting it with the deleted one")
		}
		if wasLink {
			if err = recordEdits(ctx, writer, Edit{Path: fc.Path, After: linkState(fc.Old)}); err == nil {
				err = w.symlinkEntry(r.real, string(fc.Old))
			}
		} else {
			err = writer.WriteFile(withExactMode(ctx), fc.Path, nil, fc.Old, fc.Mode.Perm())
		}
		if err != nil {
			return res, err
		}
	case OpMove:
		rs, err := w.resolveEntryWrite(fc.OldPath)
		if err != nil {
			return nil, err
		}
		_, srcExists, _, err := w.entry(rs.real)
		if err != nil {
			return nil, &PathError{Path: fc.OldPath, Err: err}
		}
		caseOnly := srcExists && w.sameEntry(r.real, rs.real) // the move renamed the case only
		if srcExists && !caseOnly {
			return conflict(fc.OldPath + " exists again; not moving the file back over it")
		}
		if !exists || !bytes.Equal(cur, fc.New) {
			return conflict("the moved file was edited or removed since; not moving it back")
		}
		st := &FileState{Data: cur, Mode: recordedMode(curMode)}
		switch {
		case caseOnly && !curLink:
			// Rename first: both names are the one file.
			if err = recordEdits(ctx, writer, Edit{Path: fc.Path, Before: st}, Edit{Path: fc.OldPath, After: st}); err != nil {
				break
			}
			if err = w.renameEntry(r.real, rs.real); err == nil && !bytes.Equal(fc.Old, fc.New) {
				err = writer.WriteFile(withExactMode(ctx), fc.OldPath, nil, fc.Old, curMode)
			}
		case curLink:
			if err = recordEdits(ctx, writer, Edit{Path: fc.Path, Before: st}, Edit{Path: fc.OldPath, After: st}); err == nil {
				err = w.renameEntry(r.real, rs.real)
			}
		case fc.fromLink():
			// A link moved and replaced by a file: the link comes back.
			if err = recordEdits(ctx, writer, Edit{Path: fc.OldPath, After: linkState(fc.Old)}); err != nil {
				break
			}
			if err = w.symlinkEntry(rs.real, string(fc.Old)); err == nil {
				err = w.remove(ctx, writer, fc.Path)
			}
		default:
			if err = writer.WriteFile(withExactMode(ctx), fc.OldPath, nil, fc.Old, curMode); err == nil {
				err = w.remove(ctx, writer, fc.Path)
			}
		}
		if err != nil {
			return res, err
		}
	default:
		if !exists {
			return conflict("the file was deleted since the change was applied")
		}
		if fc.fromLink() && !isLink {
			// A link replaced by a regular file: the link comes back.
			if !bytes.Equal(cur, fc.New) {
				return conflict("the file that replaced the link was edited since; not reverting it")
			}
			if err := recordEdits(ctx, writer, Edit{Path: fc.Path, Before: &FileState{Data: cur, Mode: recordedMode(curMode)}, After: linkState(fc.Old)}); err != nil {
				return res, err
			}
			if err := w.replaceWithLink(r.real, string(fc.Old)); err != nil {
				return res, &PathError{Path: fc.Path, Err: err}
			}
			break
		}
		out, err := fc.RevertOn(cur, hunkIDs)
		if err != nil {
			var ce *ConflictError
			if errors.As(err, &ce) {
				res.Conflicts = append(res.Conflicts, ce)
				return res, nil
			}
			return nil, err
		}
		mode := curMode
		if fc.WholeFile() && fc.Diff != nil && fc.Diff.OldMode != fc.Diff.NewMode {
			mode = modeOfGit(fc.Diff.OldMode)
		}
		if !bytes.Equal(out, cur) || mode != curMode {
			if err := writer.WriteFile(ctx, fc.Path, cur, out, mode); err != nil {
				return res, err
			}
		}
	}
	res.Applied = append(res.Applied, fc.Path)
	return res, nil
}

// modeOfGit is the permission bits of a git file mode.
func modeOfGit(m uint32) fs.FileMode {
	if m&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// File returns the change of the given slash-separated relative path (the
// new path of a move), nil if the set does not touch it.
func (cs *ChangeSet) File(path string) *FileChange {
	for _, fc := range cs.Files {
		if fc.Path == path {
			return fc
		}
	}
	return nil
}
