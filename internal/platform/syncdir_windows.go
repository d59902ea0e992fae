//go:build windows

package platform

// SyncDir: Windows cannot flush a directory (FlushFileBuffers on a
// directory handle fails with access denied); NTFS journals directory
// entries itself, so there is nothing to do.
func SyncDir(string) error { return nil }
