package tools

import (
	"bytes"
	"math"
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// The prefilter of search_code: a sequence of byte sets that every match of
// the pattern must contain contiguously ("EXPORT_SYMBOL", or for
// `[A-Z]{4}_[0-9]{4}` four upper-case letters, "_", four digits). Stretches
// of a file without it are never given to the regexp engine; most files are
// skipped after one vectorised scan, which keeps search_code close to
// ripgrep on large trees.

// byteSet is the set of bytes one position of a match may hold.
type byteSet struct {
	in [256]bool
	n  int
}

func (s *byteSet) add(c byte) {
	if !s.in[c] {
		s.in[c] = true
		s.n++
	}
}

// freq estimates how often a byte of the set occurs in source code, in
// parts per million.
func (s *byteSet) freq() float64 {
	f := 0.0
	for c, ok := range s.in {
		if ok {
			f += float64(bytePPM[c]) + 1
		}
	}
	return f
}

// prefilter finds candidate positions for a pattern: every match contains
// one of its alternatives (one for most patterns, several for foo|bar).
type prefilter struct {
	alts []*seqFinder
	// unsafe lists the non-ASCII letters (Kelvin sign, long s) that a
	// case-folded k or s of the pattern also matches; a file holding one
	// is searched without the prefilter.
	unsafe [][]byte
}

// foldUnsafe reports whether data holds a character that case folding
// matches but the ASCII byte sets do not.
func (p *prefilter) foldUnsafe(data []byte) bool {
	for _, u := range p.unsafe {
		if bytes.Contains(data, u) {
			return true
		}
	}
	return false
}

// seqFinder finds one byte-set sequence.
type seqFinder struct {
	sets    []*byteSet
	uniform bool   // every position has the same set: a linear run count
	lit     []byte // when every set has one byte: the literal
	anchor  int    // the rarest position, searched for first
	a1, a2  byte   // the anchor's bytes when it has one or two
}

// newPrefilter returns the prefilter for pattern, or nil if no position
// of a match is constrained.
func newPrefilter(pattern string) *prefilter {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	var best [][]*byteSet
	bestScore := 0.0
	collect(re.Simplify(), func(alts [][]*byteSet) {
		if sc := score(alts); sc > bestScore {
			best, bestScore = alts, sc
		}
	})
	if best == nil {
		return nil
	}
	p := &prefilter{}
	var kelvin, longS bool
	for _, seq := range best {
		p.alts = append(p.alts, newSeqFinder(seq))
		for _, s := range seq {
			kelvin = kelvin || (s.in['k'] && s.in['K'])
			longS = longS || (s.in['s'] && s.in['S'])
		}
	}
	if kelvin {
		p.unsafe = append(p.unsafe, []byte("\u212a"))
	}
	if longS {
		p.unsafe = append(p.unsafe, []byte("\u017f"))
	}
	return p
}

// score rates a set of alternatives by its weakest member; more
// alternatives mean more candidates.
func score(alts [][]*byteSet) float64 {
	worst := math.Inf(1)
	for _, seq := range alts {
		worst = min(worst, information(seq))
	}
	return worst - math.Log2(float64(len(alts)))
}

func newSeqFinder(seq []*byteSet) *seqFinder {
	p := &seqFinder{sets: seq}
	lit := make([]byte, 0, len(seq))
	minF := math.Inf(1)
	for i, s := range seq {
		if f := s.freq(); f < minF {
			minF, p.anchor = f, i
		}
		if s.n == 1 {
			for c, ok := range s.in {
				if ok {
					lit = append(lit, byte(c))
				}
			}
		}
	}
	if len(lit) == len(seq) {
		p.lit = lit
	}
	p.uniform = len(seq) > 1 && p.lit == nil
	for _, s := range seq[1:] {
		p.uniform = p.uniform && s.in == seq[0].in
	}
	if a := seq[p.anchor]; a.n <= 2 {
		var bs []byte
		for c, ok := range a.in {
			if ok {
				bs = append(bs, byte(c))
			}
		}
		p.a1, p.a2 = bs[0], bs[len(bs)-1]
	}
	return p
}

// information is how selective a sequence is: the sum over its positions
// of -log2 of the position's estimated frequency.
func information(seq []*byteSet) float64 {
	info := 0.0
	for _, s := range seq {
		info += -math.Log2(min(s.freq(), 1e6) / 1e6)
	}
	return info
}

// collect calls add with sets of alternative byte-set sequences: every
// match of re contains at least one sequence of each set.
func collect(re *syntax.Regexp, addAlts func([][]*byteSet)) {
	add := func(seq []*byteSet) { addAlts([][]*byteSet{seq}) }
	switch re.Op {
	case syntax.OpLiteral, syntax.OpCharClass:
		var run []*byteSet
		appendPositions(re, &run, add)
		if len(run) > 0 {
			add(run)
		}
	case syntax.OpAlternate:
		// Each branch must contribute its best alternative; a branch
		// without one makes the whole alternation unconstrained.
		var alts [][]*byteSet
		for _, sub := range re.Sub {
			var best [][]*byteSet
			bestScore := 0.0
			collect(sub, func(a [][]*byteSet) {
				if sc := score(a); sc > bestScore {
					best, bestScore = a, sc
				}
			})
			if best == nil {
				return
			}
			alts = append(alts, best...)
		}
		addAlts(alts)
	case syntax.OpCapture, syntax.OpPlus:
		collect(re.Sub[0], addAlts)
	case syntax.OpRepeat:
		if re.Min >= 1 {
			collect(re.Sub[0], addAlts)
		}
	case syntax.OpConcat:
		var run []*byteSet
		flush := func() {
			if len(run) > 0 {
				add(run)
			}
			run = nil
		}
		// A run of one "wide" class (one that holds every non-ASCII
		// character, like \S or [^,]) is a sequence of its own: k such
		// characters span at least k bytes, each of them in the class's
		// byte set, but the width of the span is unknown, so nothing may
		// be appended to it.
		var wide *syntax.Regexp
		var wideRun []*byteSet
		flushWide := func() {
			if len(wideRun) > 0 {
				add(wideRun)
			}
			wide, wideRun = nil, nil
		}
		for _, sub := range flatten(re.Sub, nil) {
			if ws := wideSet(sub); ws != nil {
				flush()
				if wide != nil && !slices.Equal(wide.Rune, sub.Rune) {
					flushWide()
				}
				wide, wideRun = sub, append(wideRun, ws)
				continue
			}
			flushWide()
			switch sub.Op {
			case syntax.OpLiteral, syntax.OpCharClass:
				appendPositions(sub, &run, add)
			case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
				syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpEmptyMatch:
				// Zero-width: the positions around it stay contiguous.
			default:
				flush()
				collect(sub, addAlts)
			}
		}
		flush()
		flushWide()
	}
}

// wideSet returns the byte set of a character class that holds every
// non-ASCII character (all bytes 0x80-0xFF are then in it), or nil.
func wideSet(re *syntax.Regexp) *byteSet {
	if re.Op != syntax.OpCharClass {
		return nil
	}
	covers := false
	s := &byteSet{}
	for i := 0; i+1 < len(re.Rune); i += 2 {
		lo, hi := re.Rune[i], re.Rune[i+1]
		if lo <= utf8.RuneSelf && hi == unicode.MaxRune {
			covers = true
		}
		for c := lo; c <= hi && c < utf8.RuneSelf; c++ {
			s.add(byte(c))
		}
	}
	if !covers {
		return nil
	}
	for c := utf8.RuneSelf; c < 256; c++ {
		s.add(byte(c))
	}
	return s
}

// flatten expands nested concatenations and groups, whose parts are
// contiguous in a match too: (ab)c and a(bc) are abc.
func flatten(subs []*syntax.Regexp, out []*syntax.Regexp) []*syntax.Regexp {
	for _, sub := range subs {
		switch sub.Op {
		case syntax.OpConcat:
			out = flatten(sub.Sub, out)
		case syntax.OpCapture:
			out = flatten(sub.Sub, out)
		default:
			out = append(out, sub)
		}
	}
	return out
}

// appendPositions appends the byte sets of a literal or a character class
// to run. Where a position cannot be described by one byte set (a class or
// a case-folded letter with non-ASCII members, U+FFFD which also matches
// invalid UTF-8), the run is handed to add and a new one begins.
func appendPositions(re *syntax.Regexp, run *[]*byteSet, add func([]*byteSet)) {
	brk := func() {
		if len(*run) > 0 {
			add(*run)
		}
		*run = nil
	}
	if re.Op == syntax.OpCharClass {
		s := &byteSet{}
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if hi >= utf8.RuneSelf {
				brk()
				return
			}
			for c := lo; c <= hi; c++ {
				s.add(byte(c))
			}
		}
		if s.n == 0 {
			brk()
			return
		}
		*run = append(*run, s)
		return
	}
	fold := re.Flags&syntax.FoldCase != 0
	for _, r := range re.Rune {
		switch {
		case r == utf8.RuneError:
			brk()
		case r < utf8.RuneSelf && fold:
			lo := r | 0x20
			if 'a' <= lo && lo <= 'z' {
				// k and s also fold to U+212A and U+017F; the prefilter
				// is not used on files holding those (foldUnsafe).
				s := &byteSet{}
				s.add(byte(lo))
				s.add(byte(lo - 0x20))
				*run = append(*run, s)
				continue
			}
			s := &byteSet{}
			s.add(byte(r))
			*run = append(*run, s)
		case r < utf8.RuneSelf:
			s := &byteSet{}
			s.add(byte(r))
			*run = append(*run, s)
		case fold:
			brk()
		default:
			var buf [utf8.UTFMax]byte
			n := utf8.EncodeRune(buf[:], r)
			for _, c := range buf[:n] {
				s := &byteSet{}
				s.add(c)
				*run = append(*run, s)
			}
		}
	}
}

// index returns the start of the first occurrence of any alternative in
// data, or -1. For repeated searches over one buffer use a cursor.
func (p *prefilter) index(data []byte) int {
	c := p.cursor()
	return c.next(data, 0)
}

// cursor searches one buffer front to back, remembering where each
// alternative occurs next so that no stretch is scanned twice.
type cursor struct {
	p      *prefilter
	nextAt []int // per alternative: next start at or after the last from; -2 unknown, -1 none
}

func (p *prefilter) cursor() *cursor {
	c := &cursor{p: p, nextAt: make([]int, len(p.alts))}
	c.reset()
	return c
}

func (c *cursor) reset() {
	for i := range c.nextAt {
		c.nextAt[i] = -2
	}
}

// next returns the first start at or after from of any alternative in
// data, or -1. from must not decrease between calls on one buffer.
func (c *cursor) next(data []byte, from int) int {
	best := -1
	for i, alt := range c.p.alts {
		n := c.nextAt[i]
		if n == -1 {
			continue
		}
		if n < from {
			if r := alt.index(data[from:]); r < 0 {
				n = -1
			} else {
				n = from + r
			}
			c.nextAt[i] = n
			if n < 0 {
				continue
			}
		}
		if best < 0 || n < best {
			best = n
		}
	}
	return best
}

// index returns the start of the first occurrence of the sequence in data,
// or -1.
//
// It looks for the rarest position first (memchr, one or two bytes) and then
// checks the rest around it. On source code that beats bytes.Index, which
// starts from the literal's first byte (BenchmarkPrefilter).
func (p *seqFinder) index(data []byte) int {
	if p.uniform {
		// n bytes of the set in a row; a byte outside it restarts the count.
		set, n, run := &p.sets[0].in, len(p.sets), 0
		for i, c := range data {
			if !set[c] {
				run = 0
				continue
			}
			if run++; run == n {
				return i - n + 1
			}
		}
		return -1
	}
	n, a := len(p.sets), p.anchor
	anchor := p.sets[a]
	i := a // where the anchor may be found next
	nx1, nx2 := -2, -2
	for i <= len(data)-(n-a) {
		var at int
		switch {
		case anchor.n == 1 || anchor.n == 2:
			// Next positions of each anchor byte, cached between rounds.
			if nx1 != -1 && nx1 < i {
				if r := bytes.IndexByte(data[i:], p.a1); r < 0 {
					nx1 = -1
				} else {
					nx1 = i + r
				}
			}
			if p.a2 == p.a1 {
				nx2 = -1
			} else if nx2 != -1 && nx2 < i {
				if r := bytes.IndexByte(data[i:], p.a2); r < 0 {
					nx2 = -1
				} else {
					nx2 = i + r
				}
			}
			at = nx1
			if at < 0 || (nx2 >= 0 && nx2 < at) {
				at = nx2
			}
			if at < 0 {
				return -1
			}
		default:
			at = -1
			for j := i; j < len(data); j++ {
				if anchor.in[data[j]] {
					at = j
					break
				}
			}
			if at < 0 {
				return -1
			}
		}
		start := at - a
		if start+n > len(data) {
			return -1
		}
		if p.matchAt(data[start : start+n]) {
			return start
		}
		i = at + 1
	}
	return -1
}

func (p *seqFinder) matchAt(b []byte) bool {
	if p.lit != nil {
		return bytes.Equal(b, p.lit)
	}
	for j, s := range p.sets {
		if !s.in[b[j]] {
			return false
		}
	}
	return true
}

// bytePPM is how often each byte occurs in source code, in parts per
// million, measured on the Linux 6.1 sources (text files only); it picks
// the rarest position of a pattern as the one to search for first.
var bytePPM = [256]uint16{
	0, 0, 0, 0, 0, 0, 0, 0, 0, 34302, 32070, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	65535, 552, 4226, 3737, 225, 571, 1876, 301, 9457, 9465, 8977, 865, 11839, 8028, 4272, 4495,
	18908, 6946, 5798, 3609, 2899, 2288, 2360, 1426, 2700, 1205, 1954, 9565, 1594, 6626, 5003, 104,
	411, 10131, 3626, 10349, 8084, 12277, 5430, 4342, 2983, 9814, 119, 2133, 7743, 7246, 7258, 6630,
	7926, 878, 9808, 10790, 10900, 4216, 2353, 1511, 2626, 1476, 378, 991, 737, 989, 83, 50768,
	146, 25502, 7401, 22163, 22298, 50495, 16027, 8143, 8884, 31849, 364, 4708, 16739, 12580, 27114, 22220,
	14918, 1756, 30382, 27971, 38626, 15101, 7527, 4146, 8292, 3734, 964, 2532, 764, 2532, 142, 0,
	26, 6, 13, 6, 14, 9, 7, 9, 11, 9, 6, 8, 14, 7, 5, 12,
	6, 2, 2, 3, 11, 5, 7, 5, 5, 7, 16, 5, 13, 5, 3, 5,
	9, 7, 4, 4, 7, 7, 5, 6, 14, 5, 5, 3, 2, 7, 10, 12,
	8, 5, 2, 3, 3, 3, 6, 4, 18, 5, 12, 13, 18, 10, 6, 8,
	0, 0, 5, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 7, 8, 33, 66, 45, 37, 27, 19, 0, 0, 0, 0, 0, 11,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
}

// minLen is the fewest bytes a match of pattern can have; lines shorter
// than that are not given to the regexp engine.
func minLen(pattern string) int {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0
	}
	return minWidth(re.Simplify())
}

func minWidth(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return len(re.Rune) // a folded rune may have a one-byte variant
		}
		n := 0
		for _, r := range re.Rune {
			if r == utf8.RuneError {
				n++ // also matches one invalid byte
				continue
			}
			n += max(utf8.RuneLen(r), 1)
		}
		return n
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minWidth(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min * minWidth(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n += minWidth(s)
		}
		return n
	case syntax.OpAlternate:
		n := -1
		for _, s := range re.Sub {
			if w := minWidth(s); n < 0 || w < n {
				n = w
			}
		}
		return max(n, 0)
	}
	return 0 // star, quest, empty and zero-width assertions
}
