//go:build windows

package diff

import (
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// processCPU is the CPU time (user+system) this process has used so far.
func processCPU(tb testing.TB) time.Duration {
	var c, e, k, u windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &c, &e, &k, &u); err != nil {
		tb.Fatal(err)
	}
	ticks := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(k) + ticks(u)) * 100)
}
