package review

import (
	"slices"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/workspace"
)

// StaleReason is the reason a hunk becomes stale when the user edits where
// it applies.
const StaleReason = "the file was edited where this hunk applies"

// Rebase moves the open hunks of every `before` set that changes path onto
// text, the file as the user has it now (three-way: the set's base ->
// text against the base -> the hunks). When that merges cleanly the open
// hunks are recomputed against text (new ids, new ranges); otherwise the
// open hunks are marked stale, and retried at the next edit. It returns
// the sets it changed (and records them in the journal after
// RecordDelay, see Book.later); read them inside Read.
func (b *Book) Rebase(path string, text []byte) []*Set {
	changed := b.rebase(path, text)
	b.later(changed)
	return changed
}

func (b *Book) rebase(path string, text []byte) []*Set {
	b.mu.Lock()
	defer b.mu.Unlock()
	var changed []*Set
	for _, s := range b.sets {
		if s.Review != Before {
			continue
		}
		hit := false
		for _, f := range s.Files {
			if f.Path == path && !f.WholeFile() && f.rebase(text) {
				hit = true
			}
		}
		if hit {
			changed = append(changed, s)
		}
	}
	return changed
}

// rebase rebases f's open (pending or stale) hunks onto user, one at a
// time in order: a hunk that merges cleanly (three-way, together with the
// accepted hunks and the open ones kept so far) is kept and recomputed
// against user; one that clashes with the user's edits is stale. A stale
// hunk keeps the text it was computed against (Base) and is retried at
// every edit, so it comes back when the user undoes the clash. It reports
// whether anything changed.
func (f *File) rebase(user []byte) bool {
	var open, retry, decided []*Hunk
	var base []diff.Hunk // accepted: in the file already
	for _, h := range f.Hunks {
		switch {
		case h.Status == Stale && h.Base != nil:
			retry = append(retry, h)
		case h.Status == Pending || h.Status == Stale:
			open = append(open, h)
		case h.Status == Accepted && !h.InOld:
			decided = append(decided, h)
			base = append(base, h.Hunk)
		default:
			decided = append(decided, h)
		}
	}
	// Text equal to the base changes nothing, unless a stale hunk may
	// come back: the user took back the edit that made it stale.
	if len(open)+len(retry) == 0 || len(retry) == 0 && workspace.Hash(user) == f.BaseHash {
		return false
	}
	var good []diff.Hunk
	var stale []*Hunk
	merged := user
	fast, shifted := f.shiftMerge(user, open)
	for _, h := range open {
		if shifted {
			good, merged = append(good, h.Hunk), fast
			continue
		}
		cand := append(append(slices.Clone(base), good...), h.Hunk)
		theirs, err := diff.Apply(f.Old, cand)
		if err == nil {
			m, conflicts := diff.Merge3Adjacent(f.Old, user, theirs)
			if len(conflicts) == 0 {
				good, merged = append(good, h.Hunk), m
				continue
			}
		}
		h.Base = f.Old
		stale = append(stale, h)
	}
	revived := false
	for _, h := range retry {
		if theirs, err := diff.Apply(h.Base, []diff.Hunk{h.Hunk}); err == nil {
			if m, conflicts := diff.Merge3Adjacent(h.Base, merged, theirs); len(conflicts) == 0 {
				merged, revived = m, true
				continue
			}
		}
		stale = append(stale, h)
	}
	changed := false
	for _, h := range stale {
		if h.Status != Stale {
			h.Status, h.Reason = Stale, StaleReason
			changed = true
		}
	}
	if len(good) == 0 && !revived {
		return changed
	}
	fd := diff.Compute(f.Path, f.Path, user, merged)
	p, q, delta := -1, 0, 0 // the user's edit, found at the first rejected hunk
	for _, h := range decided {
		switch {
		case h.Status == Accepted:
			h.InOld = true // the user's text, now Old, holds it
		case h.Status == Rejected && h.Base == nil:
			if p < 0 {
				old, usr := splitAfter(f.Old), splitAfter(user)
				var s int
				p, q, s = changedLines(old, usr)
				delta = (len(usr) - s - p) - (q - p)
			}
			followRejected(f.Path, f.Old, user, p, q, delta, h)
		}
	}
	f.Old, f.New, f.BaseHash = user, merged, workspace.Hash(user)
	f.Hunks = append(decided, stale...)
	for _, h := range fd.Hunks {
		f.Hunks = append(f.Hunks, &Hunk{ID: h.ID, Status: Pending, Hunk: h})
	}
	return true
}
