package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentd/agentd/journal"
)

// The review state of every change set is recorded by the book itself in
// the workspace's journal (package journal), whichever front end holds the
// book: the editor server, agentd run, ACP. So a restarted daemon finds
// the sets still pending, and the journal shows how each set of a run,
// from the editor or the terminal, was decided.

// RecordDelay is how long after a rebase (the user typing) the book
// waits for more before recording the rebased sets: a rebase is not a
// decision, so a burst of keystrokes costs one write, not one each. A
// decision, a new set and Close record at once (and take the waiting sets
// along); a crash loses at most the last rebase positions, which the next
// edit recomputes anyway.
var RecordDelay = 2 * time.Second

// keeper is a book's link to the journal.
type keeper struct {
	j     *journal.Journal
	onErr func(id string, err error)
	// save: saves of the book, in the order their states were taken, and
	// the book's hold of the journal's lock (LockChanges), which a
	// process takes once at a time.
	save sync.Mutex
	// saveChange writes one set's record (j.SaveChange; tests count it).
	saveChange func(id string, v any) error
	// scan is what Sync saw of the records last (under scanMu).
	scanMu sync.Mutex
	scan   journal.ChangeScan
	// onSync hears of the sets the book took from the journal (OnSync).
	onSync func([]Synced)
	// after runs f once d has passed and returns a stop function
	// (time.AfterFunc; tests fire it by hand).
	after func(d time.Duration, f func()) (stop func() bool)
}

func afterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// Keep makes the book record in j every set put in it and the state after
// every decision and revert, at once, and after rebases (RecordDelay
// later, or at Close; the front end closes the book when it stops). A save that fails does not undo what
// was decided (it already happened on disk or in a buffer): onErr (nil:
// ignored) hears of it with the set's id and an error naming the file and
// what to do, so the front end can tell the user.
func (b *Book) Keep(j *journal.Journal, onErr func(id string, err error)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.keep = &keeper{j: j, onErr: onErr, saveChange: j.SaveChange, after: afterFunc}
	// What is there now is what Load reads; Sync looks for what changes
	// from here on.
	if _, err := j.ScanChanges(&b.keep.scan); err != nil {
		j.Log().Warn("cannot look at the change sets' records", "err", err)
	}
}

// later records sets after RecordDelay, together with any set marked
// since; after Close, at once.
func (b *Book) later(sets []*Set) {
	if len(sets) == 0 {
		return
	}
	b.mu.Lock()
	k := b.keep
	if k == nil {
		b.mu.Unlock()
		return
	}
	if b.closed {
		b.mu.Unlock()
		_ = b.record(sets...) // a failure went to onErr
		return
	}
	if b.dirty == nil {
		b.dirty = map[string]*Set{}
	}
	for _, s := range sets {
		b.dirty[s.ID] = s
	}
	if b.stopTimer == nil {
		b.timerWG.Add(1)
		b.stopTimer = k.after(RecordDelay, func() {
			defer b.timerWG.Done()
			b.mu.Lock()
			b.stopTimer = nil
			b.mu.Unlock()
			b.Flush()
		})
	}
	b.mu.Unlock()
}

// Flush records at once the sets whose rebase is waiting to be recorded.
func (b *Book) Flush() {
	b.mu.Lock()
	sets := slices.Collect(maps.Values(b.dirty))
	b.mu.Unlock()
	_ = b.record(sets...) // a failure went to onErr
}

// Close records what is waiting and makes later rebases record at once:
// the front end calls it when it stops holding the book (shutdown, the
// end of a run or session), so nothing is left unrecorded.
func (b *Book) Close() {
	b.mu.Lock()
	b.closed = true
	if b.stopTimer != nil && b.stopTimer() {
		b.timerWG.Done() // it will not run
	}
	b.stopTimer = nil
	b.mu.Unlock()
	b.timerWG.Wait() // a record the timer started ends first
	b.Flush()
}

// Journal is the journal the book records in (nil: none).
func (b *Book) Journal() *journal.Journal {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.keep == nil {
		return nil
	}
	return b.keep.j
}

// record saves the sets' current state in the journal; it returns the
// first error (also reported to onErr).
func (b *Book) record(sets ...*Set) error {
	b.mu.Lock()
	k := b.keep
	b.mu.Unlock()
	if k == nil || len(sets) == 0 {
		return nil
	}
	unlock, err := b.lockRecords(context.Background(), k)
	if err != nil {
		for _, s := range sets {
			if k.onErr != nil {
				k.onErr(s.ID, err)
			}
		}
		return err
	}
	defer unlock()
	return b.recordLocked(k, sets...)
}

// lockRecords takes the book's hold of the journal's records: no other
// save of this book, and no other process's (journal.LockChanges), until
// unlock. Only another process holding the lock too long is an error
// (journal.ErrChangesBusy): a folder that cannot hold the lock cannot hold
// the records either, and the save says so with its file (a decision is
// never refused for it).
func (b *Book) lockRecords(ctx context.Context, k *keeper) (unlock func(), err error) {
	k.save.Lock()
	release, err := k.j.LockChanges(ctx)
	switch {
	case err == nil:
		return func() { release(); k.save.Unlock() }, nil
	case errors.Is(err, journal.ErrChangesBusy), ctx.Err() != nil:
		k.save.Unlock()
		return nil, err
	}
	return k.save.Unlock, nil
}

// recordLocked saves the sets, each with the next revision (Set.Rev). A
// set whose record another process wrote since the book last loaded or
// saved it (a higher revision) is not overwritten: what was recorded there
// stands, and the book takes it (Sync). The caller holds lockRecords.
func (b *Book) recordLocked(k *keeper, sets ...*Set) error {
	var first error
	for _, s := range sets {
		b.mu.Lock()
		id := s.ID
		b.mu.Unlock()
		onDisk, err := recordedRev(k.j, id)
		b.mu.Lock()
		prev := s.Rev
		var data []byte
		switch {
		case err != nil:
		case onDisk > prev:
			// Another process decided since: its record stands.
			delete(b.dirty, id)
			b.mu.Unlock()
			k.j.Log().Info("the change set's record was written by another agentd process; taking its state instead of saving this one",
				"change", id, "revision", onDisk, "held", prev)
			continue
		default:
			s.Rev = prev + 1
			data, err = json.Marshal(s)
			if err != nil {
				err = fmt.Errorf("encoding change set %s: %w", id, err)
			}
			delete(b.dirty, id) // this save holds its latest state
		}
		b.mu.Unlock()
		if err == nil {
			err = k.saveChange(id, json.RawMessage(data))
		}
		if err != nil {
			b.mu.Lock()
			if s.Rev == prev+1 {
				s.Rev = prev // not on disk: the next save tries this revision again
			}
			b.mu.Unlock()
			if k.onErr != nil {
				k.onErr(id, err)
			}
			if first == nil {
				first = err
			}
		}
	}
	return first
}

// Load adds the sets recorded in the journal that the book does not hold
// yet (a set it holds keeps its state; Sync takes what another process
// decided on it): at a daemon's start, and to pick up what another
// process (agentd run) recorded since. It returns the
// sets added; damaged records are left out and logged by the journal.
func (b *Book) Load() ([]*Set, error) {
	return b.load(func(*Set) bool { return true })
}

// load is Load of the recorded sets keep takes.
func (b *Book) load(keep func(*Set) bool) ([]*Set, error) {
	b.mu.Lock()
	k := b.keep
	known := make(map[string]bool, len(b.sets))
	for id := range b.sets {
		known[journal.RecordName(id)] = true
	}
	b.mu.Unlock()
	if k == nil {
		return nil, nil
	}
	raws, err := k.j.ChangesExcept(known)
	var added []*Set
	for _, raw := range raws {
		var s *Set
		if e := json.Unmarshal(raw.Data, &s); e != nil || s == nil || s.ID == "" {
			k.j.Warn("a saved change set is damaged; leaving it out (move it away to silence this)", raw.File, e)
			continue
		}
		if !keep(s) {
			continue
		}
		b.mu.Lock()
		if _, dup := b.sets[s.ID]; !dup {
			b.putLocked(s)
			added = append(added, s)
		}
		b.mu.Unlock()
	}
	return added, err
}

// Recorded returns the change sets the journal holds for run runID (""
// = every run), oldest first, with their review state.
func Recorded(j *journal.Journal, runID string) ([]*Set, error) {
	b := NewBook()
	b.Keep(j, nil)
	_, err := b.Load()
	var out []*Set
	for _, s := range b.List() {
		if runID == "" || s.RunID == runID {
			out = append(out, s)
		}
	}
	return out, err
}
