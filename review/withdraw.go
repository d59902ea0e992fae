package review

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Withdraw closes the run's sets still open after the run was undone:
// every pending or stale unit becomes rejected with reason, and nothing
// is written (the undo took the run's writes back already; an `after`
// unit left pending would show a hunk with nothing behind it, and
// accepting or rejecting it would act on text the undo gave back). Each
// set withdrawn is recorded, and the editors are told as of a decision
// made elsewhere (OnSync). It returns the IDs of the sets it closed.
func (b *Book) Withdraw(ctx context.Context, runID, reason string) ([]string, error) {
	if runID == "" {
		return nil, nil
	}
	// The sets another process made (the run's own, when the undo is
	// another process's: agentd undo after agentd run, or after an
	// editor's daemon) are taken from the journal first: the run's
	// recorded sets this book does not hold yet, then what changed since
	// it looked (Sync). Sync alone sees only records changed since the book
	// opened, so an undo a few seconds after the run left its sets
	// pending.
	if _, err := b.load(func(s *Set) bool { return s.RunID == runID }); err != nil {
		return nil, fmt.Errorf("closing the change sets of undone run %s: %w", runID, err)
	}
	if _, err := b.Sync(); err != nil {
		return nil, fmt.Errorf("closing the change sets of undone run %s: %w", runID, err)
	}
	b.apply.Lock()
	defer b.apply.Unlock()
	var sets []*Set
	b.mu.Lock()
	for _, s := range b.sets {
		if s.RunID == runID {
			sets = append(sets, s)
		}
	}
	b.mu.Unlock()
	slices.SortFunc(sets, func(a, c *Set) int { return a.CreatedAt.Compare(c.CreatedAt) })
	var ids []string
	var told []Synced
	var errs []error
	for _, s := range sets {
		open := func() []Unit {
			var us []Unit
			for _, u := range s.Units() {
				if st := u.Status(); st == Pending || st == Stale {
					us = append(us, u)
				}
			}
			return us
		}
		b.mu.Lock()
		none := len(open()) == 0
		b.mu.Unlock()
		if none {
			continue
		}
		end, err := b.begin(ctx, s, open)
		var ce *ChangedError
		if errors.As(err, &ce) {
			// Decided elsewhere since this book looked (refused once,
			// now taken): what is still open is closed all the same.
			end, err = b.begin(ctx, s, open)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("closing change set %s of undone run %s: %w", s.ID, runID, err))
			continue
		}
		res := &Result{Applied: []string{}, Rejected: []string{}, Conflicts: []Conflict{}}
		b.mu.Lock()
		units := open()
		var paths []string
		for _, u := range units {
			if !slices.Contains(paths, u.F.Path) {
				paths = append(paths, u.F.Path)
			}
		}
		b.markLocked(s, units, Rejected, reason, res)
		b.mu.Unlock()
		b.finish(s, res)
		end(len(units) > 0)
		if len(units) > 0 {
			ids = append(ids, s.ID)
			told = append(told, Synced{Set: s, Paths: paths})
		}
	}
	b.mu.Lock()
	k := b.keep
	b.mu.Unlock()
	if k != nil {
		b.tell(k, told)
	}
	return ids, errors.Join(errs...)
}
