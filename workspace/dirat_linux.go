package workspace

import (
	"errors"

	"golang.org/x/sys/unix"
)

var errNoRenameat2 = errors.New("renameat2 is not available")

// renameat2NoReplace renames atomically without replacing an existing
// destination, where the kernel and file system can.
func renameat2NoReplace(oldfd int, from string, newfd int, to string) error {
	err := unix.Renameat2(oldfd, from, newfd, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
		return errNoRenameat2
	}
	return err
}
