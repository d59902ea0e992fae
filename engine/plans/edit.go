package plans

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/agentd/agentd/engine/tools"
)

// Edit operations (protocol Edit.op).
const (
	EditUpdate = "update" // replace step StepID by Step (same id)
	EditInsert = "insert" // add Step after After; no After = at the end
	EditRemove = "remove" // remove step StepID
	EditMove   = "move"   // move step StepID after After; no After = to the front
	EditSkip   = "skip"   // mark step StepID to be skipped
	EditUnskip = "unskip" // clear that mark
)

// EditOptions says how ApplyEdits validates and records an edit.
type EditOptions struct {
	Tools    *tools.Registry // nil: tool names and args are not checked
	MaxSteps int             // <= 0: DefaultMaxSteps
	// Source and Reason go into the history entry; Source defaults to "user".
	Source, Reason, Action string
	// Now stamps the history entry; nil means time.Now in UTC.
	Now func() time.Time
}

// ApplyEdits returns a new version of p (Version+1, one History entry) with
// edits applied in order. p is not changed. If an edit cannot be applied or
// the result is invalid it returns a *ValidationError with every problem.
func ApplyEdits(p *Plan, edits []Edit, opts EditOptions) (*Plan, error) {
	if p == nil {
		return nil, errors.New("engine: no plan to edit")
	}
	np := p.Clone()
	var probs []Problem
	var touched []string
	addProb := func(i int, e Edit, field, format string, a ...any) {
		probs = append(probs, Problem{File: p.Source, StepID: e.StepID, Field: "edits[" + strconv.Itoa(i) + "]" + field,
			Message: fmt.Sprintf("edit %d (%s): ", i+1, e.Op) + fmt.Sprintf(format, a...)})
	}
	indexOf := func(id string) int {
		return slices.IndexFunc(np.Steps, func(s *Step) bool { return s != nil && s.ID == id })
	}
	for i, e := range edits {
		needStep := func() int {
			if e.StepID == "" {
				addProb(i, e, ".stepId", "stepId is required")
				return -1
			}
			at := indexOf(e.StepID)
			if at < 0 {
				addProb(i, e, ".stepId", "no step %q in plan version %d", e.StepID, np.Version)
			}
			return at
		}
		afterIndex := func() (int, bool) {
			if e.After == "" {
				return -1, true
			}
			at := indexOf(e.After)
			if at < 0 {
				addProb(i, e, ".after", "no step %q to put it after", e.After)
				return 0, false
			}
			return at, true
		}
		switch e.Op {
		case EditUpdate:
			at := needStep()
			if at < 0 {
				continue
			}
			if e.Step == nil {
				addProb(i, e, ".step", "the new step is missing")
				continue
			}
			ns := e.Step.Clone()
			if ns.ID == "" {
				ns.ID = e.StepID
			}
			if ns.ID != e.StepID {
				addProb(i, e, ".step.id", "update cannot rename %q to %q: remove the step and insert a new one", e.StepID, ns.ID)
				continue
			}
			np.Steps[at] = ns
			touched = append(touched, ns.ID)
		case EditInsert:
			if e.Step == nil {
				addProb(i, e, ".step", "the step to insert is missing")
				continue
			}
			after, ok := afterIndex()
			if !ok {
				continue
			}
			ns := e.Step.Clone()
			if e.After == "" {
				np.Steps = append(np.Steps, ns)
			} else {
				np.Steps = slices.Insert(np.Steps, after+1, ns)
			}
			touched = append(touched, ns.ID)
		case EditRemove:
			at := needStep()
			if at < 0 {
				continue
			}
			np.Steps = slices.Delete(np.Steps, at, at+1)
			touched = append(touched, e.StepID)
		case EditMove:
			at := needStep()
			if at < 0 {
				continue
			}
			if e.After == e.StepID {
				addProb(i, e, ".after", "cannot move a step after itself")
				continue
			}
			if _, ok := afterIndex(); !ok {
				continue
			}
			s := np.Steps[at]
			np.Steps = slices.Delete(np.Steps, at, at+1)
			to := 0
			if e.After != "" {
				to = indexOf(e.After) + 1
			}
			np.Steps = slices.Insert(np.Steps, to, s)
			touched = append(touched, e.StepID)
		case EditSkip, EditUnskip:
			at := needStep()
			if at < 0 {
				continue
			}
			np.Steps[at].Skip = e.Op == EditSkip
			touched = append(touched, e.StepID)
		default:
			addProb(i, e, ".op", "unknown op %q: use update, insert, remove, move, skip or unskip", e.Op)
		}
	}
	probs = append(probs, validatePlan(np, opts.Tools, opts.MaxSteps)...)
	if len(probs) > 0 {
		return nil, &ValidationError{Problems: probs}
	}
	now := func() time.Time { return time.Now().UTC() }
	if opts.Now != nil {
		now = opts.Now
	}
	src := opts.Source
	if src == "" {
		src = "user"
	}
	action := opts.Action
	if action == "" {
		action = "edit"
	}
	np.Version = p.Version + 1
	np.History = append(np.History, PlanUpdate{
		Version: np.Version, Time: now(), Source: src, Reason: opts.Reason, Action: action, StepIDs: dedupeIDs(touched),
	})
	return np, nil
}

func dedupeIDs(ids []string) []string {
	var out []string
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// CheckVersion returns an error wrapping ErrStaleVersion if the caller's
// version is not the plan's current one.
func CheckVersion(p *Plan, version int) error {
	if p.Version != version {
		return fmt.Errorf("%w: plan %s is at version %d, the edit was made against version %d: reload the plan and apply the edit again",
			ErrStaleVersion, planLabel(p), p.Version, version)
	}
	return nil
}

func planLabel(p *Plan) string {
	switch {
	case p.ID != "":
		return strconv.Quote(p.ID)
	case p.Title != "":
		return strconv.Quote(p.Title)
	}
	return "(unnamed)"
}

func (p *Plan) clone() *Plan {
	if p == nil {
		return nil
	}
	c := *p
	if p.Steps != nil {
		c.Steps = make([]*Step, len(p.Steps))
		for i, s := range p.Steps {
			c.Steps[i] = s.Clone()
		}
	}
	if p.History != nil {
		c.History = make([]PlanUpdate, len(p.History))
		for i, u := range p.History {
			u.StepIDs = slices.Clone(u.StepIDs)
			c.History[i] = u
		}
	}
	return &c
}

// Clone returns a deep copy of the step.
func (s *Step) Clone() *Step {
	if s == nil {
		return nil
	}
	c := *s
	c.Args = bytes.Clone(s.Args)
	c.Tools = slices.Clone(s.Tools)
	c.Checks = slices.Clone(s.Checks)
	c.Options = slices.Clone(s.Options)
	c.DependsOn = slices.Clone(s.DependsOn)
	if s.Branches != nil {
		c.Branches = make([]Branch, len(s.Branches))
		for i, b := range s.Branches {
			c.Branches[i] = Branch{When: b.When, Steps: slices.Clone(b.Steps)}
		}
	}
	if s.Critical != nil {
		v := *s.Critical
		c.Critical = &v
	}
	if s.Reversible != nil {
		v := *s.Reversible
		c.Reversible = &v
	}
	if s.Retry != nil {
		r := *s.Retry
		c.Retry = &r
	}
	return &c
}

func (p *Plan) step(id string) *Step {
	if p == nil {
		return nil
	}
	for _, s := range p.Steps {
		if s != nil && s.ID == id {
			return s
		}
	}
	return nil
}

// DefaultRetryDelay is the first backoff delay when a step's retry policy
// names none.
const DefaultRetryDelay = time.Second

func (s *Step) timeoutOr(def time.Duration) time.Duration {
	if s.Timeout == "" {
		return def
	}
	d, err := time.ParseDuration(s.Timeout)
	if err != nil || d <= 0 {
		return def
	}
	return d
}

func (s *Step) retryPolicy() (max int, delay, maxDelay time.Duration) {
	delay, maxDelay = DefaultRetryDelay, DefaultMaxDelay
	if s.Retry == nil {
		return 0, delay, maxDelay
	}
	max = s.Retry.Max
	if max < 0 {
		max = 0
	}
	if d, err := time.ParseDuration(s.Retry.Delay); err == nil && d >= 0 {
		delay = d
	}
	if d, err := time.ParseDuration(s.Retry.MaxDelay); err == nil && d >= 0 {
		maxDelay = d
	}
	return max, delay, maxDelay
}
