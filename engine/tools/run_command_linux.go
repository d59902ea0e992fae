//go:build linux

package tools

import (
	"os/exec"

	"golang.org/x/sys/unix"
)

// waitExited blocks until the process has exited without reaping it, so its
// pid (the process group's id) stays reserved and signalling the group stays
// safe until the returned reap func (cmd.Wait) is called.
func waitExited(cmd *exec.Cmd) (reap func() error) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return cmd.Wait
		}
	}
}
