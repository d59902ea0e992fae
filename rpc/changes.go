package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"go.lsp.dev/jsonrpc2"

	wire "github.com/agentd/agentd/protocol"
	"github.com/agentd/agentd/review"
)

// The review of change sets (statuses, accept, reject, revert, undo of a
// rejection, rebase, stale marking) is package review's; this file adapts
// the agentd/changes/* methods to it.

func changeMethods() map[string]method {
	return map[string]method{
		"agentd/changes/list":    {call: (*Server).changesList},
		"agentd/changes/get":     {call: (*Server).changesGet},
		"agentd/changes/resolve": {call: (*Server).changesResolve, async: true},
		"agentd/changes/revert":  {call: (*Server).changesRevert, async: true},
	}
}

// changeRecord is a change set under review (persisted as JSON).
type changeRecord = review.Set

// changes holds every change set of the session (and restored ones).
// onPut, when set, is told of each set once it is in the book (the
// changeProposed event waits for that; see changes_notify.go).
type changes struct {
	*review.Book
	onPut func(*changeRecord)
	// recorded are the sets put (and so recorded in the journal) by this
	// server: a changeProposed event goes out only for those, so another
	// agentd process (agentd review) finds the set the editor is told of.
	mu       sync.Mutex
	recorded map[string]bool
}

// newChanges is the server's view of the review book; the book is the
// session's (set at initialize).
func newChanges() *changes { return &changes{} }

func (cs *changes) put(c *changeRecord) {
	cs.Put(c) // in the book, then recorded in the journal
	cs.mu.Lock()
	if cs.recorded == nil {
		cs.recorded = map[string]bool{}
	}
	cs.recorded[c.ID] = true
	cs.mu.Unlock()
	if cs.onPut != nil {
		cs.onPut(c)
	}
}

// isRecorded says whether put has put the set with id in the book and
// the journal (Book.Get finds a set a moment before its record is
// written).
func (cs *changes) isRecorded(id string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.recorded[id]
}

func (cs *changes) get(id string) (*changeRecord, error) {
	c, ok := cs.Get(id)
	if !ok {
		return nil, notFound("change set", id)
	}
	return c, nil
}

func (s *Server) changesList(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ChangesListParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	out := []ChangeSetInfo{}
	s.loadChanges() // sets agentd run recorded while the daemon runs
	recs := s.changes.List()
	s.changes.Read(func() {
		for _, c := range recs {
			if p.RunID != "" && c.RunID != p.RunID {
				continue
			}
			ci := s.changeInfo(c, false)
			if p.Status != "" && string(ci.Status) != p.Status {
				continue
			}
			out = append(out, ci)
		}
	})
	return out, nil
}

func (s *Server) changesGet(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ChangeIDParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	c, err := s.changes.get(p.ChangeID)
	if err != nil {
		return nil, err
	}
	var ci ChangeSetInfo
	s.changes.Read(func() { ci = s.changeInfo(c, true) })
	return ci, nil
}

type stepInfoKey struct{}

type stepInfo struct{ runID, stepID, changeID string }

// reviewFiles is how the review reaches files: open buffers through the
// editor (workspace/applyEdit), the rest on disk. ctx carries the step for
// the edit's annotation.
func (s *Server) reviewFiles(ctx context.Context, c *changeRecord) (context.Context, review.Files, error) {
	ws, err := s.workspace()
	if err != nil {
		return nil, review.Files{}, err
	}
	ctx = context.WithValue(ctx, stepInfoKey{}, stepInfo{runID: c.RunID, stepID: c.StepID, changeID: c.ID})
	return ctx, review.Files{WS: ws, Writer: (*editorWriter)(s)}, nil
}

func (s *Server) changesResolve(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.ResolveParams
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
	ctx, files, err := s.reviewFiles(ctx, c)
	if err != nil {
		return nil, err
	}
	ds := make([]review.Decision, len(p.Decisions))
	for i, d := range p.Decisions {
		ds[i] = review.Decision{HunkID: d.HunkID, Action: review.Action(d.Action)}
		if d.URI != "" {
			ds[i].Path = s.relOf(d.URI)
		}
	}
	res, err := s.changes.Resolve(ctx, files, c, ds, p.Reason)
	if err != nil {
		var de *review.DecisionError
		if errors.As(err, &de) {
			return nil, badParam(fmt.Sprintf("decisions[%d].%s", de.Index, de.Field), "%v", de.Err)
		}
		return nil, changedElsewhere(err)
	}
	return s.resolveResult(c, res), nil
}

func (s *Server) changesRevert(ctx context.Context, params json.RawMessage) (any, error) {
	var p wire.RevertParams
	if err := decode(params, &p); err != nil {
		return nil, err
	}
	c, err := s.changes.get(p.ChangeID)
	if err != nil {
		return nil, err
	}
	ctx, files, err := s.reviewFiles(ctx, c)
	if err != nil {
		return nil, err
	}
	path := ""
	if p.URI != "" {
		path = s.relOf(p.URI)
	}
	res, err := s.changes.Revert(ctx, files, c, path, p.HunkID, p.Reason)
	if err != nil {
		var se *review.SelectError
		if errors.As(err, &se) {
			return nil, badParam(se.Field, "%s", se.Message)
		}
		return nil, changedElsewhere(err)
	}
	return s.resolveResult(c, res), nil
}

// resolveResult turns a review result into the wire result (the book has
// recorded the set in the journal).
func (s *Server) resolveResult(c *changeRecord, res *review.Result) *ResolveResult {
	out := &ResolveResult{ChangeID: c.ID, Status: string(res.Status), Applied: res.Applied, Rejected: res.Rejected, Conflicts: []ResolveConflict{}}
	for _, cf := range res.Conflicts {
		out.Conflicts = append(out.Conflicts, ResolveConflict{URI: s.uriOf(cf.Path), HunkID: cf.Unit, Message: cf.Message})
	}
	return out
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

// changedElsewhere answers a decision another agentd process made stale
// (review.ChangedError) with -32005 and the set's id; other errors pass.
func changedElsewhere(err error) error {
	var ce *review.ChangedError
	if !errors.As(err, &ce) {
		return err
	}
	data, _ := json.Marshal(map[string]string{"changeId": ce.ID})
	return &jsonrpc2.Error{Code: CodeConflict, Message: err.Error(), Data: data}
}
