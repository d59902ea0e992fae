package diff

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// errTooLarge reports an input go-diff cannot handle: more distinct lines
// than there are Unicode code points to stand for them.
var errTooLarge = errors.New("diff: too many distinct lines to diff")

// maxRunes is the number of valid Unicode scalar values. go-diff converts
// rune slices to strings, so each distinct line needs one of them
// (surrogates would collapse into U+FFFD); rune 0 is not used, which leaves
// maxRunes-1 distinct lines.
const maxRunes = utf8.MaxRune + 1 - (0xE000 - 0xD800)

// maxDistinct is a tunable (tests lower it) bounding the distinct lines
// handed to go-diff; never above maxRunes.
var maxDistinct int = maxRunes

// change replaces a[A0:A1] by b[B0:B1]. A diff is a list of changes in
// increasing order, separated by at least one equal element.
type change struct {
	A0, A1, B0, B1 int
}

// runeFor returns the rune standing for the n-th distinct line: valid,
// never 0 (which marks "unassigned") and never a surrogate.
func runeFor(n int) rune {
	r := rune(n + 1)
	if r >= 0xD800 {
		r += 0xE000 - 0xD800
	}
	return r
}

// diffStrings returns a minimal edit script turning a into b, where each
// element is compared as a whole (lines with their terminators, or words).
//
// The common prefix and suffix are trimmed first; then every element that
// occurs in only one of the two sequences is dropped, because it cannot be
// part of any common subsequence (as git's xdiff does). go-diff's Myers
// implementation runs on what is left, with no time limit so the result stays
// minimal, and its matches are mapped back to the original positions.
func diffStrings(a, b []string) (chs []change, err error) {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	switch {
	case len(am) == 0 && len(bm) == 0:
		return nil, nil
	case len(am) == 0 || len(bm) == 0:
		return []change{{pre, pre + len(am), pre, pre + len(bm)}}, nil
	}

	// Intern the elements of the middle parts.
	in := newInterner(len(am))
	ida := make([]int32, len(am))
	idb := make([]int32, len(bm))
	for i, s := range am {
		ida[i] = in.intern(s)
	}
	nA := len(in.strs)
	inB := make([]bool, nA)
	for i, s := range bm {
		id := in.lookup(s)
		if id >= 0 {
			inB[id] = true
		}
		idb[i] = id
	}

	// Keep only the elements present on both sides; give each distinct kept
	// element its own rune.
	runeOf := make([]rune, nA)
	next := rune(0)
	ra := make([]rune, 0, len(am))
	xa := make([]int32, 0, len(am))
	for i, id := range ida {
		if !inB[id] {
			continue
		}
		r := runeOf[id]
		if r == 0 {
			if int(next) >= min(maxDistinct, maxRunes-1) {
				return nil, errTooLarge
			}
			r = runeFor(int(next))
			runeOf[id] = r
			next++
		}
		ra = append(ra, r)
		xa = append(xa, int32(i))
	}
	rb := make([]rune, 0, len(bm))
	xb := make([]int32, 0, len(bm))
	for i, id := range idb {
		if id < 0 || runeOf[id] == 0 {
			continue
		}
		rb = append(rb, runeOf[id])
		xb = append(xb, int32(i))
	}

	diffs, err := runGoDiff(ra, rb)
	if err != nil {
		return nil, err
	}

	// Walk go-diff's answer; every equal rune is a matched pair of elements.
	pa, pb := 0, 0 // next unmatched positions in am, bm
	i, j := 0, 0   // positions in ra, rb
	emit := func(x, y int) {
		if x > pa || y > pb {
			chs = append(chs, change{pre + pa, pre + x, pre + pb, pre + y})
		}
		pa, pb = x+1, y+1
	}
	for _, d := range diffs {
		n := utf8.RuneCountInString(d.Text)
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			for k := 0; k < n; k++ {
				emit(int(xa[i]), int(xb[j]))
				i++
				j++
			}
		case diffmatchpatch.DiffDelete:
			i += n
		case diffmatchpatch.DiffInsert:
			j += n
		}
	}
	if i != len(ra) || j != len(rb) {
		return nil, fmt.Errorf("diff: internal error: go-diff covered %d/%d and %d/%d elements", i, len(ra), j, len(rb))
	}
	if pa < len(am) || pb < len(bm) {
		chs = append(chs, change{pre + pa, pre + len(am), pre + pb, pre + len(bm)})
	}
	return chs, nil
}

// runGoDiff runs go-diff's Myers diff on two rune sequences with no time
// limit. go-diff panics on some inputs too large for it; that becomes
// errTooLarge instead of a crash.
func runGoDiff(a, b []rune) (diffs []diffmatchpatch.Diff, err error) {
	defer func() {
		if r := recover(); r != nil {
			diffs, err = nil, fmt.Errorf("%w: go-diff: %v", errTooLarge, r)
		}
	}()
	dmp := diffmatchpatch.New()
	// The default of 1s makes go-diff give up and return a bloated diff.
	dmp.DiffTimeout = 0
	return dmp.DiffMainRunes(a, b, false), nil
}

// interner numbers distinct strings. It is an open-addressing hash table
// specialised for this one job (insert from one side, look up from the
// other), which is markedly faster than a map[string]int32 here.
type interner struct {
	seed   maphash.Seed
	slots  []int32 // id+1, or 0 for empty
	mask   uint64
	hashes []uint64 // per id
	strs   []string // per id
}

func newInterner(n int) *interner {
	size := 1 << bits.Len(uint(2*n+1))
	return &interner{
		seed:   maphash.MakeSeed(),
		slots:  make([]int32, size),
		mask:   uint64(size - 1),
		hashes: make([]uint64, 0, n),
		strs:   make([]string, 0, n),
	}
}

// intern returns s's id, adding s if it is new. The table never fills: it
// has room for twice the strings newInterner was told about.
func (t *interner) intern(s string) int32 {
	h := maphash.String(t.seed, s)
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		slot := t.slots[i]
		if slot == 0 {
			id := int32(len(t.strs))
			t.slots[i] = id + 1
			t.hashes = append(t.hashes, h)
			t.strs = append(t.strs, s)
			return id
		}
		if id := slot - 1; t.hashes[id] == h && t.strs[id] == s {
			return id
		}
	}
}

// lookup returns s's id or -1.
func (t *interner) lookup(s string) int32 {
	h := maphash.String(t.seed, s)
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		slot := t.slots[i]
		if slot == 0 {
			return -1
		}
		if id := slot - 1; t.hashes[id] == h && t.strs[id] == s {
			return id
		}
	}
}
