package review

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/workspace"
)

// Action is what a decision does.
type Action string

const (
	Accept Action = "accept"
	Reject Action = "reject"
)

// Decision is one decision on units of a set: Path "" covers every file,
// HunkID "" every unit of the file(s) (see Set.Select).
type Decision struct {
	Path   string
	HunkID string
	Action Action
}

// DecisionError says which decision of a Resolve is wrong.
type DecisionError struct {
	Index int
	Field string // "action", "hunkId" or "uri"
	Err   error
}

func (e *DecisionError) Error() string {
	return fmt.Sprintf("decisions[%d].%s: %v", e.Index, e.Field, e.Err)
}
func (e *DecisionError) Unwrap() error { return e.Err }

// Conflict is a unit that could not be applied or taken out.
type Conflict struct {
	Path    string
	Unit    string // the unit's id
	Message string
}

// Result is what one Resolve or Revert did.
type Result struct {
	Status    Status
	Applied   []string // unit ids now accepted
	Rejected  []string // unit ids now rejected (taken out if they were applied)
	Conflicts []Conflict
}

// Files is how a review reaches the files: the workspace, and the writer
// for accepted and reverted content (nil: atomic writes on disk).
type Files struct {
	WS     *workspace.Workspace
	Writer workspace.FileWriter
}

const staleMessage = "the hunk no longer applies because the file was edited; get the change set again or reject it"

// Resolve applies decisions to a set, in order:
//   - accept a pending unit: in `before` mode it is written (rebased onto
//     the file as it is now; a clash marks it stale and is a conflict), in
//     `after` mode it is on disk already and is only marked;
//   - reject a pending or stale unit: in `after` mode it is taken out of
//     the file; in `before` mode it is never written;
//   - reject an accepted unit named by its id: it is taken out again;
//   - accept a rejected unit named by its id: the rejection is undone and
//     the unit is put back into the file (three-way onto what is there);
//   - accept a stale unit: a conflict (get the set again or reject it).
//
// reason goes with the rejections to the step.
func (b *Book) Resolve(ctx context.Context, files Files, s *Set, decisions []Decision, reason string) (*Result, error) {
	b.apply.Lock()
	defer b.apply.Unlock()
	end, err := b.begin(ctx, s, func() []Unit { return namedUnits(s, decisions) })
	if err != nil {
		return nil, err
	}
	decided := false
	defer func() { end(decided) }()
	res, err := b.decide(ctx, files, s, decisions, reason)
	decided = err == nil
	return res, err
}

// decide is Resolve's work once the set is held (b.apply, begin): Edit
// decides through it too. Every write it makes is recorded as the run's
// edit (recording) before it is made.
func (b *Book) decide(ctx context.Context, files Files, s *Set, decisions []Decision, reason string) (*Result, error) {
	files = b.recording(files, s)
	res := &Result{Applied: []string{}, Rejected: []string{}, Conflicts: []Conflict{}}
	var apply, mark, reject, takeOut []Unit
	b.mu.Lock()
	for i, d := range decisions {
		if d.Action != Accept && d.Action != Reject {
			b.mu.Unlock()
			return nil, &DecisionError{Index: i, Field: "action", Err: fmt.Errorf("must be accept or reject, not %q", d.Action)}
		}
		units, err := s.Select(d.Path, d.HunkID)
		if err != nil {
			b.mu.Unlock()
			var se *SelectError
			errors.As(err, &se)
			return nil, &DecisionError{Index: i, Field: se.Field, Err: errors.New(se.Message)}
		}
		// Only a decision that names a hunk (or a whole file by its id)
		// reverts an accepted unit or undoes a rejection: "reject all"
		// never reverts what was accepted, "accept all" never overrides
		// a rejection.
		named := d.HunkID != ""
		for _, u := range units {
			switch st := u.Status(); {
			case st == Pending && d.Action == Accept && s.Review == Before:
				apply = append(apply, u)
			case st == Pending && d.Action == Accept:
				mark = append(mark, u)
			case st == Rejected && d.Action == Accept && named:
				apply = append(apply, u) // undo the rejection
			case (st == Pending || st == Stale) && d.Action == Reject && s.Review == Before:
				reject = append(reject, u)
			case (st == Pending || st == Stale) && d.Action == Reject,
				st == Accepted && d.Action == Reject && named:
				takeOut = append(takeOut, u)
			case st == Stale && d.Action == Accept:
				res.Conflicts = append(res.Conflicts, Conflict{Path: u.F.Path, Unit: u.ID(), Message: staleMessage})
			}
		}
	}
	// Every decision is valid: act.
	b.markLocked(s, mark, Accepted, "", res)
	b.markLocked(s, reject, Rejected, reason, res)
	b.mu.Unlock()

	b.applyUnits(ctx, files, s, apply, res)
	b.takeOut(ctx, files, s, takeOut, reason, res)
	b.finish(s, res)
	return res, nil
}

// Revert takes out units that are on disk: accepted ones, and in `after`
// mode also those not reviewed yet. path and hunkID select as in
// Set.Select; reason defaults to "reverted".
func (b *Book) Revert(ctx context.Context, files Files, s *Set, path, hunkID, reason string) (*Result, error) {
	b.apply.Lock()
	defer b.apply.Unlock()
	end, err := b.begin(ctx, s, func() []Unit { u, _ := s.Select(path, hunkID); return u })
	if err != nil {
		return nil, err
	}
	decided := false
	defer func() { end(decided) }()
	if reason == "" {
		reason = "reverted"
	}
	files = b.recording(files, s)
	res := &Result{Applied: []string{}, Rejected: []string{}, Conflicts: []Conflict{}}
	b.mu.Lock()
	units, err := s.Select(path, hunkID)
	var takeOut []Unit
	for _, u := range units {
		if st := u.Status(); st == Accepted || (s.Review != Before && st == Pending) {
			takeOut = append(takeOut, u)
		}
	}
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	b.takeOut(ctx, files, s, takeOut, reason, res)
	b.finish(s, res)
	decided = true
	return res, nil
}

// RecordEdits makes every write of the book's decisions (a unit accepted
// in `before` mode, one taken out again, a rejection undone, an edit made
// with `e` and accepted) recorded through rec as the edit of the set's run
// and step, before it is made (workspace.RecordingWriter): what the agent
// changed is the agent's however it got to the file, and undo takes it
// back. A set resolved after its run ended is recorded under that run.
func (b *Book) RecordEdits(rec workspace.EditRecorder) {
	b.apply.Lock()
	b.rec = rec
	b.apply.Unlock()
}

// recording is files with a writer that records the set's writes (see
// RecordEdits). The caller holds b.apply.
func (b *Book) recording(files Files, s *Set) Files {
	b.mu.Lock()
	run, step := s.RunID, s.StepID
	b.mu.Unlock()
	if b.rec == nil || run == "" || files.WS == nil {
		return files
	}
	files.Writer = files.WS.RecordingWriter(files.Writer, b.rec, run, step)
	return files
}

// finish sets the result's status and wakes Wait when nothing is pending;
// the decision's end (begin) records the set's new state in the journal.
func (b *Book) finish(s *Set, res *Result) {
	b.mu.Lock()
	res.Status = s.Status()
	s.finish()
	b.mu.Unlock()
}

// markLocked sets units' status and records the decision. The caller
// holds b.mu.
func (b *Book) markLocked(s *Set, units []Unit, status Status, reason string, res *Result) {
	for _, u := range units {
		u.set(status, reason)
		id := u.ID()
		switch status {
		case Accepted:
			res.Applied = append(res.Applied, id)
			s.Applied = append(s.Applied, id)
			// An undone rejection is no longer one.
			s.Rejected = slices.DeleteFunc(s.Rejected, func(r HunkRejection) bool { return r.Path == u.F.Path && r.HunkID == id })
		case Rejected:
			res.Rejected = append(res.Rejected, id)
			s.Rejected = append(s.Rejected, HunkRejection{Path: u.F.Path, HunkID: id, Reason: reason})
		}
	}
}

func (b *Book) mark(s *Set, units []Unit, status Status, reason string, res *Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.markLocked(s, units, status, reason, res)
}

// applyUnits writes units through the workspace, which rebases them onto
// what the file holds now or reports a conflict: those units become stale.
func (b *Book) applyUnits(ctx context.Context, files Files, s *Set, units []Unit, res *Result) {
	// An undone rejection the user edited into keeps the text it was
	// computed against (Base): it is merged from there, on its own.
	units = slices.DeleteFunc(slices.Clone(units), func(u Unit) bool {
		if u.H == nil || u.H.Base == nil || u.Status() != Rejected {
			return false
		}
		b.applyFromBase(ctx, files, s, u, res)
		return true
	})
	if len(units) == 0 {
		return
	}
	want := map[*File]map[string]bool{}
	var fs []*File
	for _, u := range units {
		if want[u.F] == nil {
			want[u.F] = map[string]bool{}
			fs = append(fs, u.F)
		}
		want[u.F][u.ID()] = true
	}
	byPath := map[string]*File{}
	for _, f := range fs {
		byPath[f.Path] = f
	}
	accept := func(fc *workspace.FileChange, h diff.Hunk) bool {
		f := byPath[fc.Path]
		if f == nil {
			return false
		}
		return want[f][f.Path] || (h.ID != "" && want[f][h.ID])
	}
	ar, err := files.WS.Apply(ctx, s.changeSet(fs), accept, files.Writer)
	if err != nil {
		for _, u := range units {
			res.Conflicts = append(res.Conflicts, Conflict{Path: u.F.Path, Unit: u.ID(), Message: err.Error()})
		}
		return
	}
	conflicted := map[string]string{}
	for _, ce := range ar.Conflicts {
		conflicted[ce.Path] = ce.Error()
	}
	var ok []Unit
	b.mu.Lock()
	for _, u := range units {
		if msg, bad := conflicted[u.F.Path]; bad {
			res.Conflicts = append(res.Conflicts, Conflict{Path: u.F.Path, Unit: u.ID(), Message: msg})
			if u.Status() != Rejected { // an undone rejection that clashes stays rejected
				u.set(Stale, msg)
				s.Conflicts = append(s.Conflicts, u.F.Path)
			}
			continue
		}
		ok = append(ok, u)
	}
	b.mu.Unlock()
	b.mark(s, ok, Accepted, "", res)
}

// applyFromBase undoes the rejection of a hunk whose Base is the text it
// was computed against: three-way from Base onto what the file holds now.
// Applied, the file holds it and Old does not: InOld keeps a rebase from
// applying it onto Old again (its coordinates are Base's).
func (b *Book) applyFromBase(ctx context.Context, files Files, s *Set, u Unit, res *Result) {
	h := u.H
	theirs, err := diff.Apply(h.Base, []diff.Hunk{h.Hunk})
	if err == nil {
		fc := &workspace.FileChange{Path: u.F.Path, OldPath: u.F.OldPath, Op: u.F.Op, BaseHash: workspace.Hash(h.Base),
			Old: h.Base, New: theirs, Mode: u.F.Mode,
			Diff: &diff.FileDiff{OldPath: u.F.Path, NewPath: u.F.Path, Hunks: []diff.Hunk{h.Hunk}}}
		var ar *workspace.ApplyResult
		ar, err = files.WS.Apply(ctx, &workspace.ChangeSet{ID: s.ID, RunID: s.RunID, StepID: s.StepID, Files: []*workspace.FileChange{fc}},
			func(*workspace.FileChange, diff.Hunk) bool { return true }, files.Writer)
		if err == nil && len(ar.Conflicts) > 0 {
			err = ar.Conflicts[0]
		}
	}
	if err != nil {
		res.Conflicts = append(res.Conflicts, Conflict{Path: u.F.Path, Unit: u.ID(), Message: err.Error()})
		return
	}
	b.mu.Lock()
	h.InOld, h.Base = true, nil
	b.mu.Unlock()
	b.mark(s, []Unit{u}, Accepted, "", res)
}

// takeOut reverts units that are in the file, one at a time, on what the
// file holds now (the user's later edits stay); those that cannot be taken
// out are conflicts and keep their status.
func (b *Book) takeOut(ctx context.Context, files Files, s *Set, units []Unit, reason string, res *Result) {
	var done []Unit
	for _, u := range units {
		var ids []string
		if u.H != nil {
			ids = []string{u.H.ID}
		}
		ar, err := files.WS.Revert(ctx, u.F.change(), ids, files.Writer)
		if err == nil && ar != nil && len(ar.Conflicts) > 0 {
			err = ar.Conflicts[0]
		}
		if err != nil {
			res.Conflicts = append(res.Conflicts, Conflict{Path: u.F.Path, Unit: u.ID(),
				Message: fmt.Sprintf("could not take the change out again: %v", err)})
			continue
		}
		done = append(done, u)
	}
	b.mark(s, done, Rejected, reason, res)
}
