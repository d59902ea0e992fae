package diff

import (
	"bytes"
	"fmt"
	"slices"
)

// HunkError says which hunk could not be applied or reverted and why.
type HunkError struct {
	ID       string
	OldStart int // the hunk's header position
	Reason   string
}

func (e *HunkError) Error() string {
	return fmt.Sprintf("diff: hunk %s (at line %d): %s", e.ID, e.OldStart, e.Reason)
}

// placement is one hunk to splice into a file: from is searched for near
// guess (a 0-based line index) and replaced by to.
type placement struct {
	hunk     *Hunk
	from, to []string
	guess    int
}

// Apply applies the given hunks (a subset of a diff computed against old, in
// any order) to old. A hunk whose old side does not match at its position is
// searched for nearby (as patch does, without fuzz); if it cannot be placed,
// or it would overlap another hunk, Apply fails with a *HunkError naming the
// hunk.
func Apply(old []byte, hunks []Hunk) ([]byte, error) {
	sorted := sortedHunks(hunks)
	ps := make([]placement, len(sorted))
	for i, h := range sorted {
		ps[i] = placement{hunk: h, from: sideLines(h, Insert), to: sideLines(h, Delete), guess: oldPos(h)}
	}
	return splice(old, ps)
}

// Revert undoes hunks that were applied to produce cur: cur is expected to
// be old with exactly these hunks applied (Apply(old, hunks)), possibly with
// other edits elsewhere.
func Revert(cur []byte, hunks []Hunk) ([]byte, error) {
	sorted := sortedHunks(hunks)
	ps := make([]placement, len(sorted))
	shift := 0 // how far earlier hunks moved this one in cur
	for i, h := range sorted {
		from, to := sideLines(h, Delete), sideLines(h, Insert)
		ps[i] = placement{hunk: h, from: from, to: to, guess: oldPos(h) + shift}
		shift += len(from) - len(to)
	}
	return splice(cur, ps)
}

func sortedHunks(hunks []Hunk) []*Hunk {
	s := make([]*Hunk, len(hunks))
	for i := range hunks {
		s[i] = &hunks[i]
	}
	slices.SortStableFunc(s, func(a, b *Hunk) int { return oldPos(a) - oldPos(b) })
	return s
}

// oldPos is the 0-based index of the first line of h's old side in the file
// it was computed against; an empty old side sits after line OldStart.
func oldPos(h *Hunk) int {
	if countSide(h, Insert) == 0 {
		return h.OldStart
	}
	return max(h.OldStart-1, 0)
}

func countSide(h *Hunk, skip LineKind) int {
	n := 0
	for _, l := range h.Lines {
		if l.Kind != skip {
			n++
		}
	}
	return n
}

// sideLines returns the raw lines (with terminators) of one side of h.
func sideLines(h *Hunk, skip LineKind) []string {
	out := make([]string, 0, len(h.Lines))
	for _, l := range h.Lines {
		if l.Kind != skip {
			out = append(out, l.Text+l.EOL)
		}
	}
	return out
}

// splice places every hunk (sorted by guess) at the match of its from-lines
// nearest its guess, after the previous hunk, and builds the result.
func splice(data []byte, ps []placement) ([]byte, error) {
	lines := splitLines(string(data))
	type spot struct{ at, n int }
	spots := make([]spot, len(ps))
	lo := 0     // the next hunk may not start before here
	offset := 0 // how far the previous hunk was from its guess
	for i, p := range ps {
		at := find(lines, p.from, p.guess+offset, lo)
		if at < 0 {
			at = find(lines, p.from, p.guess, lo)
		}
		if at < 0 {
			reason := "its old lines are not in the file"
			if lo > 0 && find(lines, p.from, p.guess, 0) >= 0 {
				reason = "it overlaps another hunk"
			}
			return nil, &HunkError{ID: p.hunk.ID, OldStart: p.hunk.OldStart, Reason: reason}
		}
		spots[i] = spot{at, len(p.from)}
		offset = at - p.guess
		lo = at + len(p.from)
	}
	var out bytes.Buffer
	out.Grow(len(data) + 64)
	prev := 0
	for i, p := range ps {
		for _, l := range lines[prev:spots[i].at] {
			out.WriteString(l)
		}
		for _, l := range p.to {
			out.WriteString(l)
		}
		prev = spots[i].at + spots[i].n
	}
	for _, l := range lines[prev:] {
		out.WriteString(l)
	}
	return out.Bytes(), nil
}

// find returns the index (>= lo) where lines holds want, closest to guess,
// or -1. A line without a terminator only matches the file's last line.
func find(lines, want []string, guess, lo int) int {
	hi := len(lines) - len(want) // last possible start
	if hi < lo {
		return -1
	}
	guess = min(max(guess, lo), hi)
	match := func(at int) bool {
		for k, w := range want {
			if lines[at+k] != w {
				return false
			}
		}
		return true
	}
	for d := 0; guess-d >= lo || guess+d <= hi; d++ {
		if at := guess - d; at >= lo && match(at) {
			return at
		}
		if at := guess + d; d > 0 && at <= hi && match(at) {
			return at
		}
	}
	return -1
}
