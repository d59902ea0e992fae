//go:build !windows

package platform

// RetryBusy runs f once: POSIX lets a file be renamed over or removed
// while others have it open.
func RetryBusy(f func() error) error { return f() }
