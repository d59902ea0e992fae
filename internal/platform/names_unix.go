//go:build !windows

package platform

import (
	"runtime"
	"strings"
)

// NameProblem says why this OS cannot have a file of this name (one path
// component), or "": POSIX systems take any name.
func NameProblem(string) string { return "" }

// Explain returns err; POSIX errors say what happened already.
func Explain(err error, _ string) error { return err }

// IsGitName reports whether a path component names a .git directory on
// this OS: ".git" in any case (macOS's volumes ignore case), and on macOS
// also the spellings HFS+ takes for it (HFSGitAlias).
func IsGitName(name string) bool {
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return HFSGitAlias(name)
	}
	return strings.EqualFold(name, ".git")
}
