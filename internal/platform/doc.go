// Package platform holds the few operating-system calls agentd needs that
// differ between POSIX systems and Windows: advisory file locks (flock /
// LockFileEx), whether a process still runs (signal 0 / OpenProcess), and
// the names Windows refuses; and how file systems compare names (fold.go:
// the key case-insensitive and normalising file systems match names by,
// and every name of a .git directory). Each OS call has a _unix.go and a
// _windows.go twin; callers stay portable.
package platform

import "errors"

// ErrLocked: another process holds the lock (TryLock).
var ErrLocked = errors.New("locked by another process")
