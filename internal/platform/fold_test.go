package platform

import (
	"strings"
	"testing"
)

// TestFoldName: the key equates what Windows (per-letter upcase) and
// macOS (case folding, NFC = NFD) take for one name; strings.ToLower, the
// key restore used before, did not.
func TestFoldName(t *testing.T) {
	same := [][2]string{
		{"Dir/A.txt", "dir/a.txt"},
		{"caf\u00e9.txt", "cafe\u0301.txt"},                           // NFC and NFD (macOS)
		{"CAF\u00c9.txt", "cafe\u0301.txt"},                           // and case
		{"\u03c2.txt", "\u03a3.txt"},                                  // final sigma: upcase Σ (NTFS), fold σ (APFS)
		{"\u0131.txt", "I.txt"},                                       // dotless i: NTFS upcases it to I
		{"\u017f.txt", "S.txt"},                                       // long s
		{"\u00b5.txt", "\u039c.txt"},                                  // micro sign and Greek Mu
		{"stra\u00dfe", "STRASSE"},                                    // full folding (equates more than NTFS: callers check SameFile)
		{"\u1e9e", "\u00df"},                                          // capital and small sharp s
		{"\u01c5", "\u01c4"},                                          // title-case digraph
		{"Ame\u0301lie/\u00c9T\u00c9", "am\u00e9lie/e\u0301te\u0301"}, // whole paths
	}
	for _, p := range same {
		if !SameFoldedName(p[0], p[1]) {
			t.Errorf("FoldName(%q) = %q, FoldName(%q) = %q: want one key", p[0], FoldName(p[0]), p[1], FoldName(p[1]))
		}
	}
	// The old key missed these: the test would pass without FoldName
	// only if ToLower equated them too.
	missed := 0
	for _, p := range same {
		//lint:ignore SA6005 the old key, strings.ToLower, is what this measures against
		if strings.ToLower(p[0]) != strings.ToLower(p[1]) {
			missed++
		}
	}
	if missed < 5 {
		t.Errorf("only %d of the pairs differ under strings.ToLower: the table no longer shows what it is for", missed)
	}
	differ := [][2]string{{"a.txt", "b.txt"}, {"caf\u00e9", "cafe"}, {"a/b", "ab"}, {"\u00e9", "e"}, {"i", "j"}}
	for _, p := range differ {
		if SameFoldedName(p[0], p[1]) {
			t.Errorf("%q and %q fold to one key %q", p[0], p[1], FoldName(p[0]))
		}
	}
	if FoldName("plain/lower.txt") != "plain/lower.txt" {
		t.Errorf("a plain lower-case ASCII name is its own key")
	}
}

func TestWindowsGitAlias(t *testing.T) {
	for _, n := range []string{".git", ".GIT", ".Git", ".git.", ".git ", ".git. .", ".git...", ".GIT  ",
		"GIT~1", "git~1", "Git~2", "GIT~1.", ".git::$INDEX_ALLOCATION", ".git:stream", "GIT~1::$INDEX_ALLOCATION"} {
		if !WindowsGitAlias(n) {
			t.Errorf("WindowsGitAlias(%q) = false: Windows opens .git under that name", n)
		}
	}
	for _, n := range []string{"", ".", "..", "git", ".gitignore", ".github", ".git~1", "GIT~", "GIT~1x", "x.git", ".gi t", "GITHUB~1", "a.git."} {
		if WindowsGitAlias(n) {
			t.Errorf("WindowsGitAlias(%q) = true: not a name of .git", n)
		}
	}
}

func TestHFSGitAlias(t *testing.T) {
	for _, n := range []string{".git", ".GIT", ".g\u200cit", "\ufeff.git", ".gi\u200dt", ".\u206aGIT\u202e"} {
		if !HFSGitAlias(n) {
			t.Errorf("HFSGitAlias(%q) = false: HFS+ ignores those code points", n)
		}
	}
	for _, n := range []string{".gitx", "git", ".g\u00edt", ".git."} {
		if HFSGitAlias(n) {
			t.Errorf("HFSGitAlias(%q) = true", n)
		}
	}
}

func TestInGitDir(t *testing.T) {
	for _, p := range []string{".git/config", "sub/.GIT/HEAD", ".git"} {
		if !InGitDir(p) {
			t.Errorf("InGitDir(%q) = false", p)
		}
	}
	for _, p := range []string{"a/b", ".gitignore", "sub/.github/x"} {
		if InGitDir(p) {
			t.Errorf("InGitDir(%q) = true", p)
		}
	}
}
