package gitops

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
)

// StopAfterWritesEnv is for tests only: a process started with
// AGENTD_TEST_STOP_AFTER_WRITES=N stops every restore or undo (revert)
// for good before its (N+1)th file operation, after printing
// "agentd-test: stopped after N writes" on stderr, so that a test can
// SIGKILL a real agentd binary in the middle of its writes (and not at a
// time it guesses). Nothing reads it outside tests; unset, it costs
// nothing. It also makes the writes go one at a time, in order.
const StopAfterWritesEnv = "AGENTD_TEST_STOP_AFTER_WRITES"

// StoppedMarker is what a process stopped by StopAfterWritesEnv prints.
const StoppedMarker = "agentd-test: stopped after"

func init() {
	v := os.Getenv(StopAfterWritesEnv)
	if v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		fmt.Fprintf(os.Stderr, "%s=%q: not a count of writes; ignored\n", StopAfterWritesEnv, v)
		return
	}
	// One write at a time, in the ops' order: which files a stopped
	// process wrote is then known (with 8 at once, any 2 of 6 could be
	// the first), so a test never depends on which worker ran first.
	restoreWorkers = 1
	var count atomic.Int64
	var once sync.Once
	testHookApply = func(restoreOp) error {
		if count.Add(1) > int64(n) {
			once.Do(func() { fmt.Fprintf(os.Stderr, "%s %d writes\n", StoppedMarker, n) })
			select {} // killed here, mid-write
		}
		return nil
	}
}
