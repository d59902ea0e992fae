package rpc

import (
	"strings"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/workspace"
)

// Editors that declare clientFeatures.hunksFollowEdits move hunks
// themselves when the user types above or below them (docs/protocol.md,
// agentd/changes/didChange). For them a rebase that only moved hunks by the
// lines the edit added or removed sends nothing: with 200 hunks in a file
// that is one notice of every hunk's texts per keystroke saved on both
// sides. Anything else (a hunk stale, revived, recomputed) is sent.

// hunkSpan is where an open hunk of a `before` set sits in the buffer.
type hunkSpan struct {
	id, status   string
	start, lines int
}

// openSpans lists the open hunks of path in each `before` set that has any;
// the caller holds the book (Read).
func openSpans(sets []*changeRecord, path string) map[string][]hunkSpan {
	out := map[string][]hunkSpan{}
	for _, c := range sets {
		if c.Review != engine.ReviewBefore {
			continue
		}
		for _, f := range c.Files {
			if f.Path != path {
				continue
			}
			for _, h := range f.Hunks {
				if h.Status != review.Pending && h.Status != review.Stale {
					continue
				}
				r := lineRange(h.Hunk.OldStart, h.Hunk.OldLines)
				out[c.ID] = append(out[c.ID], hunkSpan{h.ID, string(h.Status), r.Start.Line, r.End.Line - r.Start.Line})
			}
		}
	}
	return out
}

// followSpans moves spans with edits the way the protocol tells editors to:
// a hunk that ends before the edited lines stays; one that starts after
// them (or at the start of its first line, when the edit inserts or removes
// whole lines) moves by the lines added or removed. ok is false when an
// edit reaches into a hunk, or is a full-text change.
func followSpans(spans []hunkSpan, edits []workspace.TextEdit) (out []hunkSpan, ok bool) {
	out = append([]hunkSpan(nil), spans...)
	for _, e := range edits {
		if e.Range == nil {
			return nil, false
		}
		s, end := e.Range.Start, e.Range.End
		delta := strings.Count(e.Text, "\n") - (end.Line - s.Line)
		for i := range out {
			h := &out[i]
			above := end.Line < h.start || (end.Line == h.start && end.Character == 0 && (e.Text == "" || strings.HasSuffix(e.Text, "\n")))
			switch {
			case above:
				h.start += delta
			case s.Line >= h.start+h.lines:
			default:
				return nil, false
			}
		}
	}
	return out, true
}

func sameSpans(a, b []hunkSpan) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// onlyFollowed reports whether the rebase of c's file at path only moved
// its open hunks the way the editor moved them itself (before: the spans
// before the rebase); the caller holds the book (Read).
func (s *Server) onlyFollowed(c *changeRecord, path string, before map[string][]hunkSpan, edits []workspace.TextEdit) bool {
	if !s.capabilities().hunksFollowEdits {
		return false
	}
	old, ok := before[c.ID]
	if !ok {
		return false
	}
	want, ok := followSpans(old, edits)
	return ok && sameSpans(want, openSpans([]*changeRecord{c}, path)[c.ID])
}
