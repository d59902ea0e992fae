package rpc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/review"
)

// expectAt checks the hunks' `at` (review.File.Starts) against the real
// file: in the last change set (agentd/changes/get) and in the last
// agentd/changes/didChange that lists the file, every hunk of rel whose
// place is known starts at `at` in the file as it is now (on disk, or the
// editor's buffer with in=buffer): the lines there are the hunk's side the
// file holds (in `before` mode its new text once accepted, else its old
// text; in `after` mode its old text once rejected, else its new text).
// It fails unless at least one hunk moved from its range, so that a
// scenario proves the shift (with moved=no: unless none did, the ranges
// being current). Hunks placed by a best guess (a stale hunk,
// a rejected one the user edited into, an accepted one the user typed
// around since) are skipped, named by review's own fields.
func (sc *scenario) expectAt(lineNo int, rel string, kv map[string]string) {
	t := sc.t
	t.Helper()
	cs := sc.change()
	var text string
	if kv["in"] == "buffer" {
		sc.mu.Lock()
		text = sc.buffers[rel]
		sc.mu.Unlock()
	} else {
		data, err := os.ReadFile(filepath.Join(sc.root, rel))
		if err != nil {
			t.Fatalf("line %d: %v", lineNo, err)
		}
		text = string(data)
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	guess := map[string]bool{}
	srv := sc.ed.srv
	c, ok := srv.changes.Get(sc.changeID)
	if !ok {
		t.Fatalf("line %d: the book has no set %s", lineNo, sc.changeID)
	}
	srv.changes.Read(func() {
		for _, f := range c.Files {
			for _, h := range f.Hunks {
				if h.Status == review.Stale || h.Base != nil || h.InOld {
					guess[h.ID] = true
				}
			}
		}
	})
	uri := sc.uri(rel)
	check := func(what string, hunks []HunkInfo) {
		moved, checked := false, 0
		for _, h := range hunks {
			if guess[h.ID] {
				continue
			}
			side := h.OldText
			r := h.OldRange
			if cs.Review == string(review.After) && h.Status != review.Rejected || cs.Review != string(review.After) && h.Status == review.Accepted {
				side, r = h.NewText, h.NewRange
			}
			if side == nil {
				t.Fatalf("line %d: %s: hunk %s has no texts", lineNo, what, h.ID)
			}
			want := *side
			n := strings.Count(want, "\n")
			at := h.At.Line
			if at < 0 || at+n > len(lines) {
				t.Errorf("line %d: %s: hunk %s (%s) at line %d, past the file's %d lines", lineNo, what, h.ID, h.Status, at, len(lines))
				continue
			}
			if got := strings.Join(lines[at:at+n], ""); got != want {
				t.Errorf("line %d: %s: hunk %s (%s) at line %d: the file has\n%s\nwhere the hunk's text is\n%s", lineNo, what, h.ID, h.Status, at, got, want)
			}
			if at != r.Start.Line {
				moved = true
			}
			checked++
		}
		switch {
		case checked == 0:
			t.Errorf("line %d: %s: no hunk checked", lineNo, what)
		case kv["moved"] == "no" && moved:
			t.Errorf("line %d: %s: a hunk moved from its range, where the ranges are current", lineNo, what)
		case kv["moved"] != "no" && !moved:
			t.Errorf("line %d: %s: %d hunks checked, none moved from its range: the scenario proves no shift", lineNo, what, checked)
		}
	}
	for _, f := range cs.Files {
		if f.URI == uri {
			check("the ChangeSet", f.Hunks)
		}
	}
	if kv["notice"] == "" {
		return
	}
	var last *FileInfo
	sc.ed.mu.Lock()
	for _, n := range sc.ed.notes {
		var p ChangesDidChangeParams
		if n.Method == "agentd/changes/didChange" && json.Unmarshal(n.Params, &p) == nil && p.ChangeID == sc.changeID {
			for i := range p.Files {
				if p.Files[i].URI == uri {
					last = &p.Files[i]
				}
			}
		}
	}
	sc.ed.mu.Unlock()
	if last == nil {
		t.Fatalf("line %d: no agentd/changes/didChange lists %s", lineNo, rel)
	}
	check("the last didChange", last.Hunks)
}
