//go:build unix

package engine

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time, so benchmarks can report
// a cost that a loaded machine inflates less than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
