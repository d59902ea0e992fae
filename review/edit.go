package review

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/workspace"
)

// A change set edited as a patch (the terminal's "e", as `git add -p`'s
// "e"): what the user kept is decided through the review like any other
// decision, and the journal records every file of the set, kept, edited or
// left out.

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$`)

// EditError is an edited patch that cannot be used, with the line (1-based,
// in the text given) and why. Nothing is applied.
type EditError struct {
	Line   int
	Reason string
}

func (e *EditError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d of the edited patch: %s", e.Line, e.Reason)
	}
	return "the edited patch: " + e.Reason
}

// Recount rewrites the hunk headers of an edited unified diff from the
// lines each hunk holds, as `git add -p` recounts an edited hunk: lines
// added past a hunk's original line count are kept, never dropped. A line
// inside a hunk that is not context (" "), removed ("-"), added ("+"), a
// "\ No newline" marker or empty (an empty context line whose space an
// editor stripped) is refused with an *EditError naming it.
func Recount(patch string) (string, error) {
	lines := strings.SplitAfter(patch, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var out strings.Builder
	for i := 0; i < len(lines); {
		body := strings.TrimRight(lines[i], "\r\n")
		m := hunkHeader.FindStringSubmatch(body)
		if m == nil {
			out.WriteString(lines[i])
			i++
			continue
		}
		header := i
		i++
		oldN, newN := 0, 0
		var hunk strings.Builder
		for ; i < len(lines); i++ {
			l := strings.TrimRight(lines[i], "\r\n")
			if hunkHeader.MatchString(l) || strings.HasPrefix(l, "diff ") ||
				(strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ")) {
				break
			}
			switch {
			case l == "":
				oldN++
				newN++
				hunk.WriteString(" " + lines[i])
				continue
			case l[0] == ' ':
				oldN++
				newN++
			case l[0] == '-':
				oldN++
			case l[0] == '+':
				newN++
			case l[0] == '\\':
			default:
				return "", &EditError{Line: i + 1, Reason: fmt.Sprintf("%q is not a hunk line: each line of a hunk starts with a space (context), - (removed) or + (added); lines starting with # are ignored", l)}
			}
			hunk.WriteString(lines[i])
		}
		if oldN == 0 && newN == 0 {
			continue // the hunk was emptied: left out
		}
		oldStart, _ := strconv.Atoi(m[1])
		newStart, _ := strconv.Atoi(m[3])
		if oldN == 0 && oldStart > 0 && m[2] != "0" {
			return "", &EditError{Line: header + 1, Reason: "the hunk keeps no context or removed line, so where it goes is lost; keep the lines starting with a space or -"}
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@%s\n", oldStart, oldN, newStart, newN, m[5])
		out.WriteString(hunk.String())
	}
	return out.String(), nil
}

// Edited is what deciding cs by the user's edit of its patch comes to: the
// change set to review (every file of cs, an edited file with the text the
// edit gives) and the decisions (kept files accepted, files whose section
// was deleted or emptied rejected with the reason "removed in the
// editor"). The patch is recounted first (Recount). A patch that does not
// apply is an *EditError: nothing is decided, never a silent drop.
func Edited(cs *workspace.ChangeSet, patch string) (*workspace.ChangeSet, []Decision, error) {
	fixed, err := Recount(patch)
	if err != nil {
		return nil, nil, err
	}
	edited, err := diff.Parse(fixed)
	if err != nil {
		return nil, nil, &EditError{Reason: fmt.Sprintf("it cannot be read (%v)", err)}
	}
	byPath := map[string]*diff.FileDiff{}
	for _, fd := range edited {
		p := fd.NewPath
		if p == "" {
			p = fd.OldPath
		}
		byPath[p] = fd
	}
	out := &workspace.ChangeSet{ID: cs.ID, RunID: cs.RunID, StepID: cs.StepID}
	var decisions []Decision
	for _, f := range cs.Files {
		fd, shown := byPath[f.Path]
		textual := f.Diff != nil && !f.Binary
		if !textual {
			// Not shown as text: kept as proposed.
			out.Files = append(out.Files, f)
			decisions = append(decisions, Decision{Path: f.Path, Action: Accept})
			continue
		}
		if !shown || len(fd.Hunks) == 0 {
			out.Files = append(out.Files, f)
			decisions = append(decisions, Decision{Path: f.Path, Action: Reject})
			continue
		}
		var text []byte
		switch f.Op {
		case workspace.OpModify:
			text, err = diff.Apply(f.Old, fd.Hunks)
			if err != nil {
				return nil, nil, &EditError{Reason: fmt.Sprintf("the edit of %s does not apply to the file (%v); change the + lines and keep the - and context lines as they are", f.Path, err)}
			}
		case workspace.OpCreate:
			var nb strings.Builder
			for _, h := range fd.Hunks {
				nb.WriteString(h.NewText())
			}
			text = []byte(nb.String())
		default:
			out.Files = append(out.Files, f)
			decisions = append(decisions, Decision{Path: f.Path, Action: Accept})
			continue
		}
		if f.Op == workspace.OpModify && bytes.Equal(text, f.Old) {
			out.Files = append(out.Files, f)
			decisions = append(decisions, Decision{Path: f.Path, Action: Reject})
			continue
		}
		nf := f
		if !bytes.Equal(text, f.New) {
			c := *f
			c.New = text
			c.Diff = diff.Compute(f.Diff.OldPath, f.Diff.NewPath, f.Old, text)
			nf = &c
		}
		out.Files = append(out.Files, nf)
		decisions = append(decisions, Decision{Path: f.Path, Action: Accept})
	}
	return out, decisions, nil
}

// EditReason is the reason recorded for a file left out in the editor.
const EditReason = "removed in the editor"

// PendingChange is the part of s still pending, as a change set to show
// (and to edit, with Book.Edit) when a set's review is finished later
// (agentd review). The caller holds the book's lock.
func (s *Set) PendingChange() *workspace.ChangeSet { return s.PendingChangeOf("", "") }

// PendingChangeOf is the pending part of the units path and hunkID select
// (as in Select: "" is every file, every unit), as PendingChange.
func (s *Set) PendingChangeOf(path, hunkID string) *workspace.ChangeSet {
	cs := &workspace.ChangeSet{ID: s.ID, RunID: s.RunID, StepID: s.StepID}
	for _, f := range s.Files {
		if path != "" && f.Path != path {
			continue
		}
		fc := &workspace.FileChange{Path: f.Path, OldPath: f.OldPath, Op: f.Op, BaseHash: f.BaseHash,
			Old: f.Old, New: f.New, Mode: f.Mode, Binary: f.Binary}
		old := f.OldPath
		if old == "" {
			old = f.Path
		}
		if f.WholeFile() {
			if f.Status != Pending || (hunkID != "" && !(Unit{F: f}).named(hunkID)) {
				continue
			}
			if !f.Binary && len(f.Hunks) > 0 {
				fc.Diff = &diff.FileDiff{OldPath: old, NewPath: f.Path}
				for _, h := range f.Hunks {
					fc.Diff.Hunks = append(fc.Diff.Hunks, h.Hunk)
				}
			}
			cs.Files = append(cs.Files, fc)
			continue
		}
		fd := &diff.FileDiff{OldPath: old, NewPath: f.Path}
		for _, h := range f.Hunks {
			if h.Status == Pending && (hunkID == "" || h.ID == hunkID) {
				fd.Hunks = append(fd.Hunks, h.Hunk)
			}
		}
		if len(fd.Hunks) > 0 {
			fc.Diff = fd
			cs.Files = append(cs.Files, fc)
		}
	}
	return cs
}

// Edit decides the units path and hunkID select (as in Select; "" "" is
// every pending unit) by the user's edit of their pending part, the patch
// PendingChangeOf(path, hunkID) shows (the terminal's "e"): what the user
// kept is accepted, with the edited lines, and what the user deleted from
// the patch is rejected with reason. It decides through the same path as
// Resolve, so the writes go through files.Writer and merge onto the file
// as it is when they are made (a user's edit meanwhile stays):
//   - in `before` mode the edited units' pending hunks are replaced by the
//     edited ones, which are then accepted (written, rebased);
//   - in `after` mode the file holds the agent's hunks already: the edit is
//     written over them (three-way, onto what the file holds now), then
//     the edited hunks are accepted.
//
// An edited hunk that replaces one hunk keeps its id, so what the step
// reports as applied names its file. A patch that cannot be used is an
// *EditError and nothing is done; a file whose edit clashes with the
// user's edits since is a conflict and its units stay pending.
func (b *Book) Edit(ctx context.Context, files Files, s *Set, path, hunkID, patch, reason string) (*Result, error) {
	b.apply.Lock()
	defer b.apply.Unlock()
	end, err := b.begin(ctx, s, func() []Unit { return pendingOf(s, path, hunkID) })
	if err != nil {
		return nil, err
	}
	decided := false
	defer func() { end(decided) }()
	b.mu.Lock()
	shown := s.PendingChangeOf(path, hunkID)
	b.mu.Unlock()
	if len(shown.Files) == 0 {
		return nil, fmt.Errorf("change set %s: nothing pending there to edit (it was decided meanwhile)", s.ID)
	}
	edited, fileDecisions, err := Edited(shown, patch)
	if err != nil {
		return nil, err
	}
	res := &Result{Applied: []string{}, Rejected: []string{}, Conflicts: []Conflict{}}
	var decisions []Decision
	for i, nf := range edited.Files {
		var f *File
		b.mu.Lock()
		for _, g := range s.Files {
			if g.Path == nf.Path {
				f = g
			}
		}
		b.mu.Unlock()
		if f == nil {
			continue
		}
		ids, conflict := b.editFile(ctx, files, s, f, shown.Files[i], nf, hunkID, fileDecisions[i].Action)
		if conflict != nil {
			res.Conflicts = append(res.Conflicts, *conflict)
			continue
		}
		for _, id := range ids {
			decisions = append(decisions, Decision{Path: f.Path, HunkID: id, Action: fileDecisions[i].Action})
		}
	}
	got, err := b.decide(ctx, files, s, decisions, reason)
	if err != nil {
		return nil, err
	}
	decided = true
	got.Conflicts = append(res.Conflicts, got.Conflicts...)
	return got, nil
}

// pendingOf lists the pending units path and hunkID select; the caller
// holds b.mu.
func pendingOf(s *Set, path, hunkID string) []Unit {
	units, _ := s.Select(path, hunkID)
	var out []Unit
	for _, u := range units {
		if u.Status() == Pending {
			out = append(out, u)
		}
	}
	return out
}

// editFile puts the user's edit of f's shown pending units (was: as
// shown, nf: as edited) into the set, and in `after` mode into the file,
// and returns the ids of the units to decide with act. A file whose edit
// cannot be written returns a conflict and is left as it was.
func (b *Book) editFile(ctx context.Context, files Files, s *Set, f *File, was, nf *workspace.FileChange, hunkID string, act Action) ([]string, *Conflict) {
	b.mu.Lock()
	var shown []*Hunk // the pending hunks the patch showed
	for _, h := range f.Hunks {
		if h.Status == Pending && (f.WholeFile() || hunkID == "" || h.ID == hunkID) {
			shown = append(shown, h)
		}
	}
	whole, review := f.WholeFile(), s.Review
	b.mu.Unlock()
	unitIDs := func() []string {
		if whole {
			return []string{f.Path}
		}
		ids := make([]string, len(shown))
		for i, h := range shown {
			ids[i] = h.ID
		}
		return ids
	}
	if act != Accept || nf == was || nf.Diff == nil || (whole && f.Op != workspace.OpCreate) {
		return unitIDs(), nil // as proposed, or left out
	}
	// The file's text with the edit in place of the shown hunks: Edited
	// applied the edited hunks on Old (a create: the edited text).
	text := nf.New
	b.mu.Lock()
	var kept []diff.Hunk // the other units' hunks on Old, for after mode
	for _, h := range f.Hunks {
		if !slices.Contains(shown, h) && !h.InOld && (h.Status == Accepted || h.Status == Pending) {
			kept = append(kept, h.Hunk)
		}
	}
	old, newText := f.Old, f.New
	b.mu.Unlock()
	if review != Before {
		// The file holds the agent's text of these units: write the edit
		// over it, merged onto what the file holds now.
		from, to := newText, text
		if !whole {
			// What the agent's hunks made of Old, and the same with the
			// edit in place of the shown ones (the others stay).
			var err error
			if from, err = diff.Apply(old, append(slices.Clone(kept), hunksOf(shown)...)); err == nil && len(kept) > 0 {
				to, err = applyAround(old, text, kept)
			}
			if err != nil {
				return nil, &Conflict{Path: f.Path, Unit: f.Path, Message: fmt.Sprintf("the edit cannot be put together with the file's other hunks (%v); nothing was changed", err)}
			}
		}
		fc := &workspace.FileChange{Path: f.Path, Op: workspace.OpModify, Old: from, New: to, BaseHash: workspace.Hash(from), Mode: f.Mode,
			Diff: diff.Compute(f.Path, f.Path, from, to)}
		ar, err := files.WS.Apply(ctx, &workspace.ChangeSet{ID: s.ID, RunID: s.RunID, StepID: s.StepID, Files: []*workspace.FileChange{fc}}, nil, files.Writer)
		if err == nil && len(ar.Conflicts) > 0 {
			err = ar.Conflicts[0]
		}
		if err != nil {
			return nil, &Conflict{Path: f.Path, Unit: f.Path, Message: fmt.Sprintf("the edit was not written (%v); the change stays as it was, pending", err)}
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if whole {
		f.New = text
		f.Hunks = nil
		if !f.Binary {
			for _, h := range diff.Compute(f.Path, f.Path, f.Old, text).Hunks {
				f.Hunks = append(f.Hunks, &Hunk{ID: h.ID, Status: Pending, Hunk: h})
			}
		}
		return []string{f.Path}, nil
	}
	fresh := diff.Compute(f.Path, f.Path, f.Old, text).Hunks
	keepIDs(fresh, shown, f.Hunks)
	var hunks []*Hunk
	for _, h := range f.Hunks {
		if !slices.Contains(shown, h) {
			hunks = append(hunks, h)
		}
	}
	var ids []string
	for _, h := range fresh {
		hunks = append(hunks, &Hunk{ID: h.ID, Status: Pending, Hunk: h})
		ids = append(ids, h.ID)
	}
	slices.SortStableFunc(hunks, func(x, y *Hunk) int { return x.Hunk.OldStart - y.Hunk.OldStart })
	f.Hunks = hunks
	var all []diff.Hunk
	for _, h := range hunks {
		if !h.InOld && h.Status != Rejected && h.Status != Stale {
			all = append(all, h.Hunk)
		}
	}
	if n, err := diff.Apply(f.Old, all); err == nil {
		f.New = n
	}
	return ids, nil
}

func hunksOf(hs []*Hunk) []diff.Hunk {
	out := make([]diff.Hunk, len(hs))
	for i, h := range hs {
		out[i] = h.Hunk
	}
	return out
}

// applyAround is text (old with an edit) with the hunks kept applied too:
// the hunks are on old, so they are merged in three-way.
func applyAround(old, text []byte, kept []diff.Hunk) ([]byte, error) {
	theirs, err := diff.Apply(old, kept)
	if err != nil {
		return nil, err
	}
	m, conflicts := diff.Merge3Adjacent(old, text, theirs)
	if len(conflicts) > 0 {
		return nil, fmt.Errorf("%d region(s) overlap", len(conflicts))
	}
	return m, nil
}

// keepIDs gives each fresh hunk that overlaps one of the shown hunks the
// id of the first such hunk not given yet (the edit of a hunk is that
// hunk, edited), unless another hunk of the file holds that id.
func keepIDs(fresh []diff.Hunk, shown, all []*Hunk) {
	taken := map[string]bool{}
	for _, h := range all {
		if !slices.Contains(shown, h) {
			taken[h.ID] = true
		}
	}
	for i := range fresh {
		n := &fresh[i]
		for _, h := range shown {
			if !taken[h.ID] && overlaps(n, &h.Hunk) {
				n.ID = h.ID
				break
			}
		}
		taken[n.ID] = true
	}
}

func overlaps(a, b *diff.Hunk) bool {
	aEnd, bEnd := a.OldStart+max(a.OldLines, 1), b.OldStart+max(b.OldLines, 1)
	return a.OldStart < bEnd && b.OldStart < aEnd
}
