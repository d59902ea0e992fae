package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/plans"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/internal/repomap"
	"github.com/agentd/agentd/workspace"
)

// CreateRequest asks for a new plan.
type CreateRequest struct {
	Request   string
	Workspace *workspace.Workspace
	OpenFiles []string   // workspace-relative paths of open buffers
	Selection *Selection // the editor's selection, if any
	// Budget, if set, is reserved and charged for the planner's calls.
	Budget engine.Budget
	// ExploreRounds bounds the rounds of read-only tool calls the model may
	// make before it answers (0: DefaultExploreRounds; < 0: none).
	ExploreRounds int
	// ExploreTokens bounds what those calls may return (0: DefaultExploreTokens).
	ExploreTokens int
	// MapTokens is the repository map's budget (0: repomap.DefaultTokens;
	// < 0: no map).
	MapTokens int
	// OnProgress, if set, is told what the planner is doing (mapping,
	// each read while exploring, asking for the plan).
	OnProgress func(Progress)
	// OnText, if set, gets the model's text as it streams in, while it
	// explores and while it writes the plan (the terminal's --verbose).
	OnText func(string)
	// OnWarnings, if set, gets the warnings about the final plan (an
	// edit_file whose oldText is not in the file as it is now) that the
	// repair round did not clear.
	OnWarnings func([]plans.Problem)
	// ReadFile, if set, reads a file as the editor shows it for the
	// warnings above (nil: the workspace with its overlays).
	ReadFile plans.ReadFunc
	// Images go with the request to a model configured with vision
	// (Settings.CheckImages); with another model Create fails.
	Images []Image
	// Approve asks the user before the model sees a sensitive file while
	// planning (approval.ReadGate: the front end's approval hook, as for a
	// step). Nil, or an answer wrapping approval.ErrCannotAsk: the file is
	// left out with a note the model and OnProgress both get.
	Approve func(ctx context.Context, req approval.ApprovalRequest) (approval.ApprovalDecision, error)
	// Guidance, if set, returns the words the user gave since it was last
	// called (a chat's guidance while its turn is planned): each goes to
	// the next exploration call as a user message (engine.GuidancePrefix).
	// It never blocks.
	Guidance func() []string
}

// Planner makes plans from requests (Create, Regenerate: agentd plan,
// agentd/plan/create and /regenerate) and repairs and extends running
// plans (engine.Planner: Recover, RePlan). Safe for concurrent use.
type Planner struct {
	settings *Settings
	tools    *tools.Registry
	// Model is the planner's model ("" = the default).
	Model string
	// MaxSteps bounds plans (0 = engine default).
	MaxSteps int
	// SummaryTokens is the workspace summary's budget (0 = DefaultSummaryTokens).
	SummaryTokens int
	// MaxOutputTokens caps a planner answer (default 8192).
	MaxOutputTokens int
	Logger          *slog.Logger
	// StateDir holds the repository maps' caches (default
	// gitops.DefaultStateDir()).
	StateDir string
	// WatchMaps makes each workspace's repository map keep a file watcher
	// until Close, so that a plan after the first re-checks only the files
	// that changed, not every file of the tree. For long-lived processes
	// (the daemon); a one-shot command has one map and no use for it.
	WatchMaps bool

	mu   sync.Mutex
	used engine.Usage
	maps map[string]*repomap.Map // by workspace root
}

// Close stops the repository maps' file watchers (WatchMaps). The planner
// stays usable; its maps walk the tree from then on.
func (p *Planner) Close() error {
	p.mu.Lock()
	maps := p.maps
	p.mu.Unlock()
	var errs []error
	for _, m := range maps {
		errs = append(errs, m.Close())
	}
	return errors.Join(errs...)
}

// PlanMaker is the name the rpc server knows the planner by.
type PlanMaker = Planner

// NewPlanner returns a planner with settings s and the tools plans may use
// (tools.Builtin() if nil).
func NewPlanner(s *Settings, reg *tools.Registry) *Planner {
	if reg == nil {
		reg = tools.Builtin()
	}
	log := s.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Planner{settings: s, tools: reg, Logger: log}
}

var _ engine.Planner = (*Planner)(nil)

// Used returns the tokens and cost of every call the planner made.
func (p *Planner) Used() engine.Usage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

func (p *Planner) call(ctx context.Context, budget engine.Budget, req *Request) (*Response, error) {
	c, err := p.settings.Client(p.Model)
	if err != nil {
		return nil, err
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = p.MaxOutputTokens
		if req.MaxTokens == 0 {
			req.MaxTokens = 8192
		}
	}
	resp, u, err := c.Call(ctx, budget, req)
	p.mu.Lock()
	p.used.InputTokens += u.InputTokens
	p.used.OutputTokens += u.OutputTokens
	p.used.CostUSD += u.CostUSD
	p.mu.Unlock()
	_, priced := c.Costs.Lookup(req.Model)
	meter(ctx, u, err != nil || priced)
	return resp, err
}

func (p *Planner) system() string {
	return "You are agentd's planner. You turn a coding request into a plan that agentd runs against the user's workspace.\n\n" +
		planFormat + "\n\n## Tools\n" + toolCatalog(p.tools) +
		"Answer with JSON only, in the shape asked for (a plan unless told otherwise)."
}

// Create makes a plan for req. The answer is parsed and validated; if it
// is invalid, the problems go back to the model for one repair round; if
// it is still invalid the error is a *plans.ValidationError listing them.
// Without a model the error wraps engine.ErrNoModel.
func (p *Planner) Create(ctx context.Context, req CreateRequest) (*plans.Plan, error) {
	if strings.TrimSpace(req.Request) == "" {
		return nil, errors.New("plan: the request is empty; say what you want done")
	}
	if _, err := p.settings.Resolve(p.Model); err != nil {
		return nil, err
	}
	if err := p.settings.CheckImages(p.Model, req.Images); err != nil {
		return nil, err
	}
	user, err := p.userMessage(ctx, req, "Request", exploreGuide)
	if err != nil {
		return nil, err
	}
	msgs, text, items, err := p.explore(ctx, req, user)
	if err != nil {
		return nil, err
	}
	plan, err := p.finish(ctx, req.Budget, msgs, text, req.Workspace, req.ReadFile, req.OnWarnings)
	if err != nil {
		return nil, err
	}
	plan.Context = items
	plan.Request = req.Request
	if plan.Title == "" {
		plan.Title = firstLine(req.Request, 80)
	}
	plan.CreatedAt = time.Now().UTC()
	return plan, nil
}

// userMessage is the first message of a plan or an answer: the request
// under its heading, the workspace's summary, the repository map, and the
// guide to exploring (guide, with the rounds) when the model may explore.
func (p *Planner) userMessage(ctx context.Context, req CreateRequest, heading, guide string) (string, error) {
	summary, err := workspaceSummary(ctx, req.readGate(), req.OpenFiles, req.Selection, p.SummaryTokens, req.progress)
	if err != nil {
		return "", err
	}
	rmap, err := p.repositoryMap(ctx, req)
	if err != nil {
		return "", err
	}
	user := "## " + heading + "\n" + req.Request + "\n\n"
	if summary != "" {
		user += "# Workspace\n" + summary
	}
	if rmap != "" {
		user += "\n## " + rmap
	}
	rounds := req.ExploreRounds
	if rounds == 0 {
		rounds = DefaultExploreRounds
	}
	if rounds > 0 {
		user += "\n" + fmt.Sprintf(guide, rounds)
	}
	return user, nil
}

// Regenerate revises plan from the user's feedback; the result is a new
// version of plan (same id, version+1, a history entry with the feedback).
func (p *Planner) Regenerate(ctx context.Context, plan *plans.Plan, feedback string) (*plans.Plan, error) {
	if plan == nil {
		return nil, errors.New("regenerate: no plan")
	}
	if _, err := p.settings.Resolve(p.Model); err != nil {
		return nil, err
	}
	cur, err := json.MarshalIndent(struct {
		Title string        `json:"title,omitempty"`
		Steps []*plans.Step `json:"steps"`
	}{plan.Title, plan.Steps}, "", "  ")
	if err != nil {
		return nil, err
	}
	user := "## Request\n" + plan.Request + "\n\n## Current plan\n" + string(cur) +
		"\n\n## The user's feedback\n" + feedback + "\n\nRevise the plan accordingly and answer with the whole revised plan."
	np, err := p.planRound(ctx, nil, user)
	if err != nil {
		return nil, err
	}
	np.ID, np.Request, np.CreatedAt = plan.ID, plan.Request, plan.CreatedAt
	if np.Title == "" {
		np.Title = plan.Title
	}
	np.Version = plan.Version + 1
	np.History = append(append([]plans.PlanUpdate(nil), plan.History...), plans.PlanUpdate{
		Version: np.Version, Time: time.Now().UTC(), Source: "user", Action: "regenerate", Reason: feedback})
	return np, nil
}

// planRound asks for a plan, with one repair round.
func (p *Planner) planRound(ctx context.Context, budget engine.Budget, user string) (*plans.Plan, error) {
	msgs := []Message{{Role: "user", Content: user}}
	req := &Request{System: p.system(), Messages: msgs, JSON: &OutputSchema{Name: "plan", Schema: planSchema}}
	resp, err := p.call(ctx, budget, req)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	return p.finish(ctx, budget, msgs, resp.Text, nil, nil, nil)
}

// finish checks the model's plan answer text (msgs is the conversation
// before it) and, if it is invalid, or if one of its edit_file steps has
// an oldText that is not in the file as it is now, sends the problems back
// for one repair round.
func (p *Planner) finish(ctx context.Context, budget engine.Budget, msgs []Message, text string, ws *workspace.Workspace, read plans.ReadFunc, onWarn func([]plans.Problem)) (*plans.Plan, error) {
	plan, probs := p.check(text)
	var warns []plans.Problem
	if len(probs) == 0 {
		if warns = plans.EditWarningsRead(ctx, plan, ws, read); len(warns) == 0 {
			return plan, nil
		}
	}
	p.Logger.Info("the model's plan needs a repair", "problems", len(probs), "warnings", len(warns))
	prompt := repairPrompt(probs)
	if len(probs) == 0 {
		prompt = warningPrompt(warns)
	}
	req := &Request{System: p.system(), JSON: &OutputSchema{Name: "plan", Schema: planSchema},
		Messages: append(slices.Clone(msgs), Message{Role: "assistant", Content: text}, Message{Role: "user", Content: prompt})}
	resp, err := p.call(ctx, budget, req)
	if err != nil {
		return nil, fmt.Errorf("plan repair: %w", err)
	}
	if len(resp.ToolCalls) > 0 && strings.TrimSpace(resp.Text) == "" {
		return nil, errors.New("plan repair: the model called a tool instead of answering with the plan; use a model that follows tool-use instructions")
	}
	plan2, probs := p.check(resp.Text)
	if len(probs) > 0 {
		if plan != nil {
			// The first plan was valid, with warnings only: keep it.
			plan2 = plan
		} else {
			return nil, &RepairError{Problems: probs, Text: extractJSON(resp.Text)}
		}
	}
	if warns := plans.EditWarningsRead(ctx, plan2, ws, read); len(warns) > 0 {
		p.Logger.Warn("the plan still has edit_file steps whose oldText is not in the file", "warnings", len(warns))
		if onWarn != nil {
			onWarn(warns)
		}
	}
	return plan2, nil
}

func warningPrompt(warns []plans.Problem) string {
	var b strings.Builder
	b.WriteString("That plan would fail:\n")
	for _, w := range warns {
		b.WriteString("- " + w.String() + "\n")
	}
	b.WriteString("An edit_file oldText must be copied exactly from the file's current text. Fix those steps (copy the text you read, " +
		"or make them agent steps) and answer with the whole corrected plan as JSON only.")
	return b.String()
}

func repairPrompt(probs []plans.Problem) string {
	var b strings.Builder
	b.WriteString("That plan is invalid. Problems:\n")
	for _, pr := range probs {
		b.WriteString("- " + pr.String() + "\n")
	}
	b.WriteString("Fix every problem and answer with the whole corrected plan as JSON only.")
	return b.String()
}

// check parses and validates a model's plan.
func (p *Planner) check(text string) (*plans.Plan, []plans.Problem) {
	plan, err := plans.ParsePlan("model-plan.json", []byte(extractJSON(text)))
	if err != nil {
		var ve *plans.ValidationError
		if errors.As(err, &ve) && len(ve.Problems) > 0 {
			return nil, ve.Problems
		}
		return nil, []plans.Problem{{Message: "not a JSON plan: " + err.Error()}}
	}
	if len(plan.Steps) == 0 {
		return nil, []plans.Problem{{Field: "steps", Message: "the plan has no steps"}}
	}
	if probs := plans.ValidatePlan(plan, p.tools, p.MaxSteps); len(probs) > 0 {
		return nil, probs
	}
	return plan, nil
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// parseSteps decodes a JSON array of steps with the plan parser's strict
// rules (unknown fields, wrong types).
func parseSteps(raw json.RawMessage) ([]*plans.Step, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	wrapped := append(append([]byte(`{"steps":`), raw...), '}')
	pl, err := plans.ParsePlan("model-steps.json", wrapped)
	if err != nil {
		return nil, err
	}
	return pl.Steps, nil
}

func planJSON(pl *plans.Plan) string {
	data, _ := json.MarshalIndent(struct {
		Title   string        `json:"title,omitempty"`
		Request string        `json:"request,omitempty"`
		Steps   []*plans.Step `json:"steps"`
	}{pl.Title, pl.Request, pl.Steps}, "", " ")
	return string(data)
}

// Recover asks the model what to do about a failed critical step; the
// decision's shape is checked (and the plan it leads to validated) with
// one repair round.
func (p *Planner) Recover(ctx context.Context, rr engine.RecoveryRequest) (*engine.RecoveryDecision, error) {
	if rr.Plan == nil || rr.Plan.Step(rr.StepID) == nil {
		return nil, fmt.Errorf("recover: step %q is not in the plan", rr.StepID)
	}
	user := "## Plan\n" + planJSON(rr.Plan) +
		"\n\n## Completed steps' outputs\n" + outputsText(rr.Completed, 1500) +
		"\n## Failed step\n" + rr.StepID + "\n\n## Error\n" + clip(rr.Error, 4000) + `

Decide how to recover. Answer JSON {"action", "reason", "step"?, "steps"?}:
- "retry_with_changes": "step" is the failed step changed (same id "` + rr.StepID + `"), e.g. new args or prompt;
- "insert_recovery_steps": "steps" are new steps (new ids) that run before the failed step, which then runs again;
- "redesign_remaining_plan": "steps" replace every step not yet run (they may depend on completed steps);
- "fail_gracefully": stop the run; "reason" says why and what the user should do.`
	req := &Request{System: p.system(), Messages: []Message{{Role: "user", Content: user}},
		JSON: &OutputSchema{Name: "recovery_decision", Schema: recoverySchema}}
	resp, err := p.call(ctx, rr.Budget, req)
	if err != nil {
		return nil, fmt.Errorf("recover step %q: %w", rr.StepID, err)
	}
	dec, probs := p.checkDecision(resp.Text, rr)
	if len(probs) == 0 {
		return dec, nil
	}
	req.Messages = append(req.Messages, Message{Role: "assistant", Content: resp.Text},
		Message{Role: "user", Content: strings.Replace(repairPrompt(probs), "plan as JSON", "decision as JSON", 1)})
	resp, err = p.call(ctx, rr.Budget, req)
	if err != nil {
		return nil, fmt.Errorf("recover step %q (repair): %w", rr.StepID, err)
	}
	dec, probs = p.checkDecision(resp.Text, rr)
	if len(probs) > 0 {
		return nil, fmt.Errorf("recover step %q: the model's decision is invalid: %w", rr.StepID, &plans.ValidationError{Problems: probs})
	}
	return dec, nil
}

// checkDecision parses a decision and checks its shape and the plan it
// leads to.
func (p *Planner) checkDecision(text string, rr engine.RecoveryRequest) (*engine.RecoveryDecision, []plans.Problem) {
	var raw struct {
		Action string          `json:"action"`
		Reason string          `json:"reason"`
		Step   json.RawMessage `json:"step"`
		Steps  json.RawMessage `json:"steps"`
	}
	if err := json.Unmarshal([]byte(extractJSON(text)), &raw); err != nil {
		return nil, []plans.Problem{{Message: "not a JSON decision: " + err.Error()}}
	}
	dec := &engine.RecoveryDecision{Action: raw.Action, Reason: raw.Reason}
	var probs []plans.Problem
	prob := func(field, msg string) { probs = append(probs, plans.Problem{Field: field, Message: msg}) }
	steps, err := parseSteps(raw.Steps)
	if err != nil {
		prob("steps", err.Error())
	}
	dec.Steps = steps
	if len(raw.Step) > 0 && string(raw.Step) != "null" {
		one, err := parseSteps(append(append([]byte{'['}, raw.Step...), ']'))
		if err != nil {
			prob("step", err.Error())
		} else if len(one) == 1 {
			dec.Step = one[0]
		}
	}
	if len(probs) > 0 {
		return nil, probs
	}
	pl := rr.Plan.Clone()
	switch dec.Action {
	case engine.RecoverFailGracefully:
		if dec.Reason == "" {
			prob("reason", "fail_gracefully needs a reason for the user")
		}
		dec.Step, dec.Steps = nil, nil
		return dec, probs
	case engine.RecoverRetryWithChanges:
		if dec.Step == nil {
			prob("step", "retry_with_changes needs the changed step")
			return nil, probs
		}
		if dec.Step.ID == "" {
			dec.Step.ID = rr.StepID
		}
		if dec.Step.ID != rr.StepID {
			prob("step.id", fmt.Sprintf("must be the failed step's id %q, not %q", rr.StepID, dec.Step.ID))
			return nil, probs
		}
		for i, st := range pl.Steps {
			if st.ID == rr.StepID {
				if len(dec.Step.DependsOn) == 0 {
					// Models often leave out what did not change.
					dec.Step.DependsOn = append([]string(nil), st.DependsOn...)
				}
				pl.Steps[i] = dec.Step
			}
		}
		dec.Steps = nil
	case engine.RecoverInsertSteps:
		if len(dec.Steps) == 0 {
			prob("steps", "insert_recovery_steps needs at least one step")
			return nil, probs
		}
		var ids []string
		var out []*plans.Step
		for _, st := range pl.Steps {
			if st.ID == rr.StepID {
				out = append(out, dec.Steps...)
				for _, n := range dec.Steps {
					ids = append(ids, n.ID)
				}
				c := *st
				c.DependsOn = append(append([]string(nil), st.DependsOn...), ids...)
				out = append(out, &c)
				continue
			}
			out = append(out, st)
		}
		pl.Steps = out
		dec.Step = nil
	case engine.RecoverRedesign:
		if len(dec.Steps) == 0 {
			prob("steps", "redesign_remaining_plan needs the new steps (or use fail_gracefully)")
			return nil, probs
		}
		var keep []*plans.Step
		for _, st := range pl.Steps {
			if _, done := rr.Completed[st.ID]; done || st.ID == rr.StepID {
				keep = append(keep, st)
			}
		}
		pl.Steps = append(keep, dec.Steps...)
		dec.Step = nil
	default:
		prob("action", fmt.Sprintf("unknown action %q; use retry_with_changes, insert_recovery_steps, redesign_remaining_plan or fail_gracefully", dec.Action))
		return nil, probs
	}
	probs = append(probs, plans.ValidatePlan(pl, p.tools, p.MaxSteps)...)
	if len(probs) > 0 {
		return nil, probs
	}
	return dec, nil
}

// RePlan asks the model for extra steps when a step needs more context.
func (p *Planner) RePlan(ctx context.Context, rr engine.RePlanRequest) ([]*plans.Step, error) {
	if rr.Plan == nil {
		return nil, errors.New("replan: no plan")
	}
	user := "## Plan\n" + planJSON(rr.Plan) +
		"\n\n## Completed steps' outputs\n" + outputsText(rr.Completed, 1500) +
		fmt.Sprintf("\n## Step %q needs more context\n%s\n\n", rr.StepID, rr.Suggestion) +
		`Answer JSON {"steps": [...]} with the few new steps that gather the missing context and redo the work with it.
New steps may depend on existing completed steps or on each other; a new step without dependsOn runs after "` + rr.StepID + `".`
	req := &Request{System: p.system(), Messages: []Message{{Role: "user", Content: user}},
		JSON: &OutputSchema{Name: "extra_steps", Schema: stepsSchema}}
	resp, err := p.call(ctx, rr.Budget, req)
	if err != nil {
		return nil, fmt.Errorf("replan after step %q: %w", rr.StepID, err)
	}
	var raw struct {
		Steps json.RawMessage `json:"steps"`
	}
	if err := json.Unmarshal([]byte(extractJSON(resp.Text)), &raw); err != nil {
		return nil, fmt.Errorf("replan after step %q: the model's answer is not JSON {\"steps\": [...]}: %w", rr.StepID, err)
	}
	steps, err := parseSteps(raw.Steps)
	if err != nil {
		return nil, fmt.Errorf("replan after step %q: %w", rr.StepID, err)
	}
	seen := map[string]bool{}
	for i, st := range steps {
		if st.ID == "" || seen[st.ID] {
			return nil, fmt.Errorf("replan after step %q: new step %d has an empty or duplicate id %q", rr.StepID, i+1, st.ID)
		}
		seen[st.ID] = true
	}
	return steps, nil
}
