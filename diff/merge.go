package diff

import (
	"bytes"
	"strings"
)

// Merge3 merges the changes base->ours and base->theirs, line by line.
// Changes to separate regions are combined; the same change made on both
// sides is taken once. When both sides change the same or adjoining base
// lines differently (git's rule), the result keeps ours there and the region
// is reported as a conflict; BaseStart is the 1-based first line of the
// region in base (for an empty region, the line after the insertion point).
func Merge3(base, ours, theirs []byte) (merged []byte, conflicts []Conflict) {
	return merge3(base, ours, theirs, ruleGit, false)
}

// Merge3Adjacent is Merge3 for review, where theirs is a hunk the agent
// proposed and ours is the user's typing: changes that only adjoin (one
// ends on the base line where the other begins) are combined, so an edit of
// a hunk's context line keeps the hunk. Only changes that overlap, or two
// insertions at the same point (whose order nobody can tell), conflict.
func Merge3Adjacent(base, ours, theirs []byte) (merged []byte, conflicts []Conflict) {
	return merge3(base, ours, theirs, ruleAdjacent, false)
}

// Merge3Revert is Merge3Adjacent for taking a change back (base the
// change's result, ours the file now, theirs the state before the
// change): an insertion at the point where the other side's change
// begins goes before it, unless both insert there (whose order nobody can
// tell), so a line typed just above the agent's changed lines stays.
func Merge3Revert(base, ours, theirs []byte) (merged []byte, conflicts []Conflict) {
	return merge3(base, ours, theirs, ruleRevert, false)
}

// Merge3Theirs is Merge3Adjacent that takes theirs where the two sides
// conflict (the conflicts are still reported): a hunk proposed again over
// the user's edit of the lines it changes, for the user to review.
func Merge3Theirs(base, ours, theirs []byte) (merged []byte, conflicts []Conflict) {
	return merge3(base, ours, theirs, ruleAdjacent, true)
}

// Merge rules: which changes of the two sides make one region.
const (
	ruleGit      = iota // changes that overlap or touch
	ruleAdjacent        // changes that overlap, or two at one insertion point
	ruleRevert          // ruleAdjacent, but at an insertion point only insertions join
)

func merge3(base, ours, theirs []byte, rule int, theirsWins bool) (merged []byte, conflicts []Conflict) {
	switch {
	case bytes.Equal(ours, theirs) || bytes.Equal(base, theirs):
		return ours, nil
	case bytes.Equal(base, ours):
		return theirs, nil
	}
	b := splitLines(string(base))
	o := splitLines(string(ours))
	t := splitLines(string(theirs))
	co, err1 := diffStrings(b, o)
	ct, err2 := diffStrings(b, t)
	if err1 != nil || err2 != nil {
		// Too large to diff: one conflict over the whole file.
		all := []Conflict{{BaseStart: 1, BaseLines: len(b), Ours: string(ours), Theirs: string(theirs)}}
		if theirsWins {
			return theirs, all
		}
		return ours, all
	}

	var out strings.Builder
	out.Grow(max(len(ours), len(theirs)))
	pos := 0 // next base line to copy
	i, j := 0, 0
	for i < len(co) || j < len(ct) {
		// Start a group with the earliest change, then pull in every change
		// of either side that overlaps or touches it.
		lo := 0
		switch {
		case j >= len(ct) || i < len(co) && co[i].A0 <= ct[j].A0:
			lo = co[i].A0
		default:
			lo = ct[j].A0
		}
		hi := lo
		i0, j0 := i, j
		// joins tells whether a change starting at base line a belongs to
		// the group [lo, hi): git's rule takes one that touches it; the
		// adjacent rule only one that overlaps it, or one at the point of
		// a group that is still an insertion there.
		joins := func(c change) bool {
			switch rule {
			case ruleGit:
				return c.A0 <= hi
			case ruleRevert:
				// The group's first change always; at an insertion
				// point, only another insertion.
				first := i == i0 && j == j0
				return c.A0 < hi || c.A0 == hi && hi == lo && (first || c.A1 == c.A0)
			}
			return c.A0 < hi || c.A0 == hi && hi == lo
		}
		for {
			if i < len(co) && joins(co[i]) {
				hi = max(hi, co[i].A1)
				i++
			} else if j < len(ct) && joins(ct[j]) {
				hi = max(hi, ct[j].A1)
				j++
			} else {
				break
			}
		}
		for _, l := range b[pos:lo] {
			out.WriteString(l)
		}
		pos = hi
		switch {
		case j == j0: // only ours changed this region
			writeRegion(&out, b, o, co[i0:i], lo, hi)
		case i == i0: // only theirs
			writeRegion(&out, b, t, ct[j0:j], lo, hi)
		default:
			var os, ts strings.Builder
			writeRegion(&os, b, o, co[i0:i], lo, hi)
			writeRegion(&ts, b, t, ct[j0:j], lo, hi)
			if theirsWins {
				out.WriteString(ts.String())
			} else {
				out.WriteString(os.String())
			}
			if os.String() != ts.String() {
				conflicts = append(conflicts, Conflict{
					BaseStart: lo + 1,
					BaseLines: hi - lo,
					Ours:      os.String(),
					Theirs:    ts.String(),
				})
			}
		}
	}
	for _, l := range b[pos:] {
		out.WriteString(l)
	}
	return []byte(out.String()), conflicts
}

// writeRegion writes base[lo:hi] as side has it after the given changes
// (which all lie within [lo, hi]).
func writeRegion(out *strings.Builder, base, side []string, chs []change, lo, hi int) {
	pos := lo
	for _, c := range chs {
		for _, l := range base[pos:c.A0] {
			out.WriteString(l)
		}
		for _, l := range side[c.B0:c.B1] {
			out.WriteString(l)
		}
		pos = c.A1
	}
	for _, l := range base[pos:hi] {
		out.WriteString(l)
	}
}
