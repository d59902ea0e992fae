package platform

import (
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Names are compared as the file systems agentd runs on compare them.
// Windows (NTFS) is case-insensitive by its upcase table: one letter at a
// time, so "ı" (dotless i) is "I" and "i" there, while "ß" is not "SS".
// macOS (APFS, HFS+) is case-insensitive by default and ignores the
// difference between an NFC and an NFD spelling ("é" as one code point or
// as "e" and a combining accent). Linux file systems compare bytes.
//
// FoldName is one key that is equal for any two names some such file
// system may take for one file: the name decomposed (NFD), each letter
// upper-cased alone (NTFS), then case-folded (Unicode full folding, as
// APFS) and decomposed again. It may also equate names no file system
// does ("ß" and "ss", the Kelvin sign and "k"): a caller that finds a
// file under another spelling by FoldName checks that the two are the
// same file (os.SameFile) before it takes them for one.
func FoldName(s string) string {
	if isPlainLower(s) {
		return s
	}
	s = norm.NFD.String(s)
	s = strings.Map(unicode.ToUpper, s) // per letter, simple: NTFS's upcase table
	s = cases.Fold().String(s)
	return norm.NFD.String(s)
}

// SameFoldedName reports whether a and b are one name under FoldName.
func SameFoldedName(a, b string) bool {
	return a == b || FoldName(a) == FoldName(b)
}

// isPlainLower: ASCII with no upper-case letter, its own key.
func isPlainLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || c >= 'A' && c <= 'Z' {
			return false
		}
	}
	return true
}

// The .git guard refuses every name of the user's .git directory: on
// every OS ".git" in any case; on Windows also what Windows takes for it
// (WindowsGitAlias), on macOS what HFS+ takes for it (HFSGitAlias).
// IsGitName (names_unix.go, names_windows.go) picks the OS's rule.

// WindowsGitAlias reports whether Windows opens the .git directory for a
// path component spelled name: ".git" in any case, followed by any dots
// and spaces (Win32 strips them: ".git.", ".git ", ".git. ."), or by an
// NTFS stream (".git::$INDEX_ALLOCATION"); or the 8.3 short name NTFS
// gives it ("GIT~1", in any case; "GIT~2"... when names collided). The
// rule is the same on every OS, so that it can be tested anywhere.
func WindowsGitAlias(name string) bool {
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i] // a stream of the entry: the entry itself
	}
	name = strings.TrimRight(name, ". ")
	if strings.EqualFold(name, ".git") {
		return true
	}
	if len(name) > 4 && strings.EqualFold(name[:4], "git~") {
		for _, c := range name[4:] {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	return false
}

// HFSGitAlias reports whether macOS's HFS+ opens the .git directory for
// a path component spelled name: ".git" in any case, with any of the code
// points HFS+ ignores in names (zero-width joiners, direction marks, the
// byte order mark) anywhere in it, as git itself refuses (is_hfs_dotgit).
func HFSGitAlias(name string) bool {
	return strings.EqualFold(strings.Map(func(r rune) rune {
		if hfsIgnored(r) {
			return -1
		}
		return r
	}, name), ".git")
}

func hfsIgnored(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}

// InGitDir reports whether a slash-separated relative path has a
// component that names a .git directory on this OS (IsGitName).
func InGitDir(rel string) bool {
	for part := range strings.SplitSeq(rel, "/") {
		if IsGitName(part) {
			return true
		}
	}
	return false
}
