package review

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/workspace"
)

// ErrNothingToRepropose is wrapped by Repropose's error when the units it
// was given hold no open hunk (all decided, or a file decided as a whole).
var ErrNothingToRepropose = errors.New("nothing to propose again")

// Repropose proposes a `before` set's open hunks again against the file as
// the user has it now (the editor's buffer, else the disk): a stale hunk,
// whose changed lines the user edited, becomes a pending hunk that turns
// the user's text of those lines into the agent's, for the user to review
// like any other (nothing is written). Pending hunks are recomputed
// against the same text. path "" covers every file of the set, hunkID ""
// every open hunk of the file(s). Decided hunks keep their decisions. It
// returns the units proposed again, by their new ids.
//
// This is the way out of a stale hunk in every front end: Reject, or
// Repropose then decide.
func (b *Book) Repropose(ctx context.Context, ws *workspace.Workspace, s *Set, path, hunkID string) ([]string, error) {
	b.apply.Lock() // no resolve of the same files meanwhile
	defer b.apply.Unlock()
	b.mu.Lock()
	if s.Review != Before {
		b.mu.Unlock()
		return nil, fmt.Errorf("change set %s was written when it was proposed (review %q): its hunks cannot be stale; accept or reject them: %w", s.ID, s.Review, ErrNothingToRepropose)
	}
	units, err := s.Select(path, hunkID)
	if err != nil {
		b.mu.Unlock()
		return nil, err
	}
	var files []*File
	for _, u := range units {
		open := u.H != nil && (u.H.Status == Pending || u.H.Status == Stale) ||
			u.H == nil && u.F.Op == workspace.OpCreate && u.F.Status == Stale && !u.F.Binary
		if open && !containsFile(files, u.F) {
			files = append(files, u.F)
		}
	}
	b.mu.Unlock()
	if len(files) == 0 {
		return nil, fmt.Errorf("change set %s: no pending or stale hunk there: %w", s.ID, ErrNothingToRepropose)
	}
	var ids []string
	for _, f := range files {
		cur, err := ws.ReadFile(ctx, f.Path)
		b.mu.Lock()
		create := f.Op == workspace.OpCreate
		b.mu.Unlock()
		if err != nil && !(create && errors.Is(err, fs.ErrNotExist)) {
			return ids, fmt.Errorf("%s: %w", f.Path, err)
		}
		b.mu.Lock()
		var got []string
		if create {
			got, err = f.reproposeCreate(cur, err == nil), nil
		} else {
			got, err = f.repropose(cur, hunkID)
		}
		b.mu.Unlock()
		if err != nil {
			return ids, err
		}
		ids = append(ids, got...)
	}
	b.mu.Lock()
	s.finish()
	b.mu.Unlock()
	_ = b.record(s) // a failed save went to the keeper's onErr
	return ids, nil
}

func containsFile(fs []*File, f *File) bool {
	for _, g := range fs {
		if g == f {
			return true
		}
	}
	return false
}

// repropose recomputes f's open hunks against cur (see Book.Repropose);
// only is the one hunk to take again ("" all). The caller holds the book.
func (f *File) repropose(cur []byte, only string) ([]string, error) {
	f.rebase(cur) // the pending hunks follow the user's text where they can
	// The agent's text on top of cur: the open hunks that still apply,
	// then each stale one chosen, taking the agent's lines where the user
	// edited them.
	target := cur
	var open []diff.Hunk
	var stale, keep []*Hunk
	onCur := workspace.Hash(f.Old) == workspace.Hash(cur)
	for _, h := range f.Hunks {
		switch {
		case h.Status == Pending && onCur:
			open = append(open, h.Hunk)
		case h.Status == Pending || h.Status == Stale:
			if only == "" || h.ID == only || h.Status == Pending {
				stale = append(stale, h)
			} else {
				keep = append(keep, h)
			}
		default:
			keep = append(keep, h)
		}
	}
	if len(open) > 0 {
		t, err := diff.Apply(cur, open)
		if err != nil {
			return nil, fmt.Errorf("%s: the pending hunks no longer apply: %w", f.Path, err)
		}
		target = t
	}
	for _, h := range stale {
		base := h.Base
		if base == nil {
			base = f.Old
		}
		theirs, err := diff.Apply(base, []diff.Hunk{h.Hunk})
		if err != nil {
			return nil, fmt.Errorf("%s: hunk %s no longer applies to the text it was computed on: %w", f.Path, h.ID, err)
		}
		target, _ = diff.Merge3Theirs(base, target, theirs)
	}
	// Decided hunks keep their decisions; their coordinates were for Old.
	for _, h := range keep {
		switch {
		case h.Status == Accepted:
			h.InOld = true // cur holds it
		case h.Status == Rejected && h.Base == nil && !onCur:
			h.Base = f.Old // an undo of the rejection merges from there
		case h.Status == Stale && h.Base == nil:
			h.Base = f.Old
		}
	}
	f.Old, f.New, f.BaseHash = cur, target, workspace.Hash(cur)
	f.Hunks = keep
	var ids []string
	for _, h := range diff.Compute(f.Path, f.Path, cur, target).Hunks {
		f.Hunks = append(f.Hunks, &Hunk{ID: h.ID, Status: Pending, Hunk: h})
		ids = append(ids, h.ID)
	}
	return ids, nil
}

// reproposeCreate proposes a stale creation again (see Book.Repropose):
// the file exists now (exists) with cur, so the agent's text becomes a
// change of cur, hunk by hunk, pending; a file gone again makes it a
// pending creation again. The caller holds the book.
func (f *File) reproposeCreate(cur []byte, exists bool) []string {
	if !exists {
		f.Status = Pending
		for _, h := range f.Hunks {
			h.Status, h.Reason = Pending, ""
		}
		return []string{f.Path}
	}
	f.Op, f.Old, f.BaseHash, f.Status = workspace.OpModify, cur, workspace.Hash(cur), Pending
	f.Hunks = nil
	var ids []string
	for _, h := range diff.Compute(f.Path, f.Path, cur, f.New).Hunks {
		f.Hunks = append(f.Hunks, &Hunk{ID: h.ID, Status: Pending, Hunk: h})
		ids = append(ids, h.ID)
	}
	fc := f.change()
	f.Whole = fc.WholeFile()
	if f.Whole {
		ids = []string{f.Path} // the same text (or a link): one unit
	}
	return ids
}
