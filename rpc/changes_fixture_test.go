package rpc

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/workspace"
)

// The editors' shared fixture (editors/testdata/changesets.json) holds
// change sets and agentd/changes/didChange notices as the server sends
// them; both editors' models are checked against it. This test checks the
// fixture against review's one definition: every status and count in it is
// the one review.Set/File compute from the units' statuses, so the editors
// are tested against what the server really says.
func TestChangesFixtureFollowsReview(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "editors", "testdata", "changesets.json"))
	if err != nil {
		t.Fatal(err)
	}
	type expect struct {
		Status string        `json:"status"`
		Open   int           `json:"open"`
		Counts review.Counts `json:"counts"`
		Files  []expectFile  `json:"files"`
	}
	var fx struct {
		Sets []struct {
			Set    ChangeSetInfo `json:"set"`
			Expect expect        `json:"expect"`
		} `json:"sets"`
		TotalOpen  int `json:"total_open"`
		DidChanges []struct {
			About     string                 `json:"about"`
			Params    ChangesDidChangeParams `json:"params"`
			Elsewhere []struct {
				URI    string `json:"uri"`
				Status string `json:"status"`
			} `json:"elsewhere"`
			Expect    expect `json:"expect"`
			TotalOpen int    `json:"total_open"`
		} `json:"didChanges"`
	}
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Sets) == 0 || len(fx.DidChanges) == 0 {
		t.Fatal("the fixture has no sets or no notices")
	}
	// The server's view of each set, as review holds it.
	server := map[string]*review.Set{}
	for _, c := range fx.Sets {
		s := &review.Set{ID: c.Set.ID, Review: review.Mode(c.Set.Review)}
		for _, fi := range c.Set.Files {
			s.Files = append(s.Files, reviewFile(fi, false))
		}
		server[s.ID] = s
		checkSetInfo(t, c.Set.ID, s, c.Set.Status, review.Counts(c.Set.Counts), c.Set.Files)
		checkAt(t, c.Set.ID, s, c.Set.Files, c.Expect.Files)
		if c.Expect.Status != c.Set.Status || c.Expect.Counts != review.Counts(c.Set.Counts) || c.Expect.Open != review.Counts(c.Set.Counts).Pending+review.Counts(c.Set.Counts).Stale {
			t.Errorf("%s: expect says %s %+v (open %d), the set %s %+v", c.Set.ID, c.Expect.Status, c.Expect.Counts, c.Expect.Open, c.Set.Status, c.Set.Counts)
		}
	}
	openOver := func() int {
		n := 0
		for _, s := range server {
			c := s.Counts()
			n += c.Pending + c.Stale
		}
		return n
	}
	if got := openOver(); got != fx.TotalOpen {
		t.Errorf("total_open %d, review's %d", fx.TotalOpen, got)
	}
	for _, step := range fx.DidChanges {
		p := step.Params
		s := server[p.ChangeID]
		if s == nil {
			t.Fatalf("%s: no set %s", step.About, p.ChangeID)
		}
		for _, fi := range p.Files {
			// A notice follows a rebase, which took every accepted hunk
			// into the file's text (review's InOld).
			replaceFile(t, s, reviewFile(fi, true))
		}
		for _, e := range step.Elsewhere {
			f := fileByPath(s, pathOfURI(e.URI))
			if f == nil {
				t.Fatalf("%s: elsewhere names %s, not in %s", step.About, e.URI, s.ID)
			}
			f.Status = e.Status
			for _, h := range f.Hunks {
				h.Status = e.Status
			}
		}
		checkSetInfo(t, step.About, s, p.Status, review.Counts(p.Counts), p.Files)
		checkAt(t, step.About, s, p.Files, step.Expect.Files)
		if step.Expect.Status != p.Status || step.Expect.Counts != review.Counts(p.Counts) {
			t.Errorf("%s: expect says %s %+v, the notice %s %+v", step.About, step.Expect.Status, step.Expect.Counts, p.Status, p.Counts)
		}
		if got := openOver(); got != step.TotalOpen {
			t.Errorf("%s: total_open %d, review's %d", step.About, step.TotalOpen, got)
		}
	}
}

type expectFile struct {
	URI    string         `json:"uri"`
	Status string         `json:"status"`
	Counts review.Counts  `json:"counts"`
	At     map[string]int `json:"at"`
}

// checkAt compares each listed hunk's `at` with review's rule
// (review.File.Starts) and with the lines the expectation names.
func checkAt(t *testing.T, what string, s *review.Set, files []FileInfo, want []expectFile) {
	t.Helper()
	for _, fi := range files {
		f := fileByPath(s, pathOfURI(fi.URI))
		starts := f.Starts(s.Review)
		for i, h := range fi.Hunks {
			if h.At.Line != starts[i] || h.At.Character != 0 {
				t.Errorf("%s: %s: hunk %s at %+v, review's line %d", what, fi.URI, h.ID, h.At, starts[i])
			}
		}
		for _, fw := range want {
			if fw.URI != fi.URI || fw.At == nil {
				continue
			}
			got := map[string]int{}
			for _, h := range fi.Hunks {
				got[h.ID] = h.At.Line
			}
			if !maps.Equal(got, fw.At) {
				t.Errorf("%s: %s: at %v, expect says %v", what, fi.URI, got, fw.At)
			}
		}
	}
}

// checkSetInfo compares a set's status and counts on the wire, and each
// listed file's, with review's.
func checkSetInfo(t *testing.T, what string, s *review.Set, status string, counts review.Counts, files []FileInfo) {
	t.Helper()
	if got := s.Status(); got != status {
		t.Errorf("%s: status %s, review's %s", what, status, got)
	}
	if got := s.Counts(); got != counts {
		t.Errorf("%s: counts %+v, review's %+v", what, counts, got)
	}
	for _, fi := range files {
		f := fileByPath(s, pathOfURI(fi.URI))
		if got := f.Summary(); got != fi.Status {
			t.Errorf("%s: %s: status %s, review's %s", what, fi.URI, fi.Status, got)
		}
		if got := f.Counts(); got != review.Counts(fi.Counts) {
			t.Errorf("%s: %s: counts %+v, review's %+v", what, fi.URI, fi.Counts, got)
		}
		if got := f.WholeFile(); got != fi.Whole {
			t.Errorf("%s: %s: whole %v, review's %v", what, fi.URI, fi.Whole, got)
		}
	}
}

// reviewFile is the review file a wire file shows: its kind, whether it
// is decided as a whole, and its units' statuses and ranges (inOld: the
// accepted hunks are in the file's Old, as after a rebase).
func reviewFile(fi FileInfo, inOld bool) *review.File {
	f := &review.File{Path: pathOfURI(fi.URI), Op: workspace.Op(fi.Op), Binary: fi.Binary, Whole: fi.Whole, Status: fi.Status}
	for _, h := range fi.Hunks {
		dh := diff.Hunk{ID: h.ID,
			OldStart: h.OldRange.Start.Line + 1, OldLines: h.OldRange.End.Line - h.OldRange.Start.Line,
			NewStart: h.NewRange.Start.Line + 1, NewLines: h.NewRange.End.Line - h.NewRange.Start.Line}
		f.Hunks = append(f.Hunks, &review.Hunk{ID: h.ID, Status: h.Status, Hunk: dh, InOld: inOld && h.Status == review.Accepted})
	}
	return f
}

func replaceFile(t *testing.T, s *review.Set, f *review.File) {
	t.Helper()
	for i, x := range s.Files {
		if x.Path == f.Path {
			s.Files[i] = f
			return
		}
	}
	t.Fatalf("%s: a notice names %s, not in the set", s.ID, f.Path)
}

func fileByPath(s *review.Set, path string) *review.File {
	for _, f := range s.Files {
		if f.Path == path {
			return f
		}
	}
	return nil
}

func pathOfURI(uri string) string { return strings.TrimPrefix(uri, "file:///ws/") }
