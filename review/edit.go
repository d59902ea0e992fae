package review

import (
	"bytes"
	"fmt"
	"regexp"
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
// (and to edit, with Edited) when a set's review is finished later (agentd
// review). The caller holds the book's lock.
func (s *Set) PendingChange() *workspace.ChangeSet {
	cs := &workspace.ChangeSet{ID: s.ID, RunID: s.RunID, StepID: s.StepID}
	for _, f := range s.Files {
		fc := &workspace.FileChange{Path: f.Path, OldPath: f.OldPath, Op: f.Op, BaseHash: f.BaseHash,
			Old: f.Old, New: f.New, Mode: f.Mode, Binary: f.Binary}
		old := f.OldPath
		if old == "" {
			old = f.Path
		}
		if f.WholeFile() {
			if f.Status != Pending {
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
			if h.Status == Pending {
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
