package engine

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
)

var bootID = sync.OnceValue(func() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
})

// procIdentity is the boot and the start time of process pid
// (/proc/PID/stat's 22nd field, in clock ticks since boot): two processes
// with the same id never share it. "" if the process is gone or /proc
// cannot say.
func procIdentity(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses: the fields after it start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 { // state is field 3; starttime field 22
		return ""
	}
	return bootID() + "/" + f[19]
}
