package review

import (
	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/engine"
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
// the sets it changed; read them inside Read.
func (b *Book) Rebase(path string, text []byte) []*Set {
	b.mu.Lock()
	defer b.mu.Unlock()
	var changed []*Set
	for _, s := range b.sets {
		if s.Review != engine.ReviewBefore {
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

// rebase rebases f's open (pending or stale) hunks onto user and reports
// whether anything changed.
func (f *File) rebase(user []byte) bool {
	var open, kept []*Hunk
	var applied []diff.Hunk
	for _, h := range f.Hunks {
		switch h.Status {
		case Pending, Stale:
			open = append(open, h)
			applied = append(applied, h.Hunk)
		case Accepted:
			kept = append(kept, h)
			applied = append(applied, h.Hunk)
		default:
			kept = append(kept, h)
		}
	}
	if len(open) == 0 || workspace.Hash(user) == f.BaseHash {
		return false
	}
	theirs, err := diff.Apply(f.Old, applied)
	var conflicts []diff.Conflict
	var merged []byte
	if err == nil {
		merged, conflicts = diff.Merge3(f.Old, user, theirs)
	}
	if err != nil || len(conflicts) > 0 {
		changed := false
		for _, h := range open {
			if h.Status != Stale {
				h.Status, h.Reason = Stale, StaleReason
				changed = true
			}
		}
		return changed
	}
	fd := diff.Compute(f.Path, f.Path, user, merged)
	f.Old, f.New, f.BaseHash = user, merged, workspace.Hash(user)
	f.Hunks = kept
	for _, h := range fd.Hunks {
		f.Hunks = append(f.Hunks, &Hunk{ID: h.ID, Status: Pending, Hunk: h})
	}
	return true
}
