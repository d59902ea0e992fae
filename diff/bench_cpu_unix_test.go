//go:build unix

package diff

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time (user+system) this process has used so far,
// GC workers included. Benchmarks report it beside wall time because it
// stays meaningful on a loaded machine.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
