package fileset

import (
	"bytes"
	"strings"
)

// This file ports the pattern parsing and matching of git's dir.c
// (add_patterns_from_buffer, parse_path_pattern, match_basename,
// match_pathname, last_matching_pattern_from_list). The structure follows
// git's on purpose: small deviations (for instance how the literal prefix
// of a pattern is split off before wildmatch) change results.

const (
	patNegative  = 1 << iota // "!pattern"
	patMustBeDir             // "pattern/"
	patNoDir                 // no slash (except a trailing one): match the base name
	patEndsWith              // "*literal"
)

// pattern is one line of an ignore file.
type pattern struct {
	text          string // without "!" and the trailing "/"
	nowildcardlen int    // length of the leading part without glob characters
	flags         int
	literalSuffix string // text[1:] for patEndsWith
	// tail is the literal run that ends a pattern with wildcards: a
	// matching name must end with it (a cheap reject before wildmatch).
	// It stops at '/' ("**/" may match nothing) and at brackets.
	tail string
}

// patternList is the content of one ignore file. base is the directory
// (relative to the repository root, with a trailing slash, "" at the top)
// its patterns are relative to.
type patternList struct {
	base     string
	patterns []pattern
	src      string      // the file's content, to tell real changes from re-reads
	fp       fingerprint // of base and src: the list's identity across processes

	// Buckets of pattern indexes that let match skip most patterns while
	// still finding the last matching one. Lists hold indexes descending.
	literalBase map[string]int // no-dir literal (not dir-only) -> highest index
	literalDir  map[string]int // no-dir literal, dir-only
	literalPath map[string]int // path literal (not dir-only), keyed by the full repository-relative path
	literalPD   map[string]int // path literal, dir-only
	endsWith    map[byte][]int // "*literal", by the literal's last byte
	other       []int          // everything else
}

// index fills the buckets.
func (pl *patternList) index() {
	pl.literalBase = map[string]int{}
	pl.literalDir = map[string]int{}
	pl.literalPath = map[string]int{}
	pl.literalPD = map[string]int{}
	pl.endsWith = map[byte][]int{}
	for i := len(pl.patterns) - 1; i >= 0; i-- {
		pat := &pl.patterns[i]
		switch {
		case pat.flags&patNoDir == 0 && pat.nowildcardlen == len(pat.text):
			// match_pathname without wildcards is a comparison of the
			// path below base with the pattern (minus a leading slash).
			full := strings.TrimPrefix(pat.text, "/")
			if full == "" {
				pl.other = append(pl.other, i)
				continue
			}
			full = pl.base + full
			m := pl.literalPath
			if pat.flags&patMustBeDir != 0 {
				m = pl.literalPD
			}
			if _, ok := m[full]; !ok {
				m[full] = i
			}
		case pat.flags&patNoDir != 0 && pat.nowildcardlen == len(pat.text):
			m := pl.literalBase
			if pat.flags&patMustBeDir != 0 {
				m = pl.literalDir
			}
			if _, ok := m[pat.text]; !ok {
				m[pat.text] = i
			}
		case pat.flags&patNoDir != 0 && pat.flags&patEndsWith != 0 && pat.literalSuffix != "":
			last := pat.literalSuffix[len(pat.literalSuffix)-1]
			pl.endsWith[last] = append(pl.endsWith[last], i)
		default:
			pl.other = append(pl.other, i)
		}
	}
}

// source returns the content the list was parsed from ("" for nil).
func (pl *patternList) source() string {
	if pl == nil {
		return ""
	}
	return pl.src
}

// parsePatterns parses an ignore file's content the way git does: an
// optional UTF-8 BOM, lines split at '\n' with one trailing '\r' removed,
// comments, and trailing unescaped spaces trimmed.
func parsePatterns(data []byte, base string) *patternList {
	pl := &patternList{base: base, src: string(data), fp: fingerprintOf(base, string(data))}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		s := trimTrailingSpaces(string(line))
		// git stops at the first NUL (it works on C strings).
		if i := strings.IndexByte(s, 0); i >= 0 {
			s = s[:i]
		}
		pl.patterns = append(pl.patterns, parsePattern(s))
	}
	pl.index()
	return pl
}

// trimTrailingSpaces removes trailing spaces unless escaped with a
// backslash (dir.c's trim_trailing_spaces).
func trimTrailingSpaces(s string) string {
	lastSpace := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if lastSpace < 0 {
				lastSpace = i
			}
		case '\\':
			i++
			if i >= len(s) {
				return s
			}
			lastSpace = -1
		default:
			lastSpace = -1
		}
	}
	if lastSpace >= 0 {
		return s[:lastSpace]
	}
	return s
}

func simpleLength(s string) int {
	for i := 0; i < len(s); i++ {
		if isGlobSpecial(s[i]) {
			return i
		}
	}
	return len(s)
}

func parsePattern(p string) pattern {
	var pat pattern
	if strings.HasPrefix(p, "!") {
		pat.flags |= patNegative
		p = p[1:]
	}
	// simple_length runs over the pattern before the trailing slash is cut.
	nowild := simpleLength(p)
	if strings.HasSuffix(p, "/") {
		p = p[:len(p)-1]
		pat.flags |= patMustBeDir
	}
	if !strings.Contains(p, "/") {
		pat.flags |= patNoDir
	}
	if nowild > len(p) {
		nowild = len(p)
	}
	pat.nowildcardlen = nowild
	// git checks no_wildcard(p+1) on the string that still holds the
	// trailing slash, which is never a wildcard, so this is equivalent.
	if strings.HasPrefix(p, "*") && simpleLength(p[1:]) == len(p)-1 {
		pat.flags |= patEndsWith
		pat.literalSuffix = p[1:]
	}
	pat.text = p
	if nowild < len(p) {
		i := len(p)
		for i > nowild && !strings.ContainsRune("*?[]\\/", rune(p[i-1])) {
			i--
		}
		pat.tail = p[i:]
	}
	return pat
}

// matchBasename is dir.c's match_basename.
func (pat *pattern) matchBasename(basename string, fast bool) bool {
	if pat.nowildcardlen == len(pat.text) {
		return pat.text == basename
	}
	if pat.flags&patEndsWith != 0 {
		return strings.HasSuffix(basename, pat.literalSuffix)
	}
	if fast && (!strings.HasPrefix(basename, pat.text[:pat.nowildcardlen]) || !strings.HasSuffix(basename, pat.tail)) {
		return false
	}
	return wildmatch(pat.text, basename, 0)
}

// matchPathname is dir.c's match_pathname; base has no trailing slash.
func (pat *pattern) matchPathname(pathname, base string, fast bool) bool {
	p := pat.text
	prefix := pat.nowildcardlen
	if strings.HasPrefix(p, "/") {
		p = p[1:]
		prefix--
	}
	baselen := len(base)
	if len(pathname) < baselen+1 ||
		(baselen > 0 && pathname[baselen] != '/') ||
		pathname[:baselen] != base {
		return false
	}
	name := pathname
	if baselen > 0 {
		name = pathname[baselen+1:]
	}
	if prefix > 0 {
		if prefix > len(name) {
			return false
		}
		if p[:prefix] != name[:prefix] {
			return false
		}
		p = p[prefix:]
		name = name[prefix:]
		if p == "" && name == "" {
			return true
		}
	}
	if fast && !strings.HasSuffix(name, pat.tail) {
		return false
	}
	return wildmatch(p, name, wmPathname)
}

// match reports the last pattern of pl that matches, or nil. pathname is
// relative to the repository root; isDir says whether it is a directory.
func (pl *patternList) match(pathname, basename string, isDir bool) *pattern {
	best := -1
	if i, ok := pl.literalBase[basename]; ok {
		best = i
	}
	if i, ok := pl.literalPath[pathname]; ok && i > best {
		best = i
	}
	if isDir {
		if i, ok := pl.literalDir[basename]; ok && i > best {
			best = i
		}
		if i, ok := pl.literalPD[pathname]; ok && i > best {
			best = i
		}
	}
	var ends []int
	if basename != "" {
		ends = pl.endsWith[basename[len(basename)-1]]
	}
	for _, i := range ends {
		if i <= best {
			break
		}
		pat := &pl.patterns[i]
		if pat.flags&patMustBeDir != 0 && !isDir {
			continue
		}
		if strings.HasSuffix(basename, pat.literalSuffix) {
			best = i
			break
		}
	}
	var base string
	if pl.base != "" {
		base = pl.base[:len(pl.base)-1]
	}
	for _, i := range pl.other {
		if i <= best {
			break
		}
		if pl.matchOne(i, pathname, base, basename, isDir, true) {
			best = i
			break
		}
	}
	if best < 0 {
		return nil
	}
	return &pl.patterns[best]
}

// matchOne is one step of dir.c's last_matching_pattern_from_list.
func (pl *patternList) matchOne(i int, pathname, base, basename string, isDir, fast bool) bool {
	pat := &pl.patterns[i]
	if pat.flags&patMustBeDir != 0 && !isDir {
		return false
	}
	if pat.flags&patNoDir != 0 {
		return pat.matchBasename(basename, fast)
	}
	return pat.matchPathname(pathname, base, fast)
}

// matchSlow is git's plain reverse scan without shortcuts, kept to test
// match against.
func (pl *patternList) matchSlow(pathname, basename string, isDir bool) *pattern {
	var base string
	if pl.base != "" {
		base = pl.base[:len(pl.base)-1]
	}
	for i := len(pl.patterns) - 1; i >= 0; i-- {
		if pl.matchOne(i, pathname, base, basename, isDir, false) {
			return &pl.patterns[i]
		}
	}
	return nil
}
