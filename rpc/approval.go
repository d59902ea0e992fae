package rpc

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"sync"
	"time"

	"go.lsp.dev/protocol"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/tools"
)

// ApprovalPolicy is protocol.md's ApprovalPolicy.
type ApprovalPolicy struct {
	Read                   string   `json:"read,omitempty"`
	Write                  string   `json:"write,omitempty"`
	Delete                 string   `json:"delete,omitempty"`
	Command                string   `json:"command,omitempty"`
	Git                    string   `json:"git,omitempty"`
	RequireApprovalForRisk string   `json:"requireApprovalForRisk,omitempty"`
	AutoApproveReadonly    *bool    `json:"autoApproveReadonly,omitempty"`
	AllowCommands          []string `json:"allowCommands,omitempty"`
	DenyCommands           []string `json:"denyCommands,omitempty"`
}

// DefaultPolicy asks before deleting, running commands and git operations;
// writes are reviewed as change sets instead of asked about.
func DefaultPolicy() ApprovalPolicy {
	t := true
	return ApprovalPolicy{Read: "allow", Write: "allow", Delete: "ask", Command: "ask", Git: "ask",
		RequireApprovalForRisk: "high", AutoApproveReadonly: &t}
}

// Rule is a remembered "always" answer.
type Rule struct {
	ID       string         `json:"id"`
	Category tools.Category `json:"category"`
	Tool     string         `json:"tool,omitempty"`
	// Command is the exact command line (or a glob) for command rules.
	Command   string    `json:"command,omitempty"`
	Allow     bool      `json:"allow"`
	CreatedAt time.Time `json:"createdAt"`
	Reason    string    `json:"reason,omitempty"`
}

func (r Rule) matches(req engine.ApprovalRequest) bool {
	if r.Category != req.Category {
		return false
	}
	if r.Tool != "" && r.Tool != req.Tool {
		return false
	}
	if r.Command != "" {
		if ok, _ := path.Match(r.Command, req.Command); !ok && r.Command != req.Command {
			return false
		}
	}
	return true
}

// approvals holds the policy and rules.
type approvals struct {
	mu     sync.Mutex
	policy ApprovalPolicy
	rules  []Rule
	seq    int
	// waiting cancels pending client questions at exit.
	cancels map[int]context.CancelFunc
	next    int
}

func newApprovals() *approvals {
	return &approvals{policy: DefaultPolicy(), cancels: map[int]context.CancelFunc{}}
}

func (a *approvals) get() (ApprovalPolicy, []Rule) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.policy, append([]Rule(nil), a.rules...)
}

func (a *approvals) setPolicy(p ApprovalPolicy, rules []Rule) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.policy = p
	a.rules = append([]Rule(nil), rules...)
	for _, r := range rules {
		var n int
		if _, err := fmt.Sscanf(r.ID, "rule-%d", &n); err == nil && n > a.seq {
			a.seq = n
		}
	}
}

func (a *approvals) addRule(r Rule) Rule {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	r.ID = fmt.Sprintf("rule-%d", a.seq)
	a.rules = append(a.rules, r)
	return r
}

func (a *approvals) track(cancel context.CancelFunc) (untrack func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next++
	id := a.next
	a.cancels[id] = cancel
	return func() {
		a.mu.Lock()
		delete(a.cancels, id)
		a.mu.Unlock()
	}
}

func (a *approvals) cancelAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.cancels {
		c()
	}
}

var riskRank = map[tools.Risk]int{tools.RiskLow: 0, tools.RiskMedium: 1, tools.RiskHigh: 2}

// decide applies rules and the policy; ask reports that the user must answer.
func decide(pol ApprovalPolicy, rules []Rule, req engine.ApprovalRequest) (d engine.ApprovalDecision, ask bool) {
	// Remembered answers win, newest first.
	for i := len(rules) - 1; i >= 0; i-- {
		if rules[i].matches(req) {
			return engine.ApprovalDecision{Allow: rules[i].Allow, Reason: "remembered rule " + rules[i].ID}, false
		}
	}
	if req.Category == tools.CategoryCommand {
		for _, g := range pol.DenyCommands {
			if ok, _ := path.Match(g, req.Command); ok {
				return engine.ApprovalDecision{Allow: false, Reason: "command matches denyCommands " + g}, false
			}
		}
	}
	if req.Category == "plan" {
		return engine.ApprovalDecision{}, true
	}
	if rr, ok := riskRank[tools.Risk(pol.RequireApprovalForRisk)]; ok && riskRank[req.Risk] >= rr && pol.RequireApprovalForRisk != "" {
		if !(req.Category == tools.CategoryCommand && commandAllowed(pol, req.Command)) {
			return engine.ApprovalDecision{}, true
		}
	}
	setting := ""
	switch req.Category {
	case tools.CategoryRead:
		setting = pol.Read
		if setting == "" && (pol.AutoApproveReadonly == nil || *pol.AutoApproveReadonly) {
			setting = "allow"
		}
	case tools.CategoryWrite:
		setting = pol.Write
	case tools.CategoryDelete:
		setting = pol.Delete
	case tools.CategoryCommand:
		if commandAllowed(pol, req.Command) {
			return engine.ApprovalDecision{Allow: true, Reason: "command matches allowCommands"}, false
		}
		setting = pol.Command
	case tools.CategoryGit:
		setting = pol.Git
	case tools.CategoryInput:
		setting = "allow"
	}
	if setting == "allow" {
		return engine.ApprovalDecision{Allow: true, Reason: "allowed by policy"}, false
	}
	return engine.ApprovalDecision{}, true
}

func commandAllowed(pol ApprovalPolicy, cmd string) bool {
	for _, g := range pol.AllowCommands {
		if ok, _ := path.Match(g, cmd); ok {
			return true
		}
	}
	return false
}

// approver implements engine.Approver by asking the editor.
type approver Server

// approval option ids, one per kind.
const (
	optAllowOnce    = "allow_once"
	optAllowAlways  = "allow_always"
	optRejectOnce   = "reject_once"
	optRejectAlways = "reject_always"
)

// ApprovalOption is one answer offered to the user.
type ApprovalOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// ApprovalRequestParams is agentd/approval/request's params.
type ApprovalRequestParams struct {
	RunID    string           `json:"runId"`
	StepID   string           `json:"stepId"`
	Tool     string           `json:"tool,omitempty"`
	Category tools.Category   `json:"category"`
	Risk     tools.Risk       `json:"risk"`
	Title    string           `json:"title"`
	Detail   string           `json:"detail"`
	Command  string           `json:"command,omitempty"`
	Cwd      string           `json:"cwd,omitempty"`
	ChangeID string           `json:"changeId,omitempty"`
	Options  []ApprovalOption `json:"options"`
}

// ApprovalResult is the client's answer.
type ApprovalResult struct {
	Outcome  string `json:"outcome"` // selected | cancelled
	OptionID string `json:"optionId,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

var approvalOptions = []ApprovalOption{
	{optAllowOnce, "Allow once", optAllowOnce},
	{optAllowAlways, "Always allow", optAllowAlways},
	{optRejectOnce, "Reject", optRejectOnce},
	{optRejectAlways, "Always reject", optRejectAlways},
}

func (a *approver) Approve(ctx context.Context, req engine.ApprovalRequest) (engine.ApprovalDecision, error) {
	s := (*Server)(a)
	pol, rules := s.approvals.get()
	if rp := s.runs.policy(req.RunID); rp != nil {
		pol = *rp
	}
	if d, ask := decide(pol, rules, req); !ask {
		return d, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer s.approvals.track(cancel)()

	var optionID, reason string
	if s.capabilities().approvalRequest {
		params := ApprovalRequestParams{
			RunID: req.RunID, StepID: req.StepID, Tool: req.Tool, Category: req.Category, Risk: req.Risk,
			Title: req.Title, Detail: req.Detail, Command: req.Command, Cwd: req.Cwd, ChangeID: req.ChangeID,
			Options: approvalOptions,
		}
		if params.Title == "" {
			params.Title = fmt.Sprintf("Step %s wants to use %s", req.StepID, req.Tool)
		}
		var res ApprovalResult
		if err := s.call(ctx, "agentd/approval/request", params, &res); err != nil {
			return engine.ApprovalDecision{}, fmt.Errorf("asking approval for step %s: %w", req.StepID, err)
		}
		if res.Outcome != "selected" {
			return engine.ApprovalDecision{Allow: false, Reason: "approval cancelled"}, nil
		}
		optionID, reason = res.OptionID, res.Reason
	} else {
		msg := fmt.Sprintf("agentd: step %q (%s, %s risk) wants to %s", req.StepID, req.Category, req.Risk, approvalTitle(req))
		if req.Detail != "" {
			msg += "\n" + req.Detail
		}
		actions := make([]protocol.MessageActionItem, len(approvalOptions))
		for i, o := range approvalOptions {
			actions[i] = protocol.MessageActionItem{Title: o.Name}
		}
		item, err := s.client.ShowMessageRequest(ctx, &protocol.ShowMessageRequestParams{
			Type: protocol.MessageTypeWarning, Message: msg, Actions: actions,
		})
		if err != nil {
			return engine.ApprovalDecision{}, fmt.Errorf("asking approval for step %s: %w", req.StepID, err)
		}
		if item == nil {
			return engine.ApprovalDecision{Allow: false, Reason: "approval dismissed"}, nil
		}
		for _, o := range approvalOptions {
			if o.Name == item.Title {
				optionID = o.OptionID
			}
		}
	}
	d := engine.ApprovalDecision{Reason: reason}
	switch optionID {
	case optAllowOnce:
		d.Allow = true
	case optAllowAlways:
		d.Allow, d.Always = true, true
	case optRejectOnce:
	case optRejectAlways:
		d.Always = true
	default:
		return engine.ApprovalDecision{}, fmt.Errorf("approval for step %s: unknown option %q", req.StepID, optionID)
	}
	if d.Always {
		r := s.approvals.addRule(Rule{Category: req.Category, Tool: req.Tool, Command: req.Command, Allow: d.Allow,
			CreatedAt: time.Now().UTC(), Reason: reason})
		pol, rules := s.approvals.get()
		s.persist.savePolicy(pol, rules)
		s.log.Info("remembered approval rule", "rule", r.ID, "category", r.Category, "tool", r.Tool, "allow", r.Allow)
	}
	return d, nil
}

func approvalTitle(req engine.ApprovalRequest) string {
	switch {
	case req.Title != "":
		return req.Title
	case req.Command != "":
		return "run `" + req.Command + "`"
	default:
		return "use " + req.Tool
	}
}

// inputter implements engine.Inputter with window/showMessageRequest.
type inputter Server

func (in *inputter) Ask(ctx context.Context, req engine.InputRequest) (string, error) {
	s := (*Server)(in)
	if len(req.Options) == 0 {
		return "", errors.New("step " + req.StepID + ": free-text questions are not supported by the editor protocol yet; give the step options")
	}
	actions := make([]protocol.MessageActionItem, len(req.Options))
	for i, o := range req.Options {
		actions[i] = protocol.MessageActionItem{Title: o}
	}
	item, err := s.client.ShowMessageRequest(ctx, &protocol.ShowMessageRequestParams{
		Type: protocol.MessageTypeInfo, Message: "agentd: " + req.Question, Actions: actions,
	})
	if err != nil {
		return "", fmt.Errorf("asking for step %s: %w", req.StepID, err)
	}
	if item == nil {
		return "", fmt.Errorf("step %s: the question was dismissed", req.StepID)
	}
	return item.Title, nil
}

// failureHandler implements engine.FailureHandler: the user chooses.
type failureHandler Server

// Titles of the failure choices.
const (
	failRetry = "Retry"
	failSkip  = "Skip"
	failAbort = "Abort"
)

func (f *failureHandler) OnFailure(ctx context.Context, runID, stepID string, err error) (engine.FailureAction, error) {
	s := (*Server)(f)
	item, cerr := s.client.ShowMessageRequest(ctx, &protocol.ShowMessageRequestParams{
		Type:    protocol.MessageTypeError,
		Message: fmt.Sprintf("agentd: step %q failed: %v", stepID, err),
		Actions: []protocol.MessageActionItem{{Title: failRetry}, {Title: failSkip}, {Title: failAbort}},
	})
	if cerr != nil {
		return engine.FailAbort, fmt.Errorf("asking what to do about step %s: %w", stepID, cerr)
	}
	if item == nil {
		return engine.FailAbort, nil
	}
	switch item.Title {
	case failRetry:
		return engine.FailRetry, nil
	case failSkip:
		return engine.FailSkip, nil
	}
	return engine.FailAbort, nil
}

// sortRules orders rules by id for stable output.
func sortRules(r []Rule) {
	sort.SliceStable(r, func(i, j int) bool { return r[i].CreatedAt.Before(r[j].CreatedAt) })
}
