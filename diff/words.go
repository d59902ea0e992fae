package diff

import (
	"unicode"
	"unicode/utf8"
)

// Words returns the word-level differences between an old and a new line,
// for display: Delete spans are byte ranges of oldLine, Insert spans byte
// ranges of newLine, in order. Words are runs of letters, digits and '_';
// every other character (space runs excepted) is a word of its own. The
// diff is minimal in words.
func Words(oldLine, newLine string) []Span {
	if oldLine == newLine {
		return nil
	}
	a, ao := tokenize(oldLine)
	b, bo := tokenize(newLine)
	chs, err := diffStrings(a, b)
	if err != nil {
		// Cannot happen for one line in practice; show the whole line.
		return []Span{{0, len(oldLine), Delete}, {0, len(newLine), Insert}}
	}
	spans := make([]Span, 0, 2*len(chs))
	for _, c := range chs {
		if c.A1 > c.A0 {
			spans = append(spans, Span{Start: ao[c.A0], End: ao[c.A1], Kind: Delete})
		}
		if c.B1 > c.B0 {
			spans = append(spans, Span{Start: bo[c.B0], End: bo[c.B1], Kind: Insert})
		}
	}
	return spans
}

// tokenize splits s into words and returns them with their byte offsets
// (plus a final offset len(s)).
func tokenize(s string) ([]string, []int) {
	var toks []string
	offs := []int{}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		j := i + n
		switch {
		case isWordRune(r):
			for j < len(s) {
				r2, n2 := utf8.DecodeRuneInString(s[j:])
				if !isWordRune(r2) {
					break
				}
				j += n2
			}
		case unicode.IsSpace(r):
			for j < len(s) {
				r2, n2 := utf8.DecodeRuneInString(s[j:])
				if !unicode.IsSpace(r2) {
					break
				}
				j += n2
			}
		}
		toks = append(toks, s[i:j])
		offs = append(offs, i)
		i = j
	}
	offs = append(offs, len(s))
	return toks, offs
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}
