//go:build !windows

package shellcmd

import "os/exec"

// setCmdLine (for cmd.exe, on Windows only) passes the line as cmd.exe's
// arguments elsewhere: editCommandFor's Windows form is then only built,
// for its tests, never run.
func setCmdLine(cmd *exec.Cmd, line string) {
	cmd.Args = append(cmd.Args, line)
}
