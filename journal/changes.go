package journal

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentd/agentd/internal/platform"
)

// Several agentd processes share a workspace's change-set records (the
// editor's daemon, agentd review, agentd run, agentd acp). What lets each
// see the others' decisions lives here, below the review book that uses
// it: one record read by name (ChangeRecord), a lock every writer of a
// record holds from reading it to writing it (LockChanges), and a cheap
// scan for records written since the last look (ScanChanges).

// changesDir is the folder of the change-set records.
func (j *Journal) changesDir() string { return filepath.Join(j.dir, "changes") }

// ChangeRecord reads the record of change set id; false when there is
// none.
func (j *Journal) ChangeRecord(id string) (Record, bool, error) {
	path := filepath.Join(j.changesDir(), RecordName(id)+".json")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("reading %s: %w", path, err)
	}
	return Record{File: path, Data: data}, true, nil
}

// ErrChangesBusy: another process held the change sets' lock for longer
// than LockChanges waits.
var ErrChangesBusy = errors.New("another agentd process is recording a review")

// LockWait is how long LockChanges waits for another process's lock
// when ctx has no earlier deadline.
var LockWait = 30 * time.Second

// LockChanges takes the lock of the change-set records (an advisory lock
// on changes/.lock, which every agentd process takes the same way), so
// that no other process writes a record between a writer's reading it and
// writing it. It waits for another holder until ctx ends (at most
// LockWait); the error names the lock file. A process takes it once at a
// time: the review book serialises its own writers before taking it.
func (j *Journal) LockChanges(ctx context.Context) (unlock func(), err error) {
	dir := j.changesDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w (is the state dir writable?)", dir, err)
	}
	path := filepath.Join(dir, ".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w (is the state dir writable?)", path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, LockWait)
	defer cancel()
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		err := platform.TryLock(f)
		if err == nil {
			return func() { _ = platform.Unlock(f); _ = f.Close() }, nil
		}
		if !errors.Is(err, platform.ErrLocked) {
			_ = f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("%w: it holds %s (%v); try again", ErrChangesBusy, path, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// racyWindow: a record or folder changed this recently may change again
// with the same modification time and size (coarse timestamps), so a scan
// looks again (by content) until it is older.
const racyWindow = 2 * time.Second

// ChangeScan is what ScanChanges saw last; the zero value has seen
// nothing. It is not safe for concurrent use.
type ChangeScan struct {
	dir  time.Time // the folder's modification time
	seen map[string]stamp
	// primed: the first scan took the stamps without reading the records
	// (the caller has just loaded them all).
	primed bool
}

type stamp struct {
	mod  time.Time
	size int64
	sum  uint64 // of the content, for records read within racyWindow
}

// ScanChanges returns the change-set records written since the last scan
// with sc, reading only those: while nothing changes it costs one stat of
// the folder (a record is written by renaming a temp file into it, which
// changes the folder's modification time). The first scan with a zero sc
// only takes note of what is there. Temp files (".tmp-*", being written)
// are never read; a record that cannot be read is logged and left out.
func (j *Journal) ScanChanges(sc *ChangeScan) ([]Record, error) {
	dir := j.changesDir()
	fi, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		sc.primed = true
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	now := time.Now()
	if sc.primed && fi.ModTime().Equal(sc.dir) && now.Sub(sc.dir) > racyWindow {
		return nil, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	if sc.seen == nil {
		sc.seen = map[string]stamp{}
	}
	first := !sc.primed
	sc.dir, sc.primed = fi.ModTime(), true
	var out []Record
	present := make(map[string]bool, len(ents))
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed since ReadDir
		}
		present[name] = true
		old, had := sc.seen[name]
		st := stamp{mod: info.ModTime(), size: info.Size()}
		recent := now.Sub(st.mod) <= racyWindow
		if first {
			sc.seen[name] = st
			continue
		}
		if had && old.mod.Equal(st.mod) && old.size == st.size && !recent {
			continue
		}
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			j.log.Warn("a saved record cannot be read; leaving it out", "file", path, "err", err)
			continue
		}
		h := fnv.New64a()
		_, _ = h.Write(data)
		st.sum = h.Sum64()
		sc.seen[name] = st
		if had && old.sum == st.sum && old.sum != 0 {
			continue // looked at again within racyWindow: unchanged
		}
		out = append(out, Record{File: path, Data: data})
	}
	for name := range sc.seen {
		if !present[name] {
			delete(sc.seen, name)
		}
	}
	return out, nil
}
