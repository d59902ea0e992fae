package review

import (
	"io/fs"
	"time"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/workspace"
)

// Status is the state of a hunk, a file or a set.
type Status = string

const (
	Pending  Status = "pending"
	Accepted Status = "accepted"
	Rejected Status = "rejected"
	Stale    Status = "stale"
	// Partial is only ever the status of a file or a set: some units are
	// decided one way, some another.
	Partial Status = "partial"
)

// Hunk is one hunk of a file and its decision.
type Hunk struct {
	ID     string    `json:"id"`
	Status Status    `json:"status"`
	Reason string    `json:"reason,omitempty"`
	Hunk   diff.Hunk `json:"hunk"`
	// Base is the text a stale hunk, or a rejected one the user edited
	// into, was computed against (it no longer applies to the file's Old);
	// nil otherwise. A rejected hunk without it follows the user's typing
	// (followRejected), so that undoing the rejection puts it in its place.
	Base []byte `json:"base,omitempty"`
	// InOld marks an accepted hunk that a rebase must not apply onto Old
	// again: Old holds it already (a rebase took the user's text, with the
	// hunk written into it, as Old), or it is an undone rejection merged
	// from its Base, which the user's text holds. Its coordinates are
	// those of another text.
	InOld bool `json:"inOld,omitempty"`
}

// File is one file of a set with its contents, so that a restarted daemon
// can still apply it.
type File struct {
	Path     string       `json:"path"`
	OldPath  string       `json:"oldPath,omitempty"`
	Op       workspace.Op `json:"op"`
	BaseHash string       `json:"baseHash"`
	Mode     fs.FileMode  `json:"mode"`
	Binary   bool         `json:"binary,omitempty"`
	Old      []byte       `json:"old"`
	New      []byte       `json:"new"`
	Hunks    []*Hunk      `json:"hunks"`
	// Status decides the whole file when it is decided as a whole.
	Status Status `json:"status"`
	// Whole is workspace.FileChange.WholeFile, the one rule of which
	// changes are decided as one unit (binary, create, delete, move,
	// mode-only, symbolic links), taken when the set is made.
	Whole bool `json:"whole,omitempty"`
}

// WholeFile reports whether the file is decided as a whole (protocol
// `whole`): workspace.FileChange.WholeFile, recorded in Whole; for a
// record of an older build, the same rule from what the record holds.
func (f *File) WholeFile() bool {
	return f.Whole || f.Binary || f.Op != workspace.OpModify || len(f.Hunks) == 0 || f.Mode&fs.ModeSymlink != 0
}

// Counts are the decision units of a file or set by status (protocol
// `counts`); a whole file is one unit.
type Counts struct {
	Pending  int `json:"pending"`
	Accepted int `json:"accepted"`
	Rejected int `json:"rejected"`
	Stale    int `json:"stale"`
	Total    int `json:"total"`
}

func (c *Counts) add(st Status) {
	c.Total++
	switch st {
	case Pending:
		c.Pending++
	case Accepted:
		c.Accepted++
	case Rejected:
		c.Rejected++
	case Stale:
		c.Stale++
	}
}

// Counts counts the file's units.
func (f *File) Counts() Counts {
	var c Counts
	if f.WholeFile() {
		c.add(f.Status)
		return c
	}
	for _, h := range f.Hunks {
		c.add(h.Status)
	}
	return c
}

// Counts counts the set's units.
func (s *Set) Counts() Counts {
	var c Counts
	for _, u := range s.Units() {
		c.add(u.Status())
	}
	return c
}

// Summary is the file's status: its own for a whole file, else from its
// hunks (pending, accepted or rejected when all agree, stale when some are
// stale, partial otherwise).
func (f *File) Summary() Status {
	if f.WholeFile() {
		return f.Status
	}
	n := map[Status]int{}
	for _, h := range f.Hunks {
		n[h.Status]++
	}
	switch {
	case n[Accepted] == len(f.Hunks):
		return Accepted
	case n[Rejected] == len(f.Hunks):
		return Rejected
	case n[Pending] == len(f.Hunks):
		return Pending
	case n[Stale] > 0:
		return Stale
	}
	return Partial
}

// Set is a change set under review.
type Set struct {
	ID        string          `json:"id"`
	RunID     string          `json:"runId,omitempty"`
	StepID    string          `json:"stepId,omitempty"`
	Review    Mode            `json:"review"`
	CreatedAt time.Time       `json:"createdAt"`
	Files     []*File         `json:"files"`
	Reason    string          `json:"reason,omitempty"`
	Applied   []string        `json:"applied"`
	Rejected  []HunkRejection `json:"rejected"`
	Conflicts []string        `json:"conflicts"`
	// ReasonToModel: a rejection reason reaches a model (the change set
	// is an llm or agent step's, which is told which hunks were rejected
	// and why); set by the front end from the run's plan.
	ReasonToModel bool `json:"reasonToModel,omitempty"`
	// Rev is the revision of the set's record in the journal: each save
	// writes the next one, and a book never overwrites a record with a
	// higher revision than the one it loaded or saved (sync.go). 0: not
	// recorded yet (or by a build before revisions).
	Rev int64 `json:"rev,omitempty"`

	// decided is closed when nothing is pending (Book.Wait waits on it).
	decided chan struct{}
}

// New starts the review of cs in the given mode: every unit is pending.
// A set without an id gets one.
func New(cs *workspace.ChangeSet, mode Mode) *Set {
	s := &Set{ID: cs.ID, RunID: cs.RunID, StepID: cs.StepID, Review: mode, CreatedAt: time.Now().UTC(),
		Applied: []string{}, Rejected: []HunkRejection{}, Conflicts: []string{}}
	if s.ID == "" {
		s.ID = "cs-" + workspace.NewID()
	}
	for _, f := range cs.Files {
		fr := &File{Path: f.Path, OldPath: f.OldPath, Op: f.Op, BaseHash: f.BaseHash, Mode: f.Mode, Binary: f.Binary,
			Old: f.Old, New: f.New, Status: Pending}
		fd := f.Diff
		if fd == nil && !f.Binary {
			fd = diff.Compute(f.Path, f.Path, f.Old, f.New)
		}
		if fd != nil {
			for _, h := range fd.Hunks {
				fr.Hunks = append(fr.Hunks, &Hunk{ID: h.ID, Status: Pending, Hunk: h})
			}
		}
		// The one rule (workspace's, which applies the change), asked
		// about the change with the diff the review shows.
		fc := *f
		fc.Diff = fd
		fr.Whole = fc.WholeFile()
		s.Files = append(s.Files, fr)
	}
	return s
}

// Unit is one decision unit: a hunk, or a whole file (H == nil).
type Unit struct {
	F *File
	H *Hunk
}

// ID is the unit's id: the hunk's, or the file's path for a whole file.
func (u Unit) ID() string {
	if u.H == nil {
		return u.F.Path
	}
	return u.H.ID
}

// Status is the unit's status.
func (u Unit) Status() Status {
	if u.H == nil {
		return u.F.Status
	}
	return u.H.Status
}

func (u Unit) set(status Status, reason string) {
	if u.H == nil {
		u.F.Status = status
		for _, h := range u.F.Hunks {
			h.Status, h.Reason = status, reason
		}
		return
	}
	u.H.Status, u.H.Reason = status, reason
}

// Units lists every decision unit of the set.
func (s *Set) Units() []Unit {
	var out []Unit
	for _, f := range s.Files {
		if f.WholeFile() {
			out = append(out, Unit{F: f})
			continue
		}
		for _, h := range f.Hunks {
			out = append(out, Unit{F: f, H: h})
		}
	}
	return out
}

// Status is the set's status: accepted (also when empty), pending or
// rejected when every unit is; stale when some are stale and none is
// decided; partial otherwise.
func (s *Set) Status() Status {
	n := map[Status]int{}
	units := s.Units()
	for _, u := range units {
		n[u.Status()]++
	}
	switch total := len(units); {
	case total == 0 || n[Accepted] == total:
		return Accepted
	case n[Pending] == total:
		return Pending
	case n[Rejected] == total:
		return Rejected
	case n[Stale] > 0 && n[Accepted] == 0 && n[Rejected] == 0:
		return Stale
	}
	return Partial
}

// pending reports whether some unit is still pending.
func (s *Set) pending() bool {
	for _, u := range s.Units() {
		if u.Status() == Pending {
			return true
		}
	}
	return false
}

// SelectError is Select's error when a decision names no unit.
type SelectError struct {
	Field   string // "hunkId" or "uri"
	Message string
}

func (e *SelectError) Error() string { return e.Field + ": " + e.Message }

// Select returns the units a decision names: path "" means every file,
// hunkID "" every unit of the file(s). A whole file is also named by the
// id of one of its hunks, or by its path as the hunk id.
func (s *Set) Select(path, hunkID string) ([]Unit, error) {
	var out []Unit
	for _, u := range s.Units() {
		if path != "" && u.F.Path != path {
			continue
		}
		if hunkID != "" && !u.named(hunkID) {
			continue
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		switch {
		case hunkID != "":
			return nil, &SelectError{Field: "hunkId", Message: "change set " + s.ID + " has no hunk \"" + hunkID + "\" (it may have been rebased: get the change set again)"}
		case path != "":
			return nil, &SelectError{Field: "uri", Message: "change set " + s.ID + " does not change " + path}
		}
	}
	return out, nil
}

func (u Unit) named(id string) bool {
	if u.H != nil {
		return u.H.ID == id
	}
	if id == u.F.Path {
		return true
	}
	for _, h := range u.F.Hunks {
		if h.ID == id {
			return true
		}
	}
	return false
}

// Outcome is the set's decisions as the engine reports them to the step.
func (s *Set) Outcome() *Outcome {
	return &Outcome{Applied: append([]string{}, s.Applied...),
		Rejected:  append([]HunkRejection(nil), s.Rejected...),
		Conflicts: append([]string(nil), s.Conflicts...)}
}

// changeSet rebuilds a workspace change set for the given files.
func (s *Set) changeSet(files []*File) *workspace.ChangeSet {
	cs := &workspace.ChangeSet{ID: s.ID, RunID: s.RunID, StepID: s.StepID}
	for _, f := range files {
		cs.Files = append(cs.Files, f.change())
	}
	return cs
}

// change rebuilds the workspace file change of f.
func (f *File) change() *workspace.FileChange {
	fd := &diff.FileDiff{OldPath: f.OldPath, NewPath: f.Path, Binary: f.Binary}
	if fd.OldPath == "" {
		fd.OldPath = f.Path
	}
	for _, h := range f.Hunks {
		fd.Hunks = append(fd.Hunks, h.Hunk)
	}
	return &workspace.FileChange{Path: f.Path, OldPath: f.OldPath, Op: f.Op, BaseHash: f.BaseHash,
		Old: f.Old, New: f.New, Mode: f.Mode, Binary: f.Binary, Diff: fd}
}
