package fileset

// This is a port of git's wildmatch.c, kept close to the original so that
// ignore patterns match exactly as git matches them. Differences from
// path.Match or doublestar are intended: "**" is only special next to
// slashes, "[!...]" and "[^...]" both negate, POSIX classes are supported,
// and a pattern that ends inside a bracket expression never matches.

const (
	wmMatch           = 0
	wmNoMatch         = 1
	wmAbortAll        = -1
	wmAbortToStarstar = -2
)

// wmPathname makes '*' and '?' stop at '/' and gives "**" its meaning.
const wmPathname = 1

func isGlobSpecial(c byte) bool {
	return c == '*' || c == '?' || c == '[' || c == '\\'
}

// wildmatch reports whether text matches pattern under git's rules.
func wildmatch(pattern, text string, flags int) bool {
	return dowild(pattern, 0, text, 0, flags) == wmMatch
}

// at returns s[i] or 0 past the end, mimicking C's NUL terminator.
func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

func dowild(pat string, p int, text string, t int, flags int) int {
	pathname := flags&wmPathname != 0
	start := p
	for ; at(pat, p) != 0; t, p = t+1, p+1 {
		pch := pat[p]
		tch := at(text, t)
		if tch == 0 && pch != '*' {
			return wmAbortAll
		}
		switch pch {
		case '\\':
			// Literal match with the following character; a trailing
			// backslash compares against NUL and so fails below.
			p++
			pch = at(pat, p)
			if tch != pch {
				return wmNoMatch
			}
			continue
		case '?':
			if pathname && tch == '/' {
				return wmNoMatch
			}
			continue
		case '*':
			var matchSlash bool
			p++
			if at(pat, p) == '*' {
				prev := p - 2
				for {
					p++
					if at(pat, p) != '*' {
						break
					}
				}
				if !pathname {
					matchSlash = true
				} else if (prev < start || pat[prev] == '/') &&
					(at(pat, p) == 0 || at(pat, p) == '/' ||
						(at(pat, p) == '\\' && at(pat, p+1) == '/')) {
					// "foo/**/bar" matches "foo/bar" too.
					if at(pat, p) == '/' && dowild(pat, p+1, text, t, flags) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				} else {
					matchSlash = false
				}
			} else {
				matchSlash = !pathname
			}
			if at(pat, p) == 0 {
				// A trailing "**" matches everything; a trailing "*"
				// only if no slash is left.
				if !matchSlash {
					for i := t; i < len(text); i++ {
						if text[i] == '/' {
							return wmNoMatch
						}
					}
				}
				return wmMatch
			} else if !matchSlash && at(pat, p) == '/' {
				// One '*' followed by '/' matches the next directory.
				slash := -1
				for i := t; i < len(text); i++ {
					if text[i] == '/' {
						slash = i
						break
					}
				}
				if slash < 0 {
					return wmNoMatch
				}
				t = slash
				// The slash is consumed by the loop.
				continue
			}
			for {
				if tch == 0 {
					break
				}
				// Advance faster when the star is followed by a literal.
				if !isGlobSpecial(at(pat, p)) {
					pch = at(pat, p)
					for {
						tch = at(text, t)
						if tch == 0 || (!matchSlash && tch == '/') {
							break
						}
						if tch == pch {
							break
						}
						t++
					}
					if tch != pch {
						return wmNoMatch
					}
				}
				if m := dowild(pat, p, text, t, flags); m != wmNoMatch {
					if !matchSlash || m != wmAbortToStarstar {
						return m
					}
				} else if !matchSlash && tch == '/' {
					return wmAbortToStarstar
				}
				t++
				tch = at(text, t)
			}
			return wmAbortAll
		case '[':
			p++
			pch = at(pat, p)
			if pch == '^' {
				pch = '!'
			}
			negated := pch == '!'
			if negated {
				p++
				pch = at(pat, p)
			}
			var prevCh byte
			matched := false
			for {
				if pch == 0 {
					return wmAbortAll
				}
				if pch == '\\' {
					p++
					pch = at(pat, p)
					if pch == 0 {
						return wmAbortAll
					}
					if tch == pch {
						matched = true
					}
				} else if pch == '-' && prevCh != 0 && at(pat, p+1) != 0 && at(pat, p+1) != ']' {
					p++
					pch = at(pat, p)
					if pch == '\\' {
						p++
						pch = at(pat, p)
						if pch == 0 {
							return wmAbortAll
						}
					}
					if tch <= pch && tch >= prevCh {
						matched = true
					}
					pch = 0 // makes prevCh 0
				} else if pch == '[' && at(pat, p+1) == ':' {
					p += 2
					s := p
					for {
						pch = at(pat, p)
						if pch == 0 || pch == ']' {
							break
						}
						p++
					}
					if pch == 0 {
						return wmAbortAll
					}
					i := p - s - 1
					if i < 0 || pat[p-1] != ':' {
						// No ":]": treat "[" as a normal set member.
						p = s - 2
						pch = '['
						if tch == pch {
							matched = true
						}
						prevCh = pch
						p++
						pch = at(pat, p)
						if pch == ']' {
							break
						}
						continue
					}
					class := pat[s : s+i]
					ok, known := charClass(class, tch)
					if !known {
						return wmAbortAll
					}
					if ok {
						matched = true
					}
					pch = 0
				} else if tch == pch {
					matched = true
				}
				prevCh = pch
				p++
				pch = at(pat, p)
				if pch == ']' {
					break
				}
			}
			if matched == negated || (pathname && tch == '/') {
				return wmNoMatch
			}
			continue
		default:
			if tch != pch {
				return wmNoMatch
			}
			continue
		}
	}
	if t < len(text) {
		return wmNoMatch
	}
	return wmMatch
}

// charClass evaluates a POSIX class name for c in the C locale.
func charClass(name string, c byte) (match, known bool) {
	isUpper := c >= 'A' && c <= 'Z'
	isLower := c >= 'a' && c <= 'z'
	isDigit := c >= '0' && c <= '9'
	isAlpha := isUpper || isLower
	isSpace := c == ' ' || (c >= '\t' && c <= '\r')
	isPrint := c >= 0x20 && c < 0x7f
	switch name {
	case "alnum":
		return isAlpha || isDigit, true
	case "alpha":
		return isAlpha, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 0x20 || c == 0x7f, true
	case "digit":
		return isDigit, true
	case "graph":
		return isPrint && c != ' ', true
	case "lower":
		return isLower, true
	case "print":
		return isPrint, true
	case "punct":
		return isPrint && c != ' ' && !isAlpha && !isDigit, true
	case "space":
		return isSpace, true
	case "upper":
		return isUpper, true
	case "xdigit":
		return isDigit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'), true
	}
	return false, false
}
