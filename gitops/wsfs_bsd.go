//go:build unix && !linux

package gitops

import "golang.org/x/sys/unix"

// chmodNoFollow changes the mode of a file the process may not open for
// reading, without following a symlink.
func chmodNoFollow(dirfd int, name string, perm uint32) error {
	return unix.Fchmodat(dirfd, name, perm&0o7777, unix.AT_SYMLINK_NOFOLLOW)
}
