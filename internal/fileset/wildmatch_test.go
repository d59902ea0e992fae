package fileset

import (
	"math/rand/v2"
	"path"
	"testing"
)

// Vectors from git's t/t3070-wildmatch.sh: text, pattern, whether it
// matches with WM_PATHNAME (git's "wildmatch" column) and without
// (the "pathmatch" column).
var wildmatchVectors = []struct {
	text, pattern        string
	pathname, noPathname bool
}{
	{"foo", "foo", true, true},
	{"foo", "bar", false, false},
	{"", "", true, true},
	{"foo", "???", true, true},
	{"foo", "??", false, false},
	{"foo", "*", true, true},
	{"foo", "f*", true, true},
	{"foo", "*f", false, false},
	{"foo", "*foo*", true, true},
	{"foobar", "*ob*a*r*", true, true},
	{"aaaaaaabababab", "*ab", true, true},
	{"foo*", `foo\*`, true, true},
	{"foobar", `foo\*bar`, false, false},
	{`f\oo`, `f\\oo`, true, true},
	{"ball", "*[al]?", true, true},
	{"ten", "[ten]", false, false},
	{"ten", "**[!te]", true, true},
	{"ten", "**[!ten]", false, false},
	{"ten", "t[a-g]n", true, true},
	{"ten", "t[!a-g]n", false, false},
	{"ton", "t[!a-g]n", true, true},
	{"ton", "t[^a-g]n", true, true},
	{"a]b", "a[]]b", true, true},
	{"a-b", "a[]-]b", true, true},
	{"a]b", "a[]-]b", true, true},
	{"aab", "a[]-]b", false, false},
	{"aab", "a[]a-]b", true, true},
	{"]", "]", true, true},
	{"foo/baz/bar", "foo*bar", false, true},
	{"foo/baz/bar", "foo**bar", false, true},
	{"foobazbar", "foo**bar", true, true},
	{"foo/baz/bar", "foo/**/bar", true, true},
	{"foo/baz/bar", "foo/**/**/bar", true, false},
	{"foo/b/a/z/bar", "foo/**/bar", true, true},
	{"foo/b/a/z/bar", "foo/**/**/bar", true, true},
	{"foo/bar", "foo/**/bar", true, false},
	{"foo/bar", "foo/**/**/bar", true, false},
	{"foo/bar", "foo?bar", false, true},
	{"foo/bar", "foo[/]bar", false, true},
	{"foo/bar", "foo[^a-z]bar", false, true},
	{"foo/bar", "f[^eiu][^eiu][^eiu][^eiu][^eiu]r", false, true},
	{"foo-bar", "f[^eiu][^eiu][^eiu][^eiu][^eiu]r", true, true},
	{"foo", "**/foo", true, false},
	{"XXX/foo", "**/foo", true, true},
	{"bar/baz/foo", "**/foo", true, true},
	{"bar/baz/foo", "*/foo", false, true},
	{"foo/bar/baz", "**/bar*", false, true},
	{"deep/foo/bar/baz", "**/bar/*", true, true},
	{"deep/foo/bar/baz/", "**/bar/*", false, true},
	{"deep/foo/bar/baz/", "**/bar/**", true, true},
	{"deep/foo/bar", "**/bar/*", false, false},
	{"deep/foo/bar/", "**/bar/**", true, true},
	{"foo/bar/baz", "**/bar**", false, true},
	{"foo/bar/baz/x", "*/bar/**", true, true},
	{"deep/foo/bar/baz/x", "*/bar/**", false, true},
	{"deep/foo/bar/baz/x", "**/bar/*/*", true, true},
	{"acrt", "a[c-c]st", false, false},
	{"acrt", "a[c-c]rt", true, true},
	{"]", "[!]-]", false, false},
	{"a", "[!]-]", true, true},
	{"", `\`, false, false},
	{`\`, `\`, false, false},
	{`XXX/\`, `*/\`, false, false},
	{`XXX/\`, `*/\\`, true, true},
	{"[ab]", `\[ab]`, true, true},
	{"[ab]", "[[]ab]", true, true},
	{"[ab]", "[[:]ab]", true, true},
	{"[ab]", "[[::]ab]", false, false},
	{"[ab]", "[[:digit]ab]", true, true},
	{"[ab]", `[\[:]ab]`, true, true},
	{"?a?b", `\??\?b`, true, true},
	{"abc", `\a\b\c`, true, true},
	{"foo", "", false, false},
	{"foo/bar/baz/to", "**/t[o]", true, true},
	{"a1B", "[[:alpha:]][[:digit:]][[:upper:]]", true, true},
	{"a", "[[:digit:][:upper:][:space:]]", false, false},
	{"A", "[[:digit:][:upper:][:space:]]", true, true},
	{"1", "[[:digit:][:upper:][:spaci:]]", false, false},
	{" ", "[[:digit:][:upper:][:space:]]", true, true},
	{".", "[[:digit:][:punct:][:space:]]", true, true},
	{"_", "[[:alnum:][:alpha:][:blank:][:cntrl:][:digit:][:graph:][:lower:][:print:][:punct:][:space:][:upper:][:xdigit:]]", true, true},
	{".", "[^[:alnum:][:alpha:][:blank:][:cntrl:][:digit:][:lower:][:space:][:upper:][:xdigit:]]", true, true},
	{"5", "[a-c[:digit:]x-z]", true, true},
	{"q", "[a-c[:digit:]x-z]", false, false},
	{"]", `[\\-^]`, true, true},
	{"[", `[\\-^]`, false, false},
	{"-", `[\-_]`, true, true},
	{"]", `[\]]`, true, true},
	{`\]`, `[\]]`, false, false},
	{"ab", "a[]b", false, false},
	{"a[]b", "a[]b", false, false},
	{"ab[", "ab[", false, false},
	{"ab", "[!", false, false},
	{"-", "[-]", true, true},
	{"-", "[a-", false, false},
	{"-", "[--A]", true, true},
	{"5", "[--A]", true, true},
	{"$", "[ --]", true, true},
	{"0", "[ --]", false, false},
	{"j", "[a-e-n]", false, false},
	{"-", "[a-e-n]", true, true},
	{"a", "[!------]", true, true},
	{"[", "[]-a]", false, false},
	{"^", "[]-a]", true, true},
	{"[", "[!]-a]", true, true},
	{"-b]", "[a-]b]", true, true},
	{`\`, `[\]`, false, false},
	{`\`, `[\\]`, true, true},
	{`\`, `[!\\]`, false, false},
	{"G", `[A-\\]`, true, true},
	{"aaabbb", "b*a", false, false},
	{"-", "[,-.]", true, true},
	{"-.]", "[,-.]", false, false},
	{"2", `[\1-\3]`, true, true},
	{"4", `[\1-\3]`, false, false},
	{`\`, `[[-\]]`, true, true},
	{"-", `[[-\]]`, false, false},
	{"-adobe-courier-bold-o-normal--12-120-75-75-m-70-iso8859-1", "-*-*-*-*-*-*-12-*-*-*-m-*-*-*", true, true},
	{"-adobe-courier-bold-o-normal--12-120-75-75-/-70-iso8859-1", "-*-*-*-*-*-*-12-*-*-*-m-*-*-*", false, false},
	{"XXX/adobe/courier/bold/o/normal//12/120/75/75/m/70/iso8859/1", "XXX/*/*/*/*/*/*/12/*/*/*/m/*/*/*", true, true},
	{"abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txt", "**/*a*b*g*n*t", true, true},
	{"foo/bb/aa/rr", "*/*/*", false, true},
	{"foo/bb/aa/rr", "**/**/**", true, true},
	{"ab/cXd/efXg/hi", "*X*i", false, true},
	{"ab/cXd/efXg/hi", "*/*X*/*/*i", true, true},
	{"ab/cXd/efXg/hi", "**/*X*/**/*i", true, true},
	{"foo/bba/arr", "foo/*", false, true},
	{"foo/bba/arr", "foo/**", true, true},
	{"foo/bba/arr", "foo**", false, true},
	{"foo/bba/arr", "foo/**arr", false, true},
	{"foo/bba/arr", "foo/**z", false, false},
	{"a", "[A-Z]", false, false},
	{"a", "[B-a]", true, true},
	{"Z", "[Z-y]", true, true},
}

func TestWildmatchGitVectors(t *testing.T) {
	for _, v := range wildmatchVectors {
		if got := wildmatch(v.pattern, v.text, wmPathname); got != v.pathname {
			t.Errorf("wildmatch(%q, %q, WM_PATHNAME) = %v, want %v", v.pattern, v.text, got, v.pathname)
		}
		if got := wildmatch(v.pattern, v.text, 0); got != v.noPathname {
			t.Errorf("wildmatch(%q, %q, 0) = %v, want %v", v.pattern, v.text, got, v.noPathname)
		}
	}
}

func TestParsePatternLines(t *testing.T) {
	pl := parsePatterns([]byte("\xef\xbb\xbf*.o\r\n# c\n\nfoo  \nbar\\ \\ \n!keep/\n\\#x\n/a/b"), "d/")
	want := []struct {
		text  string
		flags int
	}{
		{"*.o", patNoDir | patEndsWith},
		{"foo", patNoDir},
		{`bar\ \ `, patNoDir},
		{"keep", patNegative | patMustBeDir | patNoDir},
		{`\#x`, patNoDir},
		{"/a/b", 0},
	}
	if len(pl.patterns) != len(want) {
		t.Fatalf("parsed %d patterns, want %d: %+v", len(pl.patterns), len(want), pl.patterns)
	}
	for i, w := range want {
		if p := pl.patterns[i]; p.text != w.text || p.flags != w.flags {
			t.Errorf("pattern %d = %q flags %b, want %q flags %b", i, p.text, p.flags, w.text, w.flags)
		}
	}
}

// The bucketed matcher finds the same pattern as git's plain reverse scan.
func TestMatchBucketsAgreeWithScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	g := &genTree{r: r}
	names := append(append([]string{}, genFileNames...), genDirNames...)
	globs := append(genGlobs, "*.[oa]", "a[xy]", "[]]x", "x/**/b", "**/b", "a/**", "*/x y", "v*", "v*.c", "[!]x]", "\\]x", "b/*[a]")
	for i := range 5000 {
		base := ""
		if i%3 == 0 {
			base = g.pick(genDirNames) + "/"
		}
		text := g.patterns(1 + r.IntN(12))
		for range r.IntN(4) {
			text += g.pick([]string{"", "!", "/", "**/"}) + g.pick(globs) + g.pick([]string{"", "/"}) + "\n"
		}
		pl := parsePatterns([]byte(text), base)
		for range 20 {
			p := g.pick(names)
			if r.IntN(4) == 0 {
				p = g.pick([]string{"ax", "ay", "]x", "x", "b", "vmlinux", "v.c", "a.o", "b.a", "x y"})
			}
			if r.IntN(2) == 0 {
				p = g.pick(genDirNames) + "/" + p
			}
			if base != "" && r.IntN(2) == 0 {
				p = base + p
			}
			bn := path.Base(p)
			for _, isDir := range []bool{false, true} {
				if got, want := pl.match(p, bn, isDir), pl.matchSlow(p, bn, isDir); got != want {
					t.Fatalf("list %q base %q path %q dir %v: match = %+v, scan = %+v", pl.src, base, p, isDir, got, want)
				}
			}
		}
	}
}
