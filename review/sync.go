package review

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentd/agentd/journal"
)

// Several agentd processes hold books on one workspace's journal at once:
// the editor's daemon, agentd review at a terminal, agentd run, agentd
// acp. The rule that keeps their views of a set one (and docs/protocol.md,
// agentd/changes/didChange, says it to the editors):
//
//   - Every record of a set carries a revision (Set.Rev); each save
//     writes the next, under the journal's lock (journal.LockChanges), so
//     two processes never write the same revision.
//   - A book takes a record whose revision is higher than the one it
//     holds: Sync (which a front end that stays up calls about twice a
//     second) finds the records written since it last looked, and every
//     decision (Resolve, Revert) first takes its set's record, under the
//     lock it holds until it has recorded the decision. Its own saves
//     never come back as a change (same revision).
//   - A decision never reverses, unseen, what another process decided:
//     the first decision that would act on a unit whose status the book
//     took from another process's record (one naming its hunk in Resolve,
//     any in Revert) is refused (ChangedError) with nothing done; the front
//     end has been told the new state (OnSync), and the same decision made
//     again goes through. Decisions that only decide what is still open
//     ("accept all", "reject all") go on, on the set as recorded.
//   - A save that finds a higher revision on disk (a rebase the book held
//     back, a repropose) is dropped: the other process's decision stands
//     and the book takes it.

// Synced is a set the book took from the journal.
type Synced struct {
	Set *Set
	// Added: the book did not hold the set (another process made it);
	// otherwise its state was replaced by the recorded one.
	Added bool
	// Paths are the files whose units' statuses or hunks changed
	// (OldPath-less paths, in the set's order); none for an added set.
	Paths []string
	// Wrote are those of Paths the other process wrote: a unit of theirs
	// became accepted in `before` mode (applied), or rejected in `after`
	// mode (taken out). An editor's buffer of them holds what the disk
	// held before, until the editor reloads it.
	Wrote []string
}

// OnSync makes the book tell f of the sets it took from the journal
// (Sync, and a decision that found its set changed), after taking them
// and outside the book's lock: f may Read the sets. f must not decide.
func (b *Book) OnSync(f func([]Synced)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.keep != nil {
		b.keep.onSync = f
	}
}

// Sync takes what other processes recorded since the book last looked:
// sets it does not hold are added, and a set it holds whose record has a
// higher revision takes the recorded state. While nothing changed it
// costs one stat of the records' folder. Damaged records are left out
// and logged by the journal (once per change). It returns what it took,
// as OnSync hears it.
func (b *Book) Sync() ([]Synced, error) {
	b.mu.Lock()
	k := b.keep
	b.mu.Unlock()
	if k == nil {
		return nil, nil
	}
	k.scanMu.Lock()
	raws, err := k.j.ScanChanges(&k.scan)
	k.scanMu.Unlock()
	if len(raws) == 0 {
		return nil, err
	}
	b.apply.Lock() // never under a decision's feet
	var out []Synced
	for _, raw := range raws {
		if b.holdsNewer(raw) {
			continue // most often the book's own save: not decoded in full
		}
		if s := decodeSet(k.j, raw); s != nil {
			if sy, ok := b.take(s); ok {
				out = append(out, sy)
			}
		}
	}
	b.apply.Unlock()
	b.tell(k, out)
	return out, err
}

func (b *Book) tell(k *keeper, synced []Synced) {
	if len(synced) == 0 {
		return
	}
	b.mu.Lock()
	f := k.onSync
	b.mu.Unlock()
	if f != nil {
		f(synced)
	}
}

// holdsNewer reports whether the book holds the record's set at its
// revision or a later one, reading only the record's id and revision.
func (b *Book) holdsNewer(raw journal.Record) bool {
	var head struct {
		ID  string `json:"id"`
		Rev int64  `json:"rev"`
	}
	if json.Unmarshal(raw.Data, &head) != nil || head.ID == "" {
		return false // decodeSet says what is wrong
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	cur, ok := b.sets[head.ID]
	return ok && head.Rev <= cur.Rev
}

// decodeSet decodes a record, or warns (naming the file) and returns nil.
func decodeSet(j *journal.Journal, raw journal.Record) *Set {
	var s *Set
	if e := json.Unmarshal(raw.Data, &s); e != nil || s == nil || s.ID == "" {
		j.Warn("a saved change set is damaged; leaving it out (move it away to silence this)", raw.File, e)
		return nil
	}
	return s
}

// recordedRev is the revision of id's record (0: none, or damaged, which
// a save may overwrite).
func recordedRev(j *journal.Journal, id string) (int64, error) {
	raw, ok, err := j.ChangeRecord(id)
	if err != nil || !ok {
		return 0, err
	}
	var r struct {
		Rev int64 `json:"rev"`
	}
	if json.Unmarshal(raw.Data, &r) != nil {
		return 0, nil
	}
	return r.Rev, nil
}

// take adds rec, or makes the held set with its id take rec's review
// state when rec's revision is higher; it reports whether there is
// something to tell (a set added, units changed). The held *Set stays the
// same value (front ends and Wait hold it). The caller holds b.apply.
func (b *Book) take(rec *Set) (Synced, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur, ok := b.sets[rec.ID]
	if !ok {
		b.putLocked(rec)
		return Synced{Set: rec, Added: true}, true
	}
	if rec.Rev <= cur.Rev {
		return Synced{}, false // the book's own save, or older
	}
	paths := changedPaths(cur, rec)
	was := unitStatuses(cur.Units())
	written := map[string]bool{}
	for _, u := range rec.Units() {
		st := u.Status()
		if old, ok := was[unitKey(u)]; ok && old != st &&
			(rec.Review == Before && st == Accepted || rec.Review != Before && st == Rejected) {
			written[u.F.Path] = true
		}
	}
	var wrote []string
	for _, p := range paths {
		if written[p] {
			wrote = append(wrote, p)
		}
	}
	for key, st := range unitStatuses(rec.Units()) {
		if old, ok := was[key]; ok && old != st {
			if b.foreign == nil {
				b.foreign = map[string]map[string]Status{}
			}
			if b.foreign[rec.ID] == nil {
				b.foreign[rec.ID] = map[string]Status{}
			}
			b.foreign[rec.ID][key] = st
		}
	}
	// What a review changes; the set's identity (id, run, step, mode,
	// creation) is the same in every record, and front ends read it
	// without the lock.
	cur.Files, cur.Reason, cur.Applied, cur.Rejected, cur.Conflicts = rec.Files, rec.Reason, rec.Applied, rec.Rejected, rec.Conflicts
	cur.ReasonToModel, cur.Rev = rec.ReasonToModel, rec.Rev
	cur.finish()            // decided follows the recorded units, either way
	delete(b.dirty, cur.ID) // a rebase held back is of the old state
	if len(paths) == 0 {
		return Synced{}, false // a record that changed nothing to tell
	}
	return Synced{Set: cur, Paths: paths, Wrote: wrote}, true
}

// changedPaths lists the files of rec whose status, hunks or hunks'
// statuses differ from cur's.
func changedPaths(cur, rec *Set) []string {
	old := map[string]*File{}
	for _, f := range cur.Files {
		old[f.Path] = f
	}
	var out []string
	for _, f := range rec.Files {
		if o := old[f.Path]; o == nil || !sameUnits(o, f) {
			out = append(out, f.Path)
		}
	}
	return out
}

func sameUnits(a, b *File) bool {
	if a.Status != b.Status || len(a.Hunks) != len(b.Hunks) {
		return false
	}
	for i, h := range a.Hunks {
		o := b.Hunks[i]
		if h.ID != o.ID || h.Status != o.Status || h.Hunk.OldStart != o.Hunk.OldStart || h.Hunk.NewStart != o.Hunk.NewStart {
			return false
		}
	}
	return true
}

// ChangedError refuses a decision on units another agentd process decided
// (or changed) since the view it was made on: nothing was done.
type ChangedError struct {
	ID    string   // the change set
	Units []string // the units that changed, "path: unit is now status"
}

func (e *ChangedError) Error() string {
	return fmt.Sprintf("change set %s was decided in another agentd process since this view of it (%s); nothing was done: "+
		"look at its current state and decide again (the same decision again goes through)", e.ID, strings.Join(e.Units, "; "))
}

// begin starts a decision on s: it takes the records' lock and, when
// another process recorded s since the book's view, s's recorded state
// (front ends hear of it through OnSync). sel lists the units the
// decision would act on whatever their status; when another process
// decided one of them since this book last acted on it, the decision is
// refused (ChangedError), once. end records s (when record: something
// was decided) and releases the lock. The caller holds b.apply; sel runs
// under b.mu. Without a journal there is nothing to take or record.
func (b *Book) begin(ctx context.Context, s *Set, sel func() []Unit) (end func(record bool), err error) {
	b.mu.Lock()
	k := b.keep
	b.mu.Unlock()
	if k == nil {
		return func(bool) {}, nil
	}
	unlock, err := b.lockRecords(ctx, k)
	if err != nil {
		return nil, fmt.Errorf("change set %s: %w", s.ID, err)
	}
	end = func(record bool) {
		if record {
			_ = b.recordLocked(k, s) // a failure went to onErr
		}
		unlock()
	}
	b.mu.Lock()
	held := b.sets[s.ID] == s
	b.mu.Unlock()
	if raw, ok, _ := k.j.ChangeRecord(s.ID); ok && held { // a read error: the save will say
		if rec := decodeSet(k.j, raw); rec != nil {
			if sy, took := b.take(rec); took {
				b.tell(k, []Synced{sy})
			}
		}
	}
	b.mu.Lock()
	var changed []string
	marks := b.foreign[s.ID]
	for key, st := range unitStatuses(sel()) {
		if was, ok := marks[key]; ok {
			delete(marks, key) // told once: the same decision again goes through
			if was == st {
				changed = append(changed, key+" is "+st)
			}
		}
	}
	b.mu.Unlock()
	if len(changed) == 0 {
		return end, nil
	}
	slices.Sort(changed)
	unlock()
	return nil, &ChangedError{ID: s.ID, Units: changed}
}

// unitStatuses keys units by unitKey.
func unitStatuses(units []Unit) map[string]Status {
	out := make(map[string]Status, len(units))
	for _, u := range units {
		out[unitKey(u)] = u.Status()
	}
	return out
}

// unitKey names a unit in messages: "path hunk id", a whole file by its
// path.
func unitKey(u Unit) string {
	if u.H == nil {
		return u.F.Path
	}
	return u.F.Path + " hunk " + u.H.ID
}

// namedUnits lists the units the decisions name by hunk id (those a
// decision may reverse: Resolve); the caller holds b.mu.
func namedUnits(s *Set, decisions []Decision) []Unit {
	var out []Unit
	for _, d := range decisions {
		if d.HunkID == "" {
			continue
		}
		units, _ := s.Select(d.Path, d.HunkID)
		out = append(out, units...)
	}
	return out
}
