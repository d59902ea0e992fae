package tools

import (
	"os/exec"
	"sync"
)

// Every command a tool starts runs in its own process group, so the
// terminal's Ctrl-C does not reach it directly and the whole group can be
// stopped at once. The groups are listed here while their leader is alive
// and not yet reaped (so the group id cannot be reused): a front end can
// count them ("waiting for 1 command") and kill them all when the user
// insists (a second Ctrl-C), commands that ignore SIGTERM included.
var groups = struct {
	sync.Mutex
	m map[*exec.Cmd]struct{}
}{m: map[*exec.Cmd]struct{}{}}

func addGroup(cmd *exec.Cmd) {
	groups.Lock()
	groups.m[cmd] = struct{}{}
	groups.Unlock()
}

// removeGroup must be called before the group's leader is reaped.
func removeGroup(cmd *exec.Cmd) {
	groups.Lock()
	delete(groups.m, cmd)
	groups.Unlock()
}

// RunningCommands is how many commands (process groups) tools are running.
func RunningCommands() int {
	groups.Lock()
	defer groups.Unlock()
	return len(groups.m)
}

// KillAllCommands sends SIGKILL to every process group a tool started and
// has not reaped yet, and returns how many.
func KillAllCommands() int {
	groups.Lock()
	defer groups.Unlock()
	for cmd := range groups.m {
		signalGroup(cmd, true)
	}
	return len(groups.m)
}
