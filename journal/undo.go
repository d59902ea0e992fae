package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Why a run or a restore cannot be undone. Front ends add how to go on
// (the command that lists runs, say) in their own words.
var (
	ErrNoSuchRun       = errors.New("no such run in this workspace's journal")
	ErrAmbiguousRun    = errors.New("the ID is the start of several runs' IDs; give more of it")
	ErrNothingToUndo   = errors.New("nothing to undo")
	ErrRunStillActive  = errors.New("the run is still going; cancel it first, then undo it")
	ErrNoRestoreToUndo = errors.New("no restore to undo")
)

// NoSnapshotsError is the run undo would step back over but cannot: it
// took no snapshots (a dry run, or snapshots turned off). It is named,
// never skipped: undoing an older run instead would undo the wrong thing.
type NoSnapshotsError struct{ RunID string }

func (e *NoSnapshotsError) Error() string {
	return fmt.Sprintf("the last run (%s) took no snapshots", e.RunID)
}

// Is makes errors.Is(err, ErrNothingToUndo) hold.
func (e *NoSnapshotsError) Is(target error) bool { return target == ErrNothingToUndo }

// AlreadyUndoneError is an undo by ID of a run undone already: reverting
// it again would change nothing but the records. The way back to its
// changes is the undo of that undo (Undone.UndoID).
type AlreadyUndoneError struct {
	RunID  string
	Undone Undone
}

func (e *AlreadyUndoneError) Error() string {
	return fmt.Sprintf("nothing to undo: run %s is undone already (%s); to bring its changes back, undo that undo", e.RunID, e.Undone.At.Local().Format("2006-01-02 15:04"))
}

// Is makes errors.Is(err, ErrNothingToUndo) hold.
func (e *AlreadyUndoneError) Is(target error) bool { return target == ErrNothingToUndo }

// How a run was undone.
const (
	HowUndo     = "undo"     // an undo of the run (any front end)
	HowRollback = "rollback" // the run rolled itself back when it failed
)

// Undone says that and how a run was undone (protocol RunState.undone).
type Undone struct {
	At  time.Time `json:"at"`
	How string    `json:"how"`
	// UndoID is the undo that did it (its Restore record's ID), when an
	// undo did.
	UndoID string `json:"undoId,omitempty"`
	// Kept are the run's files the undo left as they were (the user
	// chose to keep their conflicting edits): the run is undone except
	// there.
	Kept []string `json:"kept,omitempty"`
}

// RunHead is what the journal's own rules need of a run's record (the
// engine's RunState, decoded partly): its id, status, start time and
// snapshots, the first of which is the workspace before it.
type RunHead struct {
	RunID     string    `json:"runId"`
	Status    string    `json:"status"`
	StartTime time.Time `json:"startTime"`
	Snapshots []string  `json:"snapshots"`
	DryRun    bool      `json:"dryRun,omitempty"`
	Undone    *Undone   `json:"undone,omitempty"`
}

// MarkUndone records that run id was undone.
func (j *Journal) MarkUndone(runID, how string) error {
	return j.MarkUndoneBy(runID, Undone{How: how})
}

// MarkUndoneBy records that run id was undone as u says (At is set here
// when zero).
func (j *Journal) MarkUndoneBy(runID string, u Undone) error {
	if u.At.IsZero() {
		u.At = time.Now().UTC()
	}
	return j.Save("undone/"+RecordName(runID)+".json", u)
}

// Unmark forgets that run id was undone (an undo of that undo).
func (j *Journal) Unmark(runID string) error {
	err := os.Remove(filepath.Join(j.dir, "undone", RecordName(runID)+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// UndoneOf returns the record that run id was undone, or nil.
func (j *Journal) UndoneOf(runID string) *Undone {
	var u Undone
	if ok, err := j.Load("undone/"+RecordName(runID)+".json", &u); !ok || err != nil {
		return nil
	}
	return &u
}

// RunToUndo is the run an "undo" restores the start of, the one rule for
// every front end. runs are the workspace's runs, newest first (as the
// engine lists them, with dead processes settled). With id "" it is the
// newest run not yet undone, so a second undo steps back to the run
// before; a dry run changed nothing and is passed over, but a run that
// changed the workspace without snapshots is a *NoSnapshotsError, never
// skipped. With id it is the run whose ID is id or starts with it; one
// undone already is refused (unless its undo kept some of its files as
// the user had them: undoing it again takes those back too). A run
// still running or paused is refused.
func RunToUndo(runs []RunHead, id string) (*RunHead, error) {
	var st *RunHead
	if id == "" {
		for i := range runs {
			if runs[i].Undone == nil && !runs[i].DryRun {
				st = &runs[i]
				break
			}
		}
		if st == nil {
			if len(runs) == 0 {
				return nil, fmt.Errorf("%w: no run is recorded in this workspace", ErrNothingToUndo)
			}
			return nil, fmt.Errorf("%w: every recorded run is undone already", ErrNothingToUndo)
		}
	} else {
		var found []*RunHead
		for i := range runs {
			if runs[i].RunID == id {
				found = []*RunHead{&runs[i]}
				break
			}
			if strings.HasPrefix(runs[i].RunID, id) {
				found = append(found, &runs[i])
			}
		}
		switch len(found) {
		case 0:
			return nil, fmt.Errorf("run %q: %w", id, ErrNoSuchRun)
		case 1:
			st = found[0]
		default:
			return nil, fmt.Errorf("%q matches %d runs: %w", id, len(found), ErrAmbiguousRun)
		}
	}
	if id != "" && st.Undone != nil && len(st.Undone.Kept) == 0 {
		// Reverting it again would change nothing but the records: the
		// way back to its changes is the undo of that undo.
		return nil, &AlreadyUndoneError{RunID: st.RunID, Undone: *st.Undone}
	}
	if st.Status == "running" || st.Status == "paused" {
		return nil, fmt.Errorf("run %s is %s: %w", st.RunID, st.Status, ErrRunStillActive)
	}
	if len(st.Snapshots) == 0 {
		return nil, &NoSnapshotsError{RunID: st.RunID}
	}
	return st, nil
}

// Restore is a restore or an undo, whichever front end asked for it: a
// snapshot restore (a reset), an undo of a run (a revert of the run's
// ledger), an undo of either. Before is the safety snapshot taken just
// before it. Owner, when set, is the ledger owner its writes were recorded
// under ("undo/<ID>", "restore/<ID>"): undoing it reverts that owner, so
// what the user wrote after it stays. Without Owner (recorded before undo
// became a revert) undoing it restores Before, protected.
type Restore struct {
	ID         string    `json:"id"`
	At         time.Time `json:"at"`
	SnapshotID string    `json:"snapshotId,omitempty"`
	Before     string    `json:"before"`
	Owner      string    `json:"owner,omitempty"`
	// RunID is the run this restore undid, for an undo of a run; RunIDs
	// the runs, for one undo of several (a chat's restore to before a
	// turn takes back the runs of the turns after it as one undo).
	RunID  string   `json:"runId,omitempty"`
	RunIDs []string `json:"runIds,omitempty"`
	// Kept are the files an undo left as they were (KeepConflicts).
	Kept []string `json:"kept,omitempty"`
	// Undo is set on the restore that undid another (its ID): such a
	// restore is not itself offered to "undo restore".
	Undo   string     `json:"undo,omitempty"`
	Undone *time.Time `json:"undone,omitempty"`
}

// NewRestoreID is the ID a Restore record gets (a sortable UTC time), for
// a caller that needs it before recording (an undo's ledger owner).
func NewRestoreID(at time.Time) string { return at.UTC().Format("20060102T150405.000000000Z") }

// RecordRestore records r (its ID and At are set here when empty).
func (j *Journal) RecordRestore(r Restore) (Restore, error) {
	if r.At.IsZero() {
		r.At = time.Now().UTC()
	}
	if r.ID == "" {
		r.ID = NewRestoreID(r.At)
	}
	return r, j.Save("restores/"+RecordName(r.ID)+".json", r)
}

// Restores returns every recorded restore, newest first.
func (j *Journal) Restores() ([]Restore, error) {
	rs, err := Records[Restore](j, "restores")
	if err != nil {
		return nil, err
	}
	sort.SliceStable(rs, func(a, b int) bool {
		if !rs[a].At.Equal(rs[b].At) {
			return rs[a].At.After(rs[b].At)
		}
		return rs[a].ID > rs[b].ID
	})
	return rs, nil
}

// RestoreToUndo is the restore "undo restore" means: with id "" the
// newest one not yet undone (an undo of a restore does not count), else
// the one whose ID is id or starts with it. ErrNoRestoreToUndo when there
// is none.
func (j *Journal) RestoreToUndo(id string) (*Restore, error) {
	rs, err := j.Restores()
	if err != nil {
		return nil, err
	}
	undoable := func(r Restore) bool { return r.Undone == nil && r.Undo == "" && (r.Before != "" || r.Owner != "") }
	if id == "" {
		for i := range rs {
			if undoable(rs[i]) {
				return &rs[i], nil
			}
		}
		return nil, ErrNoRestoreToUndo
	}
	var found []*Restore
	for i := range rs {
		if rs[i].ID == id {
			found = []*Restore{&rs[i]}
			break
		}
		if strings.HasPrefix(rs[i].ID, id) {
			found = append(found, &rs[i])
		}
	}
	switch {
	case len(found) == 0:
		return nil, fmt.Errorf("%w: none has the ID %q", ErrNoRestoreToUndo, id)
	case len(found) > 1:
		return nil, fmt.Errorf("%q is the start of %d restores' IDs; give more of it", id, len(found))
	case found[0].Undone != nil:
		return nil, fmt.Errorf("%w: %s is undone already", ErrNoRestoreToUndo, found[0].ID)
	case found[0].Undo != "":
		return nil, fmt.Errorf("%w: %s undid another restore; undo that one again instead", ErrNoRestoreToUndo, found[0].ID)
	case !undoable(*found[0]):
		return nil, fmt.Errorf("%w: %s wrote nothing", ErrNoRestoreToUndo, found[0].ID)
	}
	return found[0], nil
}

// MarkRestoreUndone records that the restore r was undone.
func (j *Journal) MarkRestoreUndone(r Restore) error {
	now := time.Now().UTC()
	r.Undone = &now
	return j.Save("restores/"+RecordName(r.ID)+".json", r)
}

// LockUndo serialises undo bookkeeping within the process; the caller
// unlocks.
func (j *Journal) LockUndo() func() {
	j.undoMu.Lock()
	return j.undoMu.Unlock
}

// Pending is a restore, an undo of a run or an undo of a restore under
// way, recorded before it writes anything (BeginPending) and removed
// when it is recorded as done or known not to have happened
// (EndPending). A process killed in between leaves it: the next session
// that opens the snapshot store reconciles it with what the store's
// recovery of the interrupted operation did (session.Recovered), so that
// a completed undo marks its run undone and can itself be undone, and
// one rolled back or never started leaves no trace.
type Pending struct {
	// Restore is the record it becomes when done (its ID, Owner, RunID
	// or Undo set; Before once known).
	Restore Restore `json:"restore"`
	// Reset: a restore to a snapshot, whose writes are recorded in the
	// ledger from its snapshots after it ran (Restore.Owner is the owner
	// they are to be recorded under); else a revert, whose writes the
	// store recorded under Restore.Owner before it made them.
	Reset bool `json:"reset,omitempty"`
	// PID is the process doing it: a record of a live process is its
	// own business, never reconciled by another.
	PID int `json:"pid"`
}

// BeginPending records p as under way (p.Restore's ID and At are set
// here when empty) and returns it.
func (j *Journal) BeginPending(p Pending) (Pending, error) {
	if p.Restore.At.IsZero() {
		p.Restore.At = time.Now().UTC()
	}
	if p.Restore.ID == "" {
		p.Restore.ID = NewRestoreID(p.Restore.At)
	}
	if p.PID == 0 {
		p.PID = os.Getpid()
	}
	return p, j.Save("pending/"+RecordName(p.Restore.ID)+".json", p)
}

// PendingRestores are the operations recorded as under way, oldest first.
func (j *Journal) PendingRestores() ([]Pending, error) {
	ps, err := Records[Pending](j, "pending")
	if err != nil {
		return nil, err
	}
	sort.SliceStable(ps, func(a, b int) bool { return ps[a].Restore.ID < ps[b].Restore.ID })
	return ps, nil
}

// EndPending forgets the pending record id (done, or known not done).
func (j *Journal) EndPending(id string) error {
	err := os.Remove(filepath.Join(j.dir, "pending", RecordName(id)+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// RestoreByID is the restore record whose ID is id, or nil.
func (j *Journal) RestoreByID(id string) (*Restore, error) {
	var r Restore
	ok, err := j.Load("restores/"+RecordName(id)+".json", &r)
	if !ok || err != nil {
		return nil, err
	}
	return &r, nil
}
