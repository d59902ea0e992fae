//go:build windows

package workspace

import "strings"

// FromURIPath is the OS path of a file URI's path: VS Code sends
// file:///c%3A/Users/x, whose path is /c:/Users/x; Windows wants c:/Users/x.
func FromURIPath(p string) string {
	if len(p) >= 3 && p[0] == '/' && p[2] == ':' && (p[1] >= 'a' && p[1] <= 'z' || p[1] >= 'A' && p[1] <= 'Z') {
		return p[1:]
	}
	return p
}

// samePrefix reports whether path starts with prefix, ignoring case as NTFS
// does (VS Code writes the drive letter in lower case, Windows in upper).
func samePrefix(path, prefix string) bool {
	return len(path) >= len(prefix) && strings.EqualFold(path[:len(prefix)], prefix)
}
