package rpc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		Files  []struct {
			URI    string        `json:"uri"`
			Status string        `json:"status"`
			Counts review.Counts `json:"counts"`
		} `json:"files"`
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
			s.Files = append(s.Files, reviewFile(fi))
		}
		server[s.ID] = s
		checkSetInfo(t, c.Set.ID, s, c.Set.Status, c.Set.Counts, c.Set.Files)
		if c.Expect.Status != c.Set.Status || c.Expect.Counts != c.Set.Counts || c.Expect.Open != c.Set.Counts.Pending+c.Set.Counts.Stale {
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
			replaceFile(t, s, reviewFile(fi))
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
		checkSetInfo(t, step.About, s, p.Status, p.Counts, p.Files)
		if step.Expect.Status != p.Status || step.Expect.Counts != p.Counts {
			t.Errorf("%s: expect says %s %+v, the notice %s %+v", step.About, step.Expect.Status, step.Expect.Counts, p.Status, p.Counts)
		}
		if got := openOver(); got != step.TotalOpen {
			t.Errorf("%s: total_open %d, review's %d", step.About, step.TotalOpen, got)
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
		if got := f.Counts(); got != fi.Counts {
			t.Errorf("%s: %s: counts %+v, review's %+v", what, fi.URI, fi.Counts, got)
		}
		if got := f.WholeFile(); got != fi.Whole {
			t.Errorf("%s: %s: whole %v, review's %v", what, fi.URI, fi.Whole, got)
		}
	}
}

// reviewFile is the review file a wire file shows: its kind, whether it
// is decided as a whole, and the statuses of its units.
func reviewFile(fi FileInfo) *review.File {
	f := &review.File{Path: pathOfURI(fi.URI), Op: workspace.Op(fi.Op), Binary: fi.Binary, Whole: fi.Whole, Status: fi.Status}
	for _, h := range fi.Hunks {
		f.Hunks = append(f.Hunks, &review.Hunk{ID: h.ID, Status: h.Status})
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
