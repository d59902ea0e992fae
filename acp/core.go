package acp

// Every call from the ACP front end into a rule the user relies on is in
// this file, so that it is one place to switch when the rule moves (issue
// 9 moves the approval rule store, the run journal, the hunk review model
// and restore protection into the core). Nothing here decides anything the
// core already decides; what is provisional says so and names what
// replaces it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/review"
	"github.com/agentd/agentd/workspace"
)

// stateDirOf is where this front end keeps a workspace's sessions and
// rules: acp/ beside the workspace's shadow repository, so that one
// directory holds all of a workspace's state (as rpc keeps rpc/ there).
func stateDirOf(stateDir, root string) string {
	return filepath.Join(gitops.StoreDir(stateDir, root), "acp")
}

// ---- Approvals -------------------------------------------------------

// policyFor is the engine's approval policy for a session mode: "ask"
// runs under the engine's default policy, "auto" under AllowAllPolicy
// (whose denyCommands still apply). The engine decides every call.
func policyFor(mode string) engine.ApprovalPolicy {
	if mode == modeAuto {
		return engine.AllowAllPolicy()
	}
	return engine.DefaultApprovalPolicy()
}

// rule is a remembered "always" answer.
type rule struct {
	ID        string         `json:"id"`
	Category  tools.Category `json:"category"`
	Tool      string         `json:"tool,omitempty"`
	Command   string         `json:"command,omitempty"`
	Allow     bool           `json:"allow"`
	CreatedAt time.Time      `json:"createdAt"`
}

// ruleStore holds a workspace's remembered answers, persisted in the
// state dir and shared by every session of the workspace.
//
// PROVISIONAL until the core's rule store (issue 9, branch wt/engine)
// lands, with its one matcher: until then an answer matches the same
// category and tool and, for commands, only the very same command line
// (the strictest reading, so an "always" never allows more than was
// shown). Nothing of rpc's matcher is copied.
type ruleStore struct {
	path string
	mu   sync.Mutex
	seq  int
	list []rule
}

func openRules(dir string) *ruleStore {
	rs := &ruleStore{path: filepath.Join(dir, "rules.json")}
	if data, err := os.ReadFile(rs.path); err == nil {
		_ = json.Unmarshal(data, &rs.list)
		rs.seq = len(rs.list)
	}
	return rs
}

// lookup returns the newest remembered answer matching req.
func (rs *ruleStore) lookup(req engine.ApprovalRequest) (engine.ApprovalDecision, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for i := len(rs.list) - 1; i >= 0; i-- {
		r := rs.list[i]
		if r.Category != req.Category || (r.Tool != "" && r.Tool != req.Tool) {
			continue
		}
		if r.Command != "" && r.Command != req.Command {
			continue
		}
		return engine.ApprovalDecision{Allow: r.Allow, Reason: "remembered answer " + r.ID}, true
	}
	return engine.ApprovalDecision{}, false
}

// remember records an "always" answer and saves the store before the
// answer is acted on.
func (rs *ruleStore) remember(req engine.ApprovalRequest, allow bool) (rule, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.seq++
	r := rule{ID: fmt.Sprintf("rule-%d", rs.seq), Category: req.Category, Tool: req.Tool, Command: req.Command, Allow: allow, CreatedAt: time.Now().UTC()}
	rs.list = append(rs.list, r)
	return r, writeJSON(rs.path, rs.list)
}

// ---- Review ----------------------------------------------------------

// reviewChangeSet decides a whole change set held in review mode
// "before" with the one hunk review model (package review), the same the
// editor server and the terminal use: accepting writes each hunk through
// writer (the client's file system, or the disk when nil), rebased onto
// the file as it is now or reported as a conflict; rejecting writes
// nothing. The outcome is what the engine hands to the step.
func reviewChangeSet(ctx context.Context, book *review.Book, ws *workspace.Workspace, writer workspace.FileWriter,
	cs *workspace.ChangeSet, accept bool, reason string) (*engine.ReviewOutcome, error) {
	set := review.New(cs, engine.ReviewBefore)
	book.Put(set)
	action := review.Reject
	if accept {
		action = review.Accept
	}
	if _, err := book.Resolve(ctx, review.Files{WS: ws, Writer: writer}, set, []review.Decision{{Action: action}}, reason); err != nil {
		return nil, err
	}
	return set.Outcome(), nil
}

// ---- Snapshots and restore -------------------------------------------

// restoreSnapshot restores the workspace to snapshot id through the
// shadow repository, which takes a safety snapshot first (the undo).
// Since is left empty: gitops picks the protection base itself (the state
// the agent last left the workspace in), so files someone else changed
// since are left alone and reported as conflicts; when it cannot tell,
// the restore fails with gitops.ErrNoProtectionBase instead of
// overwriting, as in every front end.
// With overwrite, files changed by someone else are restored too.
func restoreSnapshot(ctx context.Context, store *gitops.Store, id string, overwrite bool) (*gitops.RestoreResult, error) {
	snap, err := store.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("snapshot %q: %w (list them with /snapshots)", id, err)
	}
	res, err := store.Restore(ctx, snap.ID, gitops.RestoreOptions{Overwrite: overwrite})
	if errors.Is(err, gitops.ErrNoProtectionBase) {
		return nil, fmt.Errorf("%w; to restore anyway, overwriting what anyone changed since: /restore %s --overwrite", err, id)
	}
	return res, err
}

// ---- Journal ---------------------------------------------------------

// writeJSON writes v to path atomically (temp file, fsync, rename), so a
// session is on disk before its prompt is answered.
func writeJSON(path string, v any) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("saving %s: %w (check the state dir's permissions and free space)", path, werr)
	}
	return nil
}

// readJSON reads what writeJSON wrote; a missing file is fs.ErrNotExist.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s is damaged: %w (move it away to start afresh)", path, err)
	}
	return nil
}

var errNotFound = fs.ErrNotExist

func isNotFound(err error) bool { return errors.Is(err, errNotFound) }
