//go:build !linux

package tools

import "os/exec"

// waitExited waits for the process and reaps it at once: without waitid's
// WNOWAIT, later signals to its group race with pid reuse (rare).
func waitExited(cmd *exec.Cmd) (reap func() error) {
	err := cmd.Wait()
	return func() error { return err }
}
