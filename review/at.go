package review

import "sort"

// Starts is where each of f's hunks starts in the file as it is now
// (0-based line, in the order of f.Hunks): the protocol's hunk `at`. An
// editor draws a hunk there until it tracks the hunk itself, so no editor
// works out how decisions moved the rest.
//
// A hunk's ranges are those of the text the set was computed on, which
// decisions do not rebase: in `before` mode the file is Old with the
// accepted hunks written in (each moves the hunks below it by the lines it
// adds), in `after` mode New with the rejected hunks taken out again (each
// moves the hunks below it by the lines it removes). An accepted hunk Old
// holds already (InOld: a rebase took the user's text with it as Old) moves
// nothing, as the ranges of the rest are Old's. A hunk starts where the side
// the file holds now begins: its old text while open or rejected in
// `before` mode, its new text once accepted.
//
// A stale hunk, or a rejected one the user edited into, was computed on
// another text (Base): it is placed by the same rule, the best place
// known until the user undoes the clash.
func (f *File) Starts(mode Mode) []int {
	type move struct{ at, delta int }
	var moves []move
	start := func(h *Hunk) int {
		if mode == After {
			return line0(h.Hunk.NewStart)
		}
		return line0(h.Hunk.OldStart)
	}
	for _, h := range f.Hunks {
		switch {
		case mode == After && h.Status == Rejected:
			moves = append(moves, move{start(h), h.Hunk.OldLines - h.Hunk.NewLines})
		case mode != After && h.Status == Accepted && !h.InOld:
			moves = append(moves, move{start(h), h.Hunk.NewLines - h.Hunk.OldLines})
		}
	}
	sort.Slice(moves, func(i, j int) bool { return moves[i].at < moves[j].at })
	// sum[i] is the move of every hunk starting before moves[i].
	sum := make([]int, len(moves)+1)
	for i, m := range moves {
		sum[i+1] = sum[i] + m.delta
	}
	out := make([]int, len(f.Hunks))
	for i, h := range f.Hunks {
		s := start(h)
		n := sort.Search(len(moves), func(k int) bool { return moves[k].at >= s })
		out[i] = max(s+sum[n], 0)
	}
	return out
}

// line0 is the 0-based line of a hunk's 1-based start, as the protocol's
// ranges have it (an insertion into an empty file starts at 0).
func line0(start int) int {
	if start > 0 {
		return start - 1
	}
	return 0
}
