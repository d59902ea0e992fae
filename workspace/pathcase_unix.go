//go:build !windows

package workspace

// FromURIPath is the OS path of a file URI's path: the same on POSIX.
func FromURIPath(p string) string { return p }

// samePrefix reports whether path starts with prefix. POSIX names are
// compared byte for byte (macOS's case-insensitive APFS included: the root
// and the editor's paths come from the same filesystem calls there).
func samePrefix(path, prefix string) bool {
	return len(path) >= len(prefix) && path[:len(prefix)] == prefix
}
