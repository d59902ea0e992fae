package review

import (
	"bytes"

	"github.com/agentd/agentd/diff"
)

// shiftMerge is rebase's fast path for the common case of a user typing
// away from every open hunk: when the lines the user changed (against the
// text the hunks were computed on) are at least one line away from every
// pending hunk, context included, each pending hunk merges cleanly and only
// moves. The merged text is then the agent's text with the user's lines
// spliced in, found in O(file) instead of one three-way merge per hunk
// (200 hunks: about 100 ms per keystroke). ok is false when an open hunk is
// near the edit, or the file has accepted hunks Old does not hold yet; the caller then merges hunk
// by hunk. The result is the text the three-way merge computes
// (TestShiftMergeAgreesWithMerge3).
func (f *File) shiftMerge(user []byte, open []*Hunk) (merged []byte, ok bool) {
	old := splitAfter(f.Old)
	usr := splitAfter(user)
	p, q, s := changedLines(old, usr)
	for _, h := range f.Hunks {
		if h.Status == Accepted && !h.InOld {
			return nil, false
		}
	}
	for _, h := range open {
		a, b := oldSpan(h.Hunk)
		if !(b < p || a > q) {
			return nil, false
		}
	}
	// The agent's text: the open hunks applied to the text they were
	// computed on. Every hunk before the edit moved it by its line delta.
	hunks := make([]diff.Hunk, len(open))
	off := 0
	for i, h := range open {
		hunks[i] = h.Hunk
		if _, b := oldSpan(h.Hunk); b < p {
			off += h.Hunk.NewLines - h.Hunk.OldLines
		}
	}
	theirs, err := diff.Apply(f.Old, hunks)
	if err != nil {
		return nil, false
	}
	nw := splitAfter(theirs)
	if p+off < 0 || q+off > len(nw) || p+off > q+off {
		return nil, false
	}
	var out bytes.Buffer
	out.Grow(len(user) + len(theirs) - len(f.Old))
	for _, l := range nw[:p+off] {
		out.Write(l)
	}
	for _, l := range usr[p : len(usr)-s] {
		out.Write(l)
	}
	for _, l := range nw[q+off:] {
		out.Write(l)
	}
	return out.Bytes(), true
}

// changedLines finds the lines the user changed: old[p:q] became
// usr[p:len(usr)-s] (the common prefix and suffix trimmed).
func changedLines(old, usr [][]byte) (p, q, s int) {
	for p < len(old) && p < len(usr) && bytes.Equal(old[p], usr[p]) {
		p++
	}
	for s < len(old)-p && s < len(usr)-p && bytes.Equal(old[len(old)-1-s], usr[len(usr)-1-s]) {
		s++
	}
	return p, len(old) - s, s
}

// followRejected moves a rejected hunk (not in the file, so in neither
// old nor user) from old, the text its coordinates are for, onto user, so
// that undoing the rejection later puts it where its lines are now and
// not where lines of the same text happen to be at its old numbers. A hunk
// at least a line away from the user's edit (old[p:q], delta lines more
// in user) only shifts; one nearer is moved by a three-way merge; one the
// user edited into keeps old as its Base, from which an undo merges.
func followRejected(path string, old, user []byte, p, q, delta int, h *Hunk) {
	switch a, b := oldSpan(h.Hunk); {
	case b < p:
		return
	case a > q:
		h.Hunk.OldStart += delta
		h.Hunk.NewStart += delta
		return
	}
	if theirs, err := diff.Apply(old, []diff.Hunk{h.Hunk}); err == nil {
		if m, conflicts := diff.Merge3Adjacent(old, user, theirs); len(conflicts) == 0 {
			if fd := diff.Compute(path, path, user, m); len(fd.Hunks) == 1 {
				nh := fd.Hunks[0]
				nh.ID = h.Hunk.ID
				h.Hunk = nh
				return
			}
		}
	}
	h.Base = old
}

// oldSpan is the 0-based half-open range of old lines a hunk covers,
// context included (a pure insertion covers the point where it goes).
func oldSpan(h diff.Hunk) (a, b int) {
	a = h.OldStart - 1
	if h.OldLines == 0 {
		a = h.OldStart // inserted after line OldStart
	}
	return a, a + h.OldLines
}

func splitAfter(b []byte) [][]byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.SplitAfter(b, []byte("\n"))[:bytes.Count(b, []byte("\n"))+boolInt(b[len(b)-1] != '\n')]
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
