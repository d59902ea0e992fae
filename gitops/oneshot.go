package gitops

import (
	"math"
	"os"
	"runtime/debug"
)

// oneShotMemoryLimit bounds the heap of a one-shot command while its
// collector is off: past it the collector runs again as usual.
const oneShotMemoryLimit = 512 << 20

// OneShot tunes the Go runtime for a process that opens the store, takes
// one snapshot or restore and exits (agentd snapshot create/restore, the
// first snapshot of agentd run): the collector is off until the heap
// reaches 512 MiB. On a large tree such a command allocates some 50 MB
// that all stays live until it exits (the stat cache, the directory
// cache, the walk's listing), so each collection marks it all for nothing:
// about a tenth of a cold no-change snapshot's CPU time. GOGC or
// GOMEMLIMIT set in the environment are left as they are. The returned
// function puts the previous settings back (for tests that run commands
// in one process).
func OneShot() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prevLimit := debug.SetMemoryLimit(-1)
	if prevLimit != math.MaxInt64 {
		return func() {}
	}
	debug.SetMemoryLimit(oneShotMemoryLimit)
	prevPercent := debug.SetGCPercent(-1)
	return func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	}
}
