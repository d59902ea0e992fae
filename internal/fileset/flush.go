package fileset

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// FlushTimeout bounds how long Drain waits for the kernel to deliver the
// events queued before it. A barrier that times out is reported as
// overflow (the caller walks).
var FlushTimeout = 5 * time.Second

// flushDirPrefix starts the name of a barrier directory in the temporary
// folder; the owner's process id follows, then a dash.
const flushDirPrefix = "agentd-watch-"

var sweepOnce sync.Once

// sweepFlushDirs removes the barrier directories of processes that are
// gone: a watcher removes its own when it stops, but a process that was
// killed (an editor that crashed with its daemon) cannot. Directories of
// live processes, and names without a process id, are left alone.
func sweepFlushDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), flushDirPrefix+"*-*"))
	for _, d := range dirs {
		pidText, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(d), flushDirPrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || !processGone(pid) {
			continue
		}
		os.RemoveAll(d)
	}
}

// addFlushDir creates and watches the private directory of the barrier,
// named for this process (see sweepFlushDirs).
func (w *watcherState) addFlushDir() error {
	sweepOnce.Do(sweepFlushDirs)
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", flushDirPrefix, os.Getpid()))
	if err != nil {
		return fmt.Errorf("watch %s: create the flush directory: %w", w.s.root, err)
	}
	if err := w.fsw.Add(dir); err != nil {
		os.RemoveAll(dir)
		if isLimitErr(err) {
			// No barrier possible: every Drain reports overflow.
			w.fallBack(err)
			return nil
		}
		return fmt.Errorf("watch %s: watch the flush directory %s: %w", w.s.root, dir, err)
	}
	w.flushDir = dir
	return nil
}

// flushed records that the marker named by ev has been read; it runs on
// the event goroutine, after every earlier event was handled.
func (w *watcherState) flushed(ev fsnotify.Event) {
	if !ev.Has(fsnotify.Create) {
		return
	}
	seq, err := strconv.ParseUint(filepath.Base(ev.Name), 10, 64)
	if err != nil {
		return
	}
	w.mu.Lock()
	if seq > w.flushSeen {
		w.flushSeen = seq
		close(w.flushCond)
		w.flushCond = make(chan struct{})
	}
	w.mu.Unlock()
	if err := os.Remove(ev.Name); err != nil && !errors.Is(err, os.ErrNotExist) {
		w.mu.Lock()
		w.overflow = true // cannot happen in a private dir; be safe
		w.mu.Unlock()
	}
}

// flush waits until every event queued in the kernel before the call has
// been handled. It returns false when it cannot vouch for that (no
// barrier, the watcher stopped, timeout or ctx done).
func (w *watcherState) flush(ctx context.Context) bool {
	if w.fsw == nil || w.flushDir == "" {
		return false
	}
	w.mu.Lock()
	w.flushSeq++
	seq := w.flushSeq
	w.mu.Unlock()
	name := filepath.Join(w.flushDir, strconv.FormatUint(seq, 10))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return false
	}
	f.Close()
	timer := time.NewTimer(FlushTimeout)
	defer timer.Stop()
	for {
		w.mu.Lock()
		seen, cond := w.flushSeen, w.flushCond
		w.mu.Unlock()
		if seen >= seq {
			return true
		}
		select {
		case <-cond:
		case <-w.done:
			return false
		case <-ctx.Done():
			return false
		case <-timer.C:
			return false
		}
	}
}
