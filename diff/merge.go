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
//
// A line break added or taken away at the very end of the file (an
// editor that saves with a final newline, Neovim's fixeol, the agent's
// text had none) is no change of the agent's last line: the merge is
// made as if base and theirs ended as ours does, so the file keeps the
// final newline state ours gave it (FinalNewlineOnly).
func Merge3Revert(base, ours, theirs []byte) (merged []byte, conflicts []Conflict) {
	base, theirs = endAsOurs(base, ours, theirs)
	return merge3(base, ours, theirs, ruleRevert, false)
}

// Merge3RevertTheirs is Merge3Revert that takes theirs (the state before
// the change) where the two sides conflict: an undo told to overwrite the
// user's edits replaces only the lines where they clash with the agent's,
// and keeps the user's other lines (the conflicts are still reported).
func Merge3RevertTheirs(base, ours, theirs []byte) (merged []byte, conflicts []Conflict) {
	base, theirs = endAsOurs(base, ours, theirs)
	return merge3(base, ours, theirs, ruleRevert, true)
}

// FinalNewlineOnly reports whether a and b differ only in a line break at
// the very end: one is the other with "\n" (or "\r\n") added.
func FinalNewlineOnly(a, b []byte) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(a) == 0 || !bytes.HasPrefix(b, a) || hasFinalNewline(a) {
		return false
	}
	rest := string(b[len(a):])
	return rest == "\n" || rest == "\r\n"
}

func hasFinalNewline(b []byte) bool { return len(b) > 0 && b[len(b)-1] == '\n' }

// endAsOurs makes base and theirs end as ours does (with or without a
// final line break) when ours changed that against base, so the merge
// sees no change of the last line where there is only the line break.
func endAsOurs(base, ours, theirs []byte) ([]byte, []byte) {
	if len(base) == 0 || len(ours) == 0 || hasFinalNewline(base) == hasFinalNewline(ours) {
		return base, theirs
	}
	return setFinalNewline(base, ours), setFinalNewline(theirs, ours)
}

// setFinalNewline is b ending as like does: with like's final line break
// ("\n" or "\r\n"), or without one. An empty b stays empty.
func setFinalNewline(b, like []byte) []byte {
	if len(b) == 0 {
		return b
	}
	trimmed := bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
	if !hasFinalNewline(b) {
		trimmed = b
	}
	if !hasFinalNewline(like) {
		return trimmed
	}
	eol := "\n"
	if bytes.HasSuffix(like, []byte("\r\n")) {
		eol = "\r\n"
	}
	return append(append([]byte(nil), trimmed...), eol...)
}

// Merge3Theirs is Merge3Adjacent that takes theirs where the two sides
// conflict (the conflicts are still reported): a hunk proposed again over
// the user's edit of the lines it changes, for the user to review.
func Merge3Theirs(base, ours, theirs []byte) (merged []byte, conflicts []Conflict) {
	return merge3(base, ours, theirs, ruleAdjacent, true)
}

// Merge3Words is Merge3Theirs that first looks inside the lines both sides
// changed, word by word (Words' words): where the two sides' changes of
// those lines touch different words, both are kept and there is no
// conflict (the user typed "_ = 1; " before a call whose argument the
// agent changed: the result has both). Only where they change the same
// words does theirs win, for the whole region, as in Merge3Theirs. This is
// how a hunk is proposed again over the user's typing: nothing the user
// typed outside the agent's own words is dropped.
func Merge3Words(base, ours, theirs []byte) (merged []byte, conflicts []Conflict) {
	return merge3(base, ours, theirs, ruleAdjacent|refineWords, true)
}

// Merge rules: which changes of the two sides make one region.
const (
	ruleGit      = iota // changes that overlap or touch
	ruleAdjacent        // changes that overlap, or two at one insertion point
	ruleRevert          // ruleAdjacent, but at an insertion point only insertions join
	ruleWords           // ruleRevert, and an insertion starts the group at a tie

	refineWords = 1 << 4 // a flag: regions both sides changed are merged word by word first
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
	out, conflicts, err := mergeSeq(b, o, t, rule, theirsWins)
	if err != nil {
		// Too large to diff: one conflict over the whole file.
		all := []Conflict{{BaseStart: 1, BaseLines: len(b), Ours: string(ours), Theirs: string(theirs)}}
		if theirsWins {
			return theirs, all
		}
		return ours, all
	}
	return []byte(out), conflicts
}

// mergeWords merges one region both sides changed, word by word; ok is
// false when the two sides change the same words (or the region is too
// large to diff).
func mergeWords(base, ours, theirs string) (string, bool) {
	b, _ := tokenize(base)
	o, _ := tokenize(ours)
	t, _ := tokenize(theirs)
	out, conflicts, err := mergeSeq(b, o, t, ruleWords, false)
	return out, err == nil && len(conflicts) == 0
}

// mergeSeq is the three-way merge of sequences of lines (or words), each
// element written as it is.
func mergeSeq(b, o, t []string, rule int, theirsWins bool) (string, []Conflict, error) {
	refine := rule&refineWords != 0
	rule &^= refineWords
	var conflicts []Conflict
	co, err := diffStrings(b, o)
	if err != nil {
		return "", nil, err
	}
	ct, err := diffStrings(b, t)
	if err != nil {
		return "", nil, err
	}
	n := 0
	for _, l := range o {
		n += len(l)
	}
	var out strings.Builder
	out.Grow(n)
	pos := 0 // next base line to copy
	i, j := 0, 0
	for i < len(co) || j < len(ct) {
		// Start a group with the earliest change, then pull in every change
		// of either side that overlaps or touches it.
		lo := 0
		switch {
		case rule == ruleWords && i < len(co) && j < len(ct) && co[i].A0 == ct[j].A0 &&
			co[i].A1 > co[i].A0 && ct[j].A1 == ct[j].A0:
			// An insertion starts the group at a tie, so that a change
			// beginning where it is inserted does not join it.
			lo = ct[j].A0
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
			case ruleRevert, ruleWords:
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
			if refine {
				if m, ok := mergeWords(strings.Join(b[lo:hi], ""), os.String(), ts.String()); ok {
					out.WriteString(m)
					continue
				}
			}
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
	return out.String(), conflicts, nil
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
