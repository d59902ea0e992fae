//go:build unix

package tools

import (
	"os/exec"
	"syscall"
)

func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends SIGTERM (or SIGKILL) to the command's process group.
func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}

// exitStatus returns the exit code (128+n for a signal, as shells report)
// and the signal's name.
func exitStatus(cmd *exec.Cmd, _ error) (int, string) {
	ps := cmd.ProcessState
	if ps == nil {
		return -1, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal().String()
	}
	return ps.ExitCode(), ""
}

// shellCommand is the shell invocation of a command line: sh -c.
func shellCommand(line string) *exec.Cmd { return exec.Command(Shell, "-c", line) }

// shellName names the shell in messages.
func shellName() string { return Shell }

// startedGroup: the process group exists from the start (Setpgid).
func startedGroup(*exec.Cmd) error { return nil }

// releaseGroup: nothing to release; the group ends with its processes.
func releaseGroup(*exec.Cmd) {}
