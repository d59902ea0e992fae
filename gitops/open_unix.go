//go:build unix

package gitops

import (
	"errors"
	"os"
	"syscall"
)

// openNoFollow opens a workspace file for reading, never following a
// symlink put in its place: errIsLink if one is there now.
func openNoFollow(abs string) (*os.File, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errIsLink
	}
	return f, err
}

// unreadableReason says why a file that exists cannot be read now, in
// words for SkippedFile.Reason, or "" when err is not such a case.
func unreadableReason(err error) string {
	if errors.Is(err, os.ErrPermission) {
		return "cannot be read: permission denied"
	}
	return ""
}

// canSyncDirs: fsync on a directory makes its entries durable.
const canSyncDirs = true

// openForSync opens a file to fsync it: read-only is enough on POSIX.
func openForSync(name string) (*os.File, error) { return os.Open(name) }
