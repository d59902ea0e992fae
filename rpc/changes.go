package rpc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/workspace"
)

func changeMethods() map[string]method {
	return map[string]method{
		"agentd/changes/list":    {call: (*Server).changesList},
		"agentd/changes/get":     {call: (*Server).changesGet},
		"agentd/changes/resolve": {call: (*Server).changesResolve, async: true},
		"agentd/changes/revert":  {call: (*Server).changesRevert, async: true},
	}
}

// Hunk and change set statuses.
const (
	statusPending  = "pending"
	statusAccepted = "accepted"
	statusRejected = "rejected"
	statusStale    = "stale"
	statusPartial  = "partial"
)

// hunkRecord is one hunk of a change set and its decision.
type hunkRecord struct {
	ID     string    `json:"id"`
	Status string    `json:"status"`
	Reason string    `json:"reason,omitempty"`
	Hunk   diff.Hunk `json:"hunk"`
}

// fileRecord is one file of a change set with its contents, so that a
// restarted daemon can still apply it.
type fileRecord struct {
	Path     string        `json:"path"`
	OldPath  string        `json:"oldPath,omitempty"`
	Op       workspace.Op  `json:"op"`
	BaseHash string        `json:"baseHash"`
	Mode     fs.FileMode   `json:"mode"`
	Binary   bool          `json:"binary,omitempty"`
	Old      []byte        `json:"old"`
	New      []byte        `json:"new"`
	Hunks    []*hunkRecord `json:"hunks"`
	// Status decides the whole file when it has no hunks of its own
	// (create, delete, move, binary).
	Status string `json:"status"`
}

func (f *fileRecord) wholeFile() bool {
	return f.Binary || f.Op != workspace.OpModify || len(f.Hunks) == 0
}

// changeRecord is a change set under review.
type changeRecord struct {
	ID        string                 `json:"id"`
	RunID     string                 `json:"runId,omitempty"`
	StepID    string                 `json:"stepId,omitempty"`
	Review    engine.ReviewMode      `json:"review"`
	CreatedAt time.Time              `json:"createdAt"`
	Files     []*fileRecord          `json:"files"`
	Reason    string                 `json:"reason,omitempty"`
	Applied   []string               `json:"applied"`
	Rejected  []engine.HunkRejection `json:"rejected"`
	Conflicts []string               `json:"conflicts"`

	// decided is closed when nothing is pending (ReviewBefore waits on it).
	decided chan struct{}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func newChangeRecord(cs *workspace.ChangeSet, mode engine.ReviewMode) *changeRecord {
	c := &changeRecord{ID: cs.ID, RunID: cs.RunID, StepID: cs.StepID, Review: mode, CreatedAt: time.Now().UTC(),
		Applied: []string{}, Rejected: []engine.HunkRejection{}, Conflicts: []string{}}
	if c.ID == "" {
		c.ID = newID("cs-")
	}
	for _, f := range cs.Files {
		fr := &fileRecord{Path: f.Path, OldPath: f.OldPath, Op: f.Op, BaseHash: f.BaseHash, Mode: f.Mode, Binary: f.Binary,
			Old: f.Old, New: f.New, Status: statusPending}
		fd := f.Diff
		if fd == nil && !f.Binary {
			fd = diff.Compute(f.Path, f.Path, f.Old, f.New)
		}
		if fd != nil {
			for _, h := range fd.Hunks {
				fr.Hunks = append(fr.Hunks, &hunkRecord{ID: h.ID, Status: statusPending, Hunk: h})
			}
		}
		c.Files = append(c.Files, fr)
	}
	return c
}

// units calls f for every decision unit: a hunk, or a whole file.
func (c *changeRecord) units(f func(fr *fileRecord, h *hunkRecord)) {
	for _, fr := range c.Files {
		if fr.wholeFile() {
			f(fr, nil)
			continue
		}
		for _, h := range fr.Hunks {
			f(fr, h)
		}
	}
}

func unitStatus(fr *fileRecord, h *hunkRecord) string {
	if h == nil {
		return fr.Status
	}
	return h.Status
}

func setUnit(fr *fileRecord, h *hunkRecord, status, reason string) {
	if h == nil {
		fr.Status = status
		for _, hh := range fr.Hunks {
			hh.Status, hh.Reason = status, reason
		}
		return
	}
	h.Status, h.Reason = status, reason
}

func (c *changeRecord) status() string {
	n := map[string]int{}
	total := 0
	c.units(func(fr *fileRecord, h *hunkRecord) {
		n[unitStatus(fr, h)]++
		total++
	})
	switch {
	case total == 0 || n[statusAccepted] == total:
		return statusAccepted
	case n[statusPending] == total:
		return statusPending
	case n[statusRejected] == total:
		return statusRejected
	case n[statusStale] > 0 && n[statusAccepted] == 0 && n[statusRejected] == 0:
		return statusStale
	}
	return statusPartial
}

func (c *changeRecord) pending() bool {
	p := false
	c.units(func(fr *fileRecord, h *hunkRecord) {
		if unitStatus(fr, h) == statusPending {
			p = true
		}
	})
	return p
}

// changes holds every change set of the session (and restored ones).
type changes struct {
	mu sync.Mutex
	m  map[string]*changeRecord
	// applyMu serialises applying and reverting, so two resolves of one
	// file never interleave.
	applyMu sync.Mutex
}

func newChanges() *changes { return &changes{m: map[string]*changeRecord{}} }

func (cs *changes) put(c *changeRecord) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c.decided == nil {
		c.decided = make(chan struct{})
		if !c.pending() {
			close(c.decided)
		}
	}
	cs.m[c.ID] = c
}

func (cs *changes) get(id string) (*changeRecord, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c, ok := cs.m[id]
	if !ok {
		return nil, notFound("change set", id)
	}
	return c, nil
}

// Wire shapes.

// LSPRange is an LSP range.
type LSPRange = workspace.Range

// HunkInfo is one hunk on the wire.
type HunkInfo struct {
	ID       string   `json:"id"`
	Status   string   `json:"status"`
	OldRange LSPRange `json:"oldRange"`
	NewRange LSPRange `json:"newRange"`
	OldText  *string  `json:"oldText,omitempty"`
	NewText  *string  `json:"newText,omitempty"`
	WordDiff []Word   `json:"wordDiff,omitempty"`
}

// Word is an intra-line change for display.
type Word struct {
	Range LSPRange `json:"range"`
	Kind  string   `json:"kind"` // insert | delete
}

// FileInfo is one file of a change set on the wire.
type FileInfo struct {
	URI      string     `json:"uri"`
	Op       string     `json:"op"`
	OldURI   string     `json:"oldUri,omitempty"`
	BaseHash string     `json:"baseHash"`
	Binary   bool       `json:"binary,omitempty"`
	Status   string     `json:"status"`
	Patch    *string    `json:"patch,omitempty"`
	Hunks    []HunkInfo `json:"hunks"`
}

// ChangeSetInfo is protocol.md's ChangeSet.
type ChangeSetInfo struct {
	ID     string     `json:"id"`
	RunID  string     `json:"runId,omitempty"`
	StepID string     `json:"stepId,omitempty"`
	Status string     `json:"status"`
	Review string     `json:"review"`
	Files  []FileInfo `json:"files"`
}

func (s *Server) uriOf(rel string) string {
	if ws, err := s.workspace(); err == nil {
		if u := ws.URI(rel); u != "" {
			return u
		}
	}
	s.mu.Lock()
	root := s.root
	s.mu.Unlock()
	return pathToURI(filepath.Join(root, filepath.FromSlash(rel)))
}

func lineRange(start, n int) LSPRange {
	if start > 0 {
		start--
	}
	return LSPRange{Start: workspace.Position{Line: start}, End: workspace.Position{Line: start + n}}
}

func (s *Server) fileInfo(fr *fileRecord, texts bool) FileInfo {
	fi := FileInfo{URI: s.uriOf(fr.Path), Op: string(fr.Op), BaseHash: fr.BaseHash, Binary: fr.Binary, Hunks: []HunkInfo{}}
	if fr.OldPath != "" {
		fi.OldURI = s.uriOf(fr.OldPath)
	}
	fi.Status = fr.Status
	if !fr.wholeFile() {
		fi.Status = statusPending
		n := map[string]int{}
		for _, h := range fr.Hunks {
			n[h.Status]++
		}
		switch {
		case n[statusAccepted] == len(fr.Hunks):
			fi.Status = statusAccepted
		case n[statusRejected] == len(fr.Hunks):
			fi.Status = statusRejected
		case n[statusPending] == len(fr.Hunks):
		case n[statusStale] > 0:
			fi.Status = statusStale
		default:
			fi.Status = statusPartial
		}
	}
	if texts {
		oldPath, newPath := fr.OldPath, fr.Path
		if oldPath == "" {
			oldPath = fr.Path
		}
		fd := &diff.FileDiff{OldPath: oldPath, NewPath: newPath, Binary: fr.Binary}
		switch fr.Op {
		case workspace.OpCreate:
			fd.OldPath = ""
		case workspace.OpDelete:
			fd.NewPath = ""
		}
		for _, h := range fr.Hunks {
			fd.Hunks = append(fd.Hunks, h.Hunk)
		}
		p := diff.Unified(fd)
		fi.Patch = &p
	}
	for _, h := range fr.Hunks {
		hi := HunkInfo{ID: h.ID, Status: h.Status, OldRange: lineRange(h.Hunk.OldStart, h.Hunk.OldLines), NewRange: lineRange(h.Hunk.NewStart, h.Hunk.NewLines)}
		if texts {
			o, n := h.Hunk.OldText(), h.Hunk.NewText()
			hi.OldText, hi.NewText = &o, &n
			hi.WordDiff = wordDiff(h.Hunk)
		}
		fi.Hunks = append(fi.Hunks, hi)
	}
	return fi
}

// wordDiff pairs deleted and inserted lines of a hunk and marks the
// changed words (ranges in the new file for inserts, old file for deletes).
func wordDiff(h diff.Hunk) []Word {
	var out []Word
	oldLine, newLine := h.OldStart-1, h.NewStart-1
	if oldLine < 0 {
		oldLine = 0
	}
	if newLine < 0 {
		newLine = 0
	}
	for i := 0; i < len(h.Lines); {
		if h.Lines[i].Kind == diff.Context {
			oldLine++
			newLine++
			i++
			continue
		}
		var dels, ins []diff.Line
		for i < len(h.Lines) && h.Lines[i].Kind == diff.Delete {
			dels = append(dels, h.Lines[i])
			i++
		}
		for i < len(h.Lines) && h.Lines[i].Kind == diff.Insert {
			ins = append(ins, h.Lines[i])
			i++
		}
		for k := 0; k < len(dels) && k < len(ins); k++ {
			for _, sp := range diff.Words(dels[k].Text, ins[k].Text) {
				line, text, kind := oldLine+k, dels[k].Text, "delete"
				if sp.Kind == diff.Insert {
					line, text, kind = newLine+k, ins[k].Text, "insert"
				}
				out = append(out, Word{Kind: kind, Range: LSPRange{
					Start: workspace.Position{Line: line, Character: utf16Len(text[:clamp(sp.Start, len(text))])},
					End:   workspace.Position{Line: line, Character: utf16Len(text[:clamp(sp.End, len(text))])},
				}})
			}
		}
		oldLine += len(dels)
		newLine += len(ins)
	}
	return out
}

func clamp(n, max int) int {
	if n < 0 {
		return 0
	}
	if n > max {
		return max
	}
	return n
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

func (s *Server) changeInfo(c *changeRecord, texts bool) ChangeSetInfo {
	ci := ChangeSetInfo{ID: c.ID, RunID: c.RunID, StepID: c.StepID, Status: c.status(), Review: string(c.Review), Files: []FileInfo{}}
	for _, fr := range c.Files {
		ci.Files = append(ci.Files, s.fileInfo(fr, texts))
	}
	return ci
}

func (s *Server) changesList(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		RunID  string `json:"runId"`
		Status string `json:"status"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	s.changes.mu.Lock()
	recs := make([]*changeRecord, 0, len(s.changes.m))
	for _, c := range s.changes.m {
		recs = append(recs, c)
	}
	sort.Slice(recs, func(i, j int) bool {
		if !recs[i].CreatedAt.Equal(recs[j].CreatedAt) {
			return recs[i].CreatedAt.Before(recs[j].CreatedAt)
		}
		return recs[i].ID < recs[j].ID
	})
	out := []ChangeSetInfo{}
	for _, c := range recs {
		if p.RunID != "" && c.RunID != p.RunID {
			continue
		}
		ci := s.changeInfo(c, false)
		if p.Status != "" && ci.Status != p.Status {
			continue
		}
		out = append(out, ci)
	}
	s.changes.mu.Unlock()
	return out, nil
}

func (s *Server) changesGet(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		ChangeID string `json:"changeId"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	c, err := s.changes.get(p.ChangeID)
	if err != nil {
		return nil, err
	}
	s.changes.mu.Lock()
	defer s.changes.mu.Unlock()
	return s.changeInfo(c, true), nil
}

// Decision is one entry of agentd/changes/resolve's decisions.
type Decision struct {
	URI    string `json:"uri,omitempty"`
	HunkID string `json:"hunkId,omitempty"`
	Action string `json:"action"`
}

// ResolveConflict is a hunk that could not be applied or reverted.
type ResolveConflict struct {
	URI     string `json:"uri"`
	HunkID  string `json:"hunkId,omitempty"`
	Message string `json:"message"`
}

// ResolveResult is agentd/changes/resolve's and /revert's result.
type ResolveResult struct {
	ChangeID  string            `json:"changeId"`
	Status    string            `json:"status"`
	Applied   []string          `json:"applied"`
	Rejected  []string          `json:"rejected"`
	Conflicts []ResolveConflict `json:"conflicts"`
}

// unitID names a decision unit: a hunk id, or the path for whole files.
func unitID(fr *fileRecord, h *hunkRecord) string {
	if h == nil {
		return fr.Path
	}
	return h.ID
}

type unitRef struct {
	fr *fileRecord
	h  *hunkRecord
}

// selectUnits returns the units a decision names.
func (s *Server) selectUnits(c *changeRecord, uri, hunkID, field string) ([]unitRef, error) {
	var out []unitRef
	var rel string
	if uri != "" {
		rel = s.relOf(uri)
	}
	c.units(func(fr *fileRecord, h *hunkRecord) {
		if uri != "" && fr.Path != rel && s.uriOf(fr.Path) != uri {
			return
		}
		if hunkID != "" {
			match := h != nil && h.ID == hunkID
			if h == nil {
				for _, hh := range fr.Hunks {
					if hh.ID == hunkID {
						match = true
					}
				}
				if hunkID == fr.Path {
					match = true
				}
			}
			if !match {
				return
			}
		}
		out = append(out, unitRef{fr, h})
	})
	if len(out) == 0 {
		switch {
		case hunkID != "":
			return nil, badParam(field+".hunkId", "change set %s has no hunk %q (it may have been rebased: get the change set again)", c.ID, hunkID)
		case uri != "":
			return nil, badParam(field+".uri", "change set %s does not change %s", c.ID, uri)
		}
	}
	return out, nil
}

func (s *Server) relOf(uri string) string {
	if rel, ok := s.relPath(uri); ok {
		return rel
	}
	s.mu.Lock()
	root := s.root
	s.mu.Unlock()
	if p, err := uriToPath(uri); err == nil && root != "" {
		if rel, err := filepath.Rel(root, p); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return uri
}

type stepInfoKey struct{}

type stepInfo struct{ runID, stepID, changeID string }

func (s *Server) changesResolve(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		ChangeID  string     `json:"changeId"`
		Decisions []Decision `json:"decisions"`
		Reason    string     `json:"reason"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	if len(p.Decisions) == 0 {
		return nil, badParam("decisions", "give at least one decision")
	}
	c, err := s.changes.get(p.ChangeID)
	if err != nil {
		return nil, err
	}
	ws, err := s.workspace()
	if err != nil {
		return nil, err
	}
	s.changes.applyMu.Lock()
	defer s.changes.applyMu.Unlock()

	res := &ResolveResult{ChangeID: c.ID, Applied: []string{}, Rejected: []string{}, Conflicts: []ResolveConflict{}}
	var accept, reject, undo []unitRef
	s.changes.mu.Lock()
	for i, d := range p.Decisions {
		field := fmt.Sprintf("decisions[%d]", i)
		if d.Action != "accept" && d.Action != "reject" {
			s.changes.mu.Unlock()
			return nil, badParam(field+".action", "must be accept or reject, not %q", d.Action)
		}
		units, err := s.selectUnits(c, d.URI, d.HunkID, field)
		if err != nil {
			s.changes.mu.Unlock()
			return nil, err
		}
		for _, u := range units {
			st := unitStatus(u.fr, u.h)
			switch {
			case st == statusPending && d.Action == "accept":
				accept = append(accept, u)
			case st == statusPending && d.Action == "reject":
				reject = append(reject, u)
			case st == statusAccepted && d.Action == "reject":
				undo = append(undo, u)
			case st == statusStale && d.Action == "reject":
				reject = append(reject, u)
			case st == statusStale:
				res.Conflicts = append(res.Conflicts, ResolveConflict{URI: s.uriOf(u.fr.Path), HunkID: unitID(u.fr, u.h),
					Message: "the hunk no longer applies because the file was edited; get the change set again or reject it"})
			}
		}
	}
	review := c.Review
	s.changes.mu.Unlock()

	ctx = context.WithValue(ctx, stepInfoKey{}, stepInfo{runID: c.RunID, stepID: c.StepID, changeID: c.ID})
	if review == engine.ReviewBefore {
		s.applyUnits(ctx, ws, c, accept, res)
		s.markUnits(c, reject, statusRejected, p.Reason, res)
		s.undoUnits(ctx, ws, c, undo, p.Reason, res)
	} else {
		// after / none: the change is on disk already.
		s.markUnits(c, accept, statusAccepted, "", res)
		s.undoUnits(ctx, ws, c, append(reject, undo...), p.Reason, res)
	}
	s.finishResolve(c, res)
	return res, nil
}

func (s *Server) changesRevert(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		ChangeID string `json:"changeId"`
		URI      string `json:"uri"`
		HunkID   string `json:"hunkId"`
		Reason   string `json:"reason"`
	}
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	c, err := s.changes.get(p.ChangeID)
	if err != nil {
		return nil, err
	}
	ws, err := s.workspace()
	if err != nil {
		return nil, err
	}
	s.changes.applyMu.Lock()
	defer s.changes.applyMu.Unlock()
	res := &ResolveResult{ChangeID: c.ID, Applied: []string{}, Rejected: []string{}, Conflicts: []ResolveConflict{}}
	s.changes.mu.Lock()
	units, err := s.selectUnits(c, p.URI, p.HunkID, "")
	var undo []unitRef
	for _, u := range units {
		if unitStatus(u.fr, u.h) == statusAccepted || (c.Review != engine.ReviewBefore && unitStatus(u.fr, u.h) == statusPending) {
			undo = append(undo, u)
		}
	}
	s.changes.mu.Unlock()
	if err != nil {
		return nil, err
	}
	ctx = context.WithValue(ctx, stepInfoKey{}, stepInfo{runID: c.RunID, stepID: c.StepID, changeID: c.ID})
	reason := p.Reason
	if reason == "" {
		reason = "reverted"
	}
	s.undoUnits(ctx, ws, c, undo, reason, res)
	s.finishResolve(c, res)
	return res, nil
}

func (s *Server) markUnits(c *changeRecord, units []unitRef, status, reason string, res *ResolveResult) {
	s.changes.mu.Lock()
	defer s.changes.mu.Unlock()
	for _, u := range units {
		setUnit(u.fr, u.h, status, reason)
		id := unitID(u.fr, u.h)
		switch status {
		case statusAccepted:
			res.Applied = append(res.Applied, id)
			c.Applied = append(c.Applied, id)
		case statusRejected:
			res.Rejected = append(res.Rejected, id)
			c.Rejected = append(c.Rejected, engine.HunkRejection{Path: u.fr.Path, HunkID: id, Reason: reason})
		}
	}
}

// toChangeSet rebuilds a workspace change set for the given files.
func toChangeSet(c *changeRecord, files []*fileRecord) *workspace.ChangeSet {
	cs := &workspace.ChangeSet{ID: c.ID, RunID: c.RunID, StepID: c.StepID}
	for _, fr := range files {
		fd := &diff.FileDiff{OldPath: fr.OldPath, NewPath: fr.Path, Binary: fr.Binary}
		if fd.OldPath == "" {
			fd.OldPath = fr.Path
		}
		for _, h := range fr.Hunks {
			fd.Hunks = append(fd.Hunks, h.Hunk)
		}
		cs.Files = append(cs.Files, &workspace.FileChange{Path: fr.Path, OldPath: fr.OldPath, Op: fr.Op, BaseHash: fr.BaseHash,
			Old: fr.Old, New: fr.New, Mode: fr.Mode, Binary: fr.Binary, Diff: fd})
	}
	return cs
}

// applyUnits writes the accepted units (before mode) through the workspace,
// which rebases onto what the user has now or reports a conflict.
func (s *Server) applyUnits(ctx context.Context, ws *workspace.Workspace, c *changeRecord, units []unitRef, res *ResolveResult) {
	if len(units) == 0 {
		return
	}
	want := map[*fileRecord]map[string]bool{}
	var files []*fileRecord
	for _, u := range units {
		if want[u.fr] == nil {
			want[u.fr] = map[string]bool{}
			files = append(files, u.fr)
		}
		want[u.fr][unitID(u.fr, u.h)] = true
	}
	cs := toChangeSet(c, files)
	byPath := map[string]*fileRecord{}
	for _, fr := range files {
		byPath[fr.Path] = fr
	}
	accept := func(fc *workspace.FileChange, h diff.Hunk) bool {
		fr := byPath[fc.Path]
		if fr == nil {
			return false
		}
		if h.ID == "" {
			return want[fr][fr.Path]
		}
		return want[fr][h.ID] || want[fr][fr.Path]
	}
	ar, err := ws.Apply(ctx, cs, accept, (*editorWriter)(s))
	if err != nil {
		for _, u := range units {
			res.Conflicts = append(res.Conflicts, ResolveConflict{URI: s.uriOf(u.fr.Path), HunkID: unitID(u.fr, u.h), Message: err.Error()})
		}
		return
	}
	conflicted := map[string]string{}
	for _, ce := range ar.Conflicts {
		conflicted[ce.Path] = ce.Error()
	}
	var ok []unitRef
	for _, u := range units {
		if msg, bad := conflicted[u.fr.Path]; bad {
			res.Conflicts = append(res.Conflicts, ResolveConflict{URI: s.uriOf(u.fr.Path), HunkID: unitID(u.fr, u.h), Message: msg})
			s.changes.mu.Lock()
			setUnit(u.fr, u.h, statusStale, msg)
			c.Conflicts = append(c.Conflicts, u.fr.Path)
			s.changes.mu.Unlock()
			continue
		}
		ok = append(ok, u)
	}
	s.markUnits(c, ok, statusAccepted, "", res)
}

// undoUnits takes hunks that are on disk (or in the buffer) out again.
func (s *Server) undoUnits(ctx context.Context, ws *workspace.Workspace, c *changeRecord, units []unitRef, reason string, res *ResolveResult) {
	var done []unitRef
	for _, u := range units {
		if err := s.undoUnit(ctx, ws, u); err != nil {
			res.Conflicts = append(res.Conflicts, ResolveConflict{URI: s.uriOf(u.fr.Path), HunkID: unitID(u.fr, u.h),
				Message: fmt.Sprintf("could not take the change out again: %v", err)})
			continue
		}
		done = append(done, u)
	}
	s.markUnits(c, done, statusRejected, reason, res)
}

func (s *Server) undoUnit(ctx context.Context, ws *workspace.Workspace, u unitRef) error {
	fr := u.fr
	w := (*editorWriter)(s)
	switch {
	case fr.Op == workspace.OpCreate:
		cur, err := ws.ReadFile(ctx, fr.Path)
		if err != nil {
			return err
		}
		if sha(cur) != sha(fr.New) {
			return &workspace.ConflictError{Path: fr.Path}
		}
		return ws.Remove(ctx, fr.Path)
	case fr.Op == workspace.OpDelete:
		return w.WriteFile(ctx, fr.Path, nil, fr.Old, fr.Mode)
	case fr.Op == workspace.OpMove:
		if err := ws.Rename(ctx, fr.Path, fr.OldPath); err != nil {
			return err
		}
		if fr.Old != nil && sha(fr.Old) != sha(fr.New) {
			return w.WriteFile(ctx, fr.OldPath, fr.New, fr.Old, fr.Mode)
		}
		return nil
	case fr.Binary || u.h == nil:
		cur, err := ws.ReadFile(ctx, fr.Path)
		if err != nil {
			return err
		}
		if sha(cur) != sha(fr.New) {
			return &workspace.ConflictError{Path: fr.Path}
		}
		return w.WriteFile(ctx, fr.Path, cur, fr.Old, fr.Mode)
	}
	cur, err := ws.ReadFile(ctx, fr.Path)
	if err != nil {
		return err
	}
	out, err := diff.Revert(cur, []diff.Hunk{u.h.Hunk})
	if err != nil {
		return fmt.Errorf("%s: %w", fr.Path, err)
	}
	return w.WriteFile(ctx, fr.Path, cur, out, fr.Mode)
}

// finishResolve persists the record and wakes a waiting ReviewBefore.
func (s *Server) finishResolve(c *changeRecord, res *ResolveResult) {
	s.changes.mu.Lock()
	res.Status = c.status()
	if !c.pending() {
		select {
		case <-c.decided:
		default:
			close(c.decided)
		}
	}
	s.changes.mu.Unlock()
	s.saveChange(c)
}

func (s *Server) saveChange(c *changeRecord) {
	s.changes.mu.Lock()
	b, err := json.Marshal(c)
	s.changes.mu.Unlock()
	if err != nil {
		s.log.Error("encoding change set", "change", c.ID, "error", err)
		return
	}
	s.persist.save("changes/"+safeName(c.ID)+".json", json.RawMessage(b))
}

// ChangesDidChangeParams is agentd/changes/didChange's params.
type ChangesDidChangeParams struct {
	ChangeID string     `json:"changeId"`
	Status   string     `json:"status"`
	Files    []FileInfo `json:"files"`
}

// onUserEdit rebases the pending hunks of every change set that touches
// rel onto the buffer the user just edited, or marks them stale. Runs on
// the read loop, in order with the edits.
func (s *Server) onUserEdit(uri, rel string) {
	doc, ok := s.docs.get(uri)
	if !ok {
		return
	}
	user := doc.text
	var touched []*changeRecord
	var notes []ChangesDidChangeParams
	s.changes.mu.Lock()
	for _, c := range s.changes.m {
		if c.Review != engine.ReviewBefore {
			continue
		}
		for _, fr := range c.Files {
			if fr.Path != rel || fr.wholeFile() {
				continue
			}
			if s.rebaseFile(fr, user) {
				touched = append(touched, c)
				notes = append(notes, ChangesDidChangeParams{ChangeID: c.ID, Status: c.status(), Files: []FileInfo{s.fileInfo(fr, true)}})
			}
		}
	}
	s.changes.mu.Unlock()
	for i, c := range touched {
		s.notify("agentd/changes/didChange", notes[i])
		s.saveChange(c)
	}
}

// rebaseFile rebases fr's open hunks onto user (three-way). It reports
// whether anything changed. The caller holds changes.mu.
func (s *Server) rebaseFile(fr *fileRecord, user []byte) bool {
	var open, kept []*hunkRecord
	var applied []diff.Hunk
	for _, h := range fr.Hunks {
		switch h.Status {
		case statusPending, statusStale:
			open = append(open, h)
			applied = append(applied, h.Hunk)
		case statusAccepted:
			kept = append(kept, h)
			applied = append(applied, h.Hunk)
		default:
			kept = append(kept, h)
		}
	}
	if len(open) == 0 || sha(user) == fr.BaseHash {
		return false
	}
	theirs, err := diff.Apply(fr.Old, applied)
	var conflicts []diff.Conflict
	var merged []byte
	if err == nil {
		merged, conflicts = diff.Merge3(fr.Old, user, theirs)
	}
	if err != nil || len(conflicts) > 0 {
		changed := false
		for _, h := range open {
			if h.Status != statusStale {
				h.Status, h.Reason = statusStale, "the file was edited where this hunk applies"
				changed = true
			}
		}
		return changed
	}
	fd := diff.Compute(fr.Path, fr.Path, user, merged)
	fr.Old, fr.New, fr.BaseHash = user, merged, sha(user)
	fr.Hunks = kept
	for _, h := range fd.Hunks {
		fr.Hunks = append(fr.Hunks, &hunkRecord{ID: h.ID, Status: statusPending, Hunk: h})
	}
	return true
}

// reviewer implements engine.Reviewer.
type reviewer Server

func (r *reviewer) ReviewBefore(ctx context.Context, cs *workspace.ChangeSet) (*engine.ReviewOutcome, error) {
	s := (*Server)(r)
	if cs == nil || len(cs.Files) == 0 {
		return &engine.ReviewOutcome{Applied: []string{}}, nil
	}
	c := newChangeRecord(cs, engine.ReviewBefore)
	s.changes.put(c)
	s.saveChange(c)
	select {
	case <-c.decided:
	case <-ctx.Done():
		// The set stays pending in the state dir; the user can still
		// resolve it later.
		return nil, ctx.Err()
	}
	s.changes.mu.Lock()
	defer s.changes.mu.Unlock()
	out := &engine.ReviewOutcome{Applied: append([]string{}, c.Applied...), Rejected: append([]engine.HunkRejection(nil), c.Rejected...),
		Conflicts: append([]string(nil), c.Conflicts...)}
	return out, nil
}

func (r *reviewer) OfferAfter(ctx context.Context, cs *workspace.ChangeSet) error {
	s := (*Server)(r)
	if cs == nil || len(cs.Files) == 0 {
		return nil
	}
	c := newChangeRecord(cs, engine.ReviewAfter)
	s.changes.put(c)
	s.saveChange(c)
	return nil
}
