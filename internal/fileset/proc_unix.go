//go:build unix

package fileset

import (
	"errors"

	"golang.org/x/sys/unix"
)

// processGone reports whether no process has the id pid.
func processGone(pid int) bool {
	return errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}
