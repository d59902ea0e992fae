package tools

import (
	"bytes"
	"regexp/syntax"
	"unicode/utf8"
)

// A literal prefilter for search_code: the longest string every match of the
// pattern must contain. Files (and stretches of files) without it are never
// given to the regexp engine, which is what keeps search_code close to
// ripgrep on large trees.

// literal is a required literal; fold means ASCII case-insensitive (the
// bytes are then lower case).
type literal struct {
	s    []byte
	fold bool
}

// requiredLiteral returns the best literal every match of re must contain,
// or ok=false when there is none worth using.
func requiredLiteral(pattern string) (literal, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return literal{}, false
	}
	best := literal{}
	collect(re.Simplify(), func(l literal) {
		if better(l, best) {
			best = l
		}
	})
	return best, len(best.s) > 0
}

func better(a, b literal) bool {
	if len(a.s) != len(b.s) {
		return len(a.s) > len(b.s)
	}
	return !a.fold && b.fold
}

// collect calls add with literals each of which every match of re contains.
func collect(re *syntax.Regexp, add func(literal)) {
	switch re.Op {
	case syntax.OpLiteral:
		addRun(re.Rune, re.Flags&syntax.FoldCase != 0, add)
	case syntax.OpCapture, syntax.OpPlus:
		collect(re.Sub[0], add)
	case syntax.OpRepeat:
		if re.Min >= 1 {
			collect(re.Sub[0], add)
		}
	case syntax.OpConcat:
		var run []rune
		fold := false
		flush := func() {
			if len(run) > 0 {
				addRun(run, fold, add)
			}
			run = nil
		}
		for _, sub := range re.Sub {
			if sub.Op == syntax.OpLiteral {
				f := sub.Flags&syntax.FoldCase != 0
				if len(run) > 0 && f != fold {
					flush()
				}
				fold = f
				run = append(run, sub.Rune...)
				continue
			}
			// Zero-width assertions do not break a run of literals apart.
			switch sub.Op {
			case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
				syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpEmptyMatch:
				continue
			}
			flush()
			collect(sub, add)
		}
		flush()
	}
}

// addRun offers a run of runes as literals. A case-sensitive run is used as
// its UTF-8 bytes. A case-folding run is split into the pieces that ASCII
// folding matches exactly as the regexp engine does: non-ASCII runes and the
// letters k and s (which fold to U+212A and U+017F too) end a piece.
func addRun(rs []rune, fold bool, add func(literal)) {
	if !fold {
		b := make([]byte, 0, len(rs))
		for _, r := range rs {
			if r == utf8.RuneError {
				// U+FFFD also matches invalid UTF-8 in the regexp engine.
				add(literal{s: b})
				b = b[:0:0]
				continue
			}
			b = utf8.AppendRune(b, r)
		}
		add(literal{s: b})
		return
	}
	var b []byte
	for _, r := range rs {
		lr := r
		if 'A' <= r && r <= 'Z' {
			lr = r + 'a' - 'A'
		}
		if lr >= utf8.RuneSelf || lr == 'k' || lr == 's' {
			add(literal{s: b, fold: true})
			b = nil
			continue
		}
		b = append(b, byte(lr))
	}
	add(literal{s: b, fold: true})
}

// finder finds a literal in a buffer.
type finder struct {
	lit    []byte
	fold   bool
	anchor int  // fold: index in lit of the byte searched for first
	lo, up byte // fold: both cases of lit[anchor]
}

func newFinder(l literal) *finder {
	f := &finder{lit: l.s, fold: l.fold}
	if !f.fold {
		return f
	}
	// Anchor on the rarest byte of the literal: one that has no case
	// variant is best (one memchr instead of two).
	bestScore := 1 << 30
	for i, c := range f.lit {
		s := byteScore(c)
		if 'a' <= c && c <= 'z' {
			s = s*2 + 8
		}
		if s < bestScore {
			bestScore, f.anchor = s, i
		}
	}
	f.lo = f.lit[f.anchor]
	f.up = f.lo
	if 'a' <= f.lo && f.lo <= 'z' {
		f.up = f.lo - ('a' - 'A')
	}
	return f
}

// index returns the index of the first occurrence in data, or -1.
func (f *finder) index(data []byte) int {
	if !f.fold {
		return bytes.Index(data, f.lit)
	}
	n, a := len(f.lit), f.anchor
	if len(data) < n {
		return -1
	}
	i := a
	nl, nu := -2, -2 // next positions of lo and up at or after i; -1 none
	for {
		if nl != -1 && nl < i {
			if r := bytes.IndexByte(data[i:], f.lo); r < 0 {
				nl = -1
			} else {
				nl = i + r
			}
		}
		if f.up == f.lo {
			nu = -1
		} else if nu != -1 && nu < i {
			if r := bytes.IndexByte(data[i:], f.up); r < 0 {
				nu = -1
			} else {
				nu = i + r
			}
		}
		p := nl
		if p < 0 || (nu >= 0 && nu < p) {
			p = nu
		}
		if p < 0 {
			return -1
		}
		start := p - a
		if start+n > len(data) {
			return -1
		}
		if equalFoldLower(data[start:start+n], f.lit) {
			return start
		}
		i = p + 1
	}
}

// equalFoldLower reports whether b equals lit (ASCII lower case) with ASCII
// letters compared case-insensitively.
func equalFoldLower(b, lit []byte) bool {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lit[i] {
			return false
		}
	}
	return true
}

// byteScore is a rough frequency rank of a byte in source code: lower is
// rarer.
func byteScore(c byte) int {
	switch {
	case c == ' ' || c == '\t' || c == 'e' || c == 't':
		return 100
	case c == 'a' || c == 'o' || c == 'i' || c == 'n' || c == 'r':
		return 80
	case c == 'l' || c == 'c' || c == 'd' || c == 'u' || c == 'h' || c == 'p' || c == 'f' || c == 'm':
		return 60
	case 'a' <= c && c <= 'z':
		return 40
	case c == '_' || c == '(' || c == ')' || c == ';' || c == ',' || c == '.' || c == '*' || c == '=':
		return 30
	case '0' <= c && c <= '9':
		return 25
	case 'A' <= c && c <= 'Z':
		return 20
	}
	return 10
}
