package gitops

import (
	"errors"
	"strconv"

	"golang.org/x/sys/unix"
)

// chmodNoFollow changes the mode of a file the process may not open for
// reading, through an O_PATH handle (what glibc's fchmodat with
// AT_SYMLINK_NOFOLLOW does): the handle pins the file, so a symlink put
// in its place meanwhile is never followed.
func chmodNoFollow(dirfd int, name string, perm uint32) error {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if !isRegStat(&st) {
		return errors.New("not a regular file")
	}
	return unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), perm&0o7777)
}
