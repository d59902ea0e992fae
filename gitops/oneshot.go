package gitops

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// oneShotMemoryLimit bounds the heap of a one-shot command while its
// collector is off: past it the collector runs again as usual.
const oneShotMemoryLimit = 512 << 20

// oneShot is set while OneShot's settings are in force: the process
// loads the store's caches once and exits, so they are mapped (cacheMode)
// rather than read, and never unmapped. A daemon, which reloads the stat
// cache whenever another process saved it, reads them instead: each
// mapping would keep a replaced 6 MB file's disk space until it exits.
var oneShot atomic.Bool

// OneShot tunes the Go runtime for a process that opens the store, takes
// one snapshot or restore and exits (agentd snapshot create/restore, the
// first snapshot of agentd run): the collector is off until the heap
// reaches 512 MiB. On a large tree such a command allocates some 50 MB
// that all stays live until it exits (the stat cache, the directory
// cache, the walk's listing), so each collection marks it all for nothing:
// about a tenth of a cold no-change snapshot's CPU time. GOGC or
// GOMEMLIMIT set in the environment are left as they are. The returned
// function puts the previous settings back (for tests that run commands
// in one process). While they are in force the store maps its caches
// instead of reading them (oneShot).
func OneShot() (restore func()) {
	prevOne := oneShot.Swap(true)
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() { oneShot.Store(prevOne) }
	}
	prevLimit := debug.SetMemoryLimit(-1)
	if prevLimit != math.MaxInt64 {
		return func() { oneShot.Store(prevOne) }
	}
	debug.SetMemoryLimit(oneShotMemoryLimit)
	prevPercent := debug.SetGCPercent(-1)
	// Nobody reads a one-shot command's heap profile: sampling it took a
	// stack trace every 512 KB allocated.
	prevRate := runtime.MemProfileRate
	runtime.MemProfileRate = 0
	return func() {
		runtime.MemProfileRate = prevRate
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
		oneShot.Store(prevOne)
	}
}
