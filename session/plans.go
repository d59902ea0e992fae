package session

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/plans"
)

// PlanStore keeps a workspace's plans for every front end (the editors'
// agentd/plan/*, ACP prompts, the terminal's run REQUEST and chat): the
// latest version of each, saved in the workspace's journal before it is
// acknowledged, and the one version rule (docs/architecture.md "Plans"):
//
//   - a plan stored under a new id is version 1 (or the version it
//     carries), stamped with its creation time;
//   - a plan stored again under its id is the next version of the one
//     kept, whatever version it carries;
//   - an edit names the version it was made against; another version is
//     stale (plans.ErrStaleVersion) and nothing changes;
//   - a plan made again (regenerate) is the next version of the plan it
//     replaces, with its id, request and creation time, and one history
//     entry.
//
// Safe for concurrent use.
type PlanStore struct {
	mu      sync.Mutex
	j       *engine.Journal // nil: the plans are kept in memory only
	log     *slog.Logger
	m       map[string]*plans.Plan
	lastRun map[string]string // plan id -> its latest run id
}

// NewPlanStore is a store that saves in j (nil: in memory only, as an
// editor server without a workspace keeps its plans).
func NewPlanStore(j *engine.Journal, log *slog.Logger) *PlanStore {
	if log == nil {
		log = slog.Default()
	}
	return &PlanStore{j: j, log: log, m: map[string]*plans.Plan{}, lastRun: map[string]string{}}
}

// keep makes ps save in j from now on and loads the plans j recorded
// (a previous daemon's, agentd run's, ACP's).
func (ps *PlanStore) keep(j *engine.Journal, log *slog.Logger) {
	if j == nil {
		return
	}
	pls, err := j.Plans()
	if err != nil {
		log.Error("reading saved plans failed", "error", err)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.j, ps.log = j, log
	for _, p := range pls {
		ps.m[p.ID] = p
	}
}

// Get is the latest version of plan id.
func (ps *PlanStore) Get(id string) (*plans.Plan, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.m[id]
	return p, ok
}

// List is every plan kept, the newest first (then by id).
func (ps *PlanStore) List() []*plans.Plan {
	ps.mu.Lock()
	out := make([]*plans.Plan, 0, len(ps.m))
	for _, p := range ps.m {
		out = append(out, p)
	}
	ps.mu.Unlock()
	slices.SortFunc(out, func(a, b *plans.Plan) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// LastRun is the latest run of plan id started from this store's front
// end ("" for none).
func (ps *PlanStore) LastRun(id string) string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.lastRun[id]
}

// SetLastRun records run as plan id's latest run.
func (ps *PlanStore) SetLastRun(id, run string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.lastRun[id] = run
}

// newPlanID names a plan that came without an id.
func newPlanID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "plan-" + hex.EncodeToString(b[:])
}

// save records p in the journal (ps.mu held); a plan that cannot be saved
// is not kept.
func (ps *PlanStore) save(p *plans.Plan) error {
	if ps.j == nil {
		return nil
	}
	if err := ps.j.SavePlan(p); err != nil {
		ps.log.Error("saving a plan failed", "plan", p.ID, "error", err)
		return err
	}
	return nil
}

// Store keeps p (made, loaded or edited outside the store) as the latest
// version under its id, giving it an id when it has none and a version
// by the rule above; source, if set, adds a history entry ("model",
// "load") with reason. It returns p.
func (ps *PlanStore) Store(p *plans.Plan, source, reason string) (*plans.Plan, error) {
	now := time.Now().UTC()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p.ID == "" {
		p.ID = newPlanID()
	}
	prev := 0
	if old := ps.m[p.ID]; old != nil {
		prev = old.Version
		if p.CreatedAt.IsZero() {
			p.CreatedAt = old.CreatedAt
		}
	}
	if p.Version <= prev {
		p.Version = prev + 1
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = now
	}
	if source != "" {
		p.History = append(p.History, plans.PlanUpdate{Version: p.Version, Time: now, Source: source, Reason: reason})
	}
	if err := ps.save(p); err != nil {
		return nil, err
	}
	ps.m[p.ID] = p
	return p, nil
}

// PlanNotFoundError is a plan id the store does not keep.
type PlanNotFoundError struct{ ID string }

func (e *PlanNotFoundError) Error() string {
	return fmt.Sprintf("no plan %q: list the plans (agentd/plan/list) or make one", e.ID)
}

// Edit applies edits to plan id, made against version, with apply (the
// engine's edit of a plan, which checks the ops, the steps and the tools)
// and keeps the result as the next version. A stale version changes
// nothing (plans.ErrStaleVersion), also when another edit lands while
// this one is applied. An unknown op is a *FieldError naming the edit
// (edits[N].op), as the engine words it.
func (ps *PlanStore) Edit(id string, version int, apply func(cur *plans.Plan) (*plans.Plan, error)) (*plans.Plan, error) {
	cur, ok := ps.Get(id)
	if !ok {
		return nil, &PlanNotFoundError{ID: id}
	}
	if err := plans.CheckVersion(cur, version); err != nil {
		return nil, err
	}
	np, err := apply(cur)
	if err != nil {
		var ve *plans.ValidationError
		if errors.As(err, &ve) {
			for _, pr := range ve.Problems {
				if strings.HasPrefix(pr.Field, "edits[") && strings.HasSuffix(pr.Field, "].op") {
					return nil, &FieldError{Field: pr.Field, Message: pr.Message}
				}
			}
		}
		return nil, err
	}
	np.Version = cur.Version + 1
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if latest := ps.m[id]; latest != nil && latest.Version != cur.Version {
		return nil, fmt.Errorf("plan %s changed while editing (now version %d): %w", id, latest.Version, plans.ErrStaleVersion)
	}
	if err := ps.save(np); err != nil {
		return nil, err
	}
	ps.m[id] = np
	return np, nil
}

// Regenerated keeps np, the planner's plan made again from cur with the
// user's feedback, as cur's next version: cur's id, request and creation
// time, cur's history and one entry for this. check, if set, validates
// np first.
func (ps *PlanStore) Regenerated(cur, np *plans.Plan, feedback string, check func(*plans.Plan) error) (*plans.Plan, error) {
	np.ID, np.Request, np.CreatedAt = cur.ID, cur.Request, cur.CreatedAt
	if np.Title == "" {
		np.Title = cur.Title
	}
	np.Version = cur.Version + 1
	np.History = append(slices.Clone(cur.History), plans.PlanUpdate{Version: np.Version, Time: time.Now().UTC(),
		Source: "model", Action: "regenerate", Reason: "regenerated: " + feedback})
	if check != nil {
		if err := check(np); err != nil {
			return nil, err
		}
	}
	return ps.Store(np, "", "")
}
