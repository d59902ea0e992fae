package review

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"

	"github.com/agentd/agentd/workspace"
)

// Book holds the sets under review in one session (and those a restarted
// daemon loaded). Its lock guards every set's state: read a set's fields
// only inside Read. Decisions that write files are serialised, so two
// resolves of one file never interleave.
type Book struct {
	mu    sync.Mutex
	sets  map[string]*Set
	apply sync.Mutex
	keep  *keeper                // the journal the book records in (Keep); nil: none
	rec   workspace.EditRecorder // records decisions' writes for undo (RecordEdits); under apply

	// Rebased sets waiting to be recorded (later), the stop of the timer
	// that records them, and whether Close was called; under mu.
	dirty     map[string]*Set
	stopTimer func() bool
	timerWG   sync.WaitGroup // the timer's record, once it fired
	closed    bool

	// foreign: by set, the units whose status the book took from another
	// process's record and that no decision here has named since
	// (sync.go); under mu.
	foreign map[string]map[string]Status
}

// NewBook returns an empty book.
func NewBook() *Book { return &Book{sets: map[string]*Set{}} }

// Put adds (or replaces) a set, and records it in the journal (Keep).
func (b *Book) Put(s *Set) {
	b.mu.Lock()
	b.putLocked(s)
	b.mu.Unlock()
	_ = b.record(s) // a failure went to onErr
}

func (b *Book) putLocked(s *Set) {
	if s.decided == nil {
		s.decided = make(chan struct{})
		if !s.pending() {
			close(s.decided)
		}
	}
	b.sets[s.ID] = s
}

// Get returns the set with the given id.
func (b *Book) Get(id string) (*Set, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.sets[id]
	return s, ok
}

// Read runs f with the book locked: f may read any set, and must not call
// the book.
func (b *Book) Read(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f()
}

// List returns the sets, oldest first (read them inside Read).
func (b *Book) List() []*Set {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := slices.Collect(maps.Values(b.sets))
	slices.SortFunc(out, func(x, y *Set) int {
		if c := x.CreatedAt.Compare(y.CreatedAt); c != 0 {
			return c
		}
		return cmpString(x.ID, y.ID)
	})
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Marshal encodes a set (for persistence) consistently with its decisions.
func (b *Book) Marshal(s *Set) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return json.Marshal(s)
}

// Wait blocks until nothing in the set is pending and returns the outcome.
// The set stays in the book when ctx ends first.
func (b *Book) Wait(ctx context.Context, s *Set) (*Outcome, error) {
	b.mu.Lock()
	if s.decided == nil {
		b.putLocked(s)
	}
	decided := s.decided
	b.mu.Unlock()
	select {
	case <-decided:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return s.Outcome(), nil
}

// finish makes the set's decided channel follow its units: closed when
// nothing is pending, and open again when a unit is pending again after
// it closed (a stale hunk reproposed, another process's record taken by
// Sync), so a later Wait waits. The caller holds b.mu.
func (s *Set) finish() {
	if s.decided == nil {
		return
	}
	closed := false
	select {
	case <-s.decided:
		closed = true
	default:
	}
	switch pending := s.pending(); {
	case pending && closed:
		s.decided = make(chan struct{})
	case !pending && !closed:
		close(s.decided)
	}
}
