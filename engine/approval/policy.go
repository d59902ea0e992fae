package approval

import (
	"encoding/json"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/agentd/agentd/engine/tools"
)

// Policy values for one category of ApprovalPolicy.
const (
	PolicyAllow = "allow"
	PolicyAsk   = "ask"
)

// ApprovalPolicy says which tool calls need the user's permission
// (protocol.md ApprovalPolicy). A step's `approval: ask|auto` overrides it;
// a step's `risk` replaces the tool's own risk. DenyCommands always wins,
// even over `approval: auto`.
type ApprovalPolicy struct {
	Read    string `json:"read,omitempty"`
	Write   string `json:"write,omitempty"`
	Delete  string `json:"delete,omitempty"`
	Command string `json:"command,omitempty"`
	Git     string `json:"git,omitempty"`
	Network string `json:"network,omitempty"`
	// RequireApprovalForRisk asks for every call at or above this risk
	// ("medium" or "high"; "" never asks because of risk alone).
	RequireApprovalForRisk tools.Risk `json:"requireApprovalForRisk,omitempty"`
	// AutoApproveReadonly allows read-category tools whatever Read says.
	AutoApproveReadonly bool `json:"autoApproveReadonly,omitempty"`
	// AllowCommands and DenyCommands are globs matched against a command
	// line (and against each part of a compound line split at && || ; |).
	// `*` matches any text, '/' included; {a,b} and [...] work as in
	// doublestar. A command all of whose parts match AllowCommands runs
	// without asking; one with any part matching DenyCommands is refused.
	AllowCommands []string `json:"allowCommands,omitempty"`
	DenyCommands  []string `json:"denyCommands,omitempty"`
}

// DefaultApprovalPolicy reads freely and asks before writing, deleting,
// running commands, touching the user's git repository or the network.
// In review mode `before` the review itself is the question for write and
// delete tools, so they are not asked about twice.
func DefaultApprovalPolicy() ApprovalPolicy {
	return ApprovalPolicy{
		Read:                   PolicyAllow,
		Write:                  PolicyAsk,
		Delete:                 PolicyAsk,
		Command:                PolicyAsk,
		Git:                    PolicyAsk,
		Network:                PolicyAsk,
		RequireApprovalForRisk: tools.RiskHigh,
		AutoApproveReadonly:    true,
	}
}

// AllowAllPolicy never asks (agentd run --yes, ACP's auto); the session
// adds the workspace's DenyCommands, which still refuse (session.RunRequest).
func AllowAllPolicy() ApprovalPolicy {
	return ApprovalPolicy{
		Read: PolicyAllow, Write: PolicyAllow, Delete: PolicyAllow,
		Command: PolicyAllow, Git: PolicyAllow, Network: PolicyAllow,
		AutoApproveReadonly: true,
	}
}

// withDefaults fills empty categories from DefaultApprovalPolicy.
func (p ApprovalPolicy) WithDefaults() ApprovalPolicy {
	d := DefaultApprovalPolicy()
	for _, f := range []struct {
		v *string
		d string
	}{
		{&p.Read, d.Read}, {&p.Write, d.Write}, {&p.Delete, d.Delete},
		{&p.Command, d.Command}, {&p.Git, d.Git}, {&p.Network, d.Network},
	} {
		if *f.v == "" {
			*f.v = f.d
		}
	}
	return p
}

// approvalVerdict is what the policy says about one call.
type approvalVerdict int

const (
	verdictAllow approvalVerdict = iota
	verdictAsk
	verdictDeny
)

// Decide says whether a call of a tool in category cat with risk risk
// needs approval. stepApproval is the step's `approval` field; command is
// the command line for command tools ("" otherwise). The reason explains
// an ask or a deny.
func (p ApprovalPolicy) Decide(cat tools.Category, risk tools.Risk, stepApproval, command string) (ask, deny bool, reason string) {
	v, why := p.WithDefaults().decide(cat, risk, stepApproval, command)
	return v == verdictAsk, v == verdictDeny, why
}

// decide is Decide on a policy that already has its defaults filled in.
func (p ApprovalPolicy) decide(cat tools.Category, risk tools.Risk, stepApproval, command string) (approvalVerdict, string) {
	if command != "" {
		if pat, ok := matchAny(p.DenyCommands, command, false); ok {
			return verdictDeny, "command matches denyCommands pattern " + quote(pat)
		}
	}
	switch stepApproval {
	case "auto":
		return verdictAllow, ""
	case "ask":
		return verdictAsk, "the step asks for approval"
	}
	if cat == tools.CategoryInput {
		return verdictAllow, ""
	}
	if p.RequireApprovalForRisk != "" && riskRank(risk) >= riskRank(p.RequireApprovalForRisk) {
		if !(cat == tools.CategoryCommand && command != "" && allowedCommand(p, command)) &&
			!(cat == tools.CategoryRead && p.AutoApproveReadonly) {
			return verdictAsk, "risk " + string(risk) + " needs approval"
		}
	}
	var setting string
	switch cat {
	case tools.CategoryRead:
		if p.AutoApproveReadonly {
			return verdictAllow, ""
		}
		setting = p.Read
	case tools.CategoryWrite:
		setting = p.Write
	case tools.CategoryDelete:
		setting = p.Delete
	case tools.CategoryCommand:
		if command != "" && allowedCommand(p, command) {
			return verdictAllow, ""
		}
		setting = p.Command
	case tools.CategoryGit:
		setting = p.Git
	case tools.CategoryNetwork:
		setting = p.Network
	default:
		setting = PolicyAsk
	}
	if setting == PolicyAllow {
		return verdictAllow, ""
	}
	return verdictAsk, string(cat) + " needs approval"
}

func allowedCommand(p ApprovalPolicy, command string) bool {
	_, ok := matchAny(p.AllowCommands, command, true)
	return ok
}

func riskRank(r tools.Risk) int {
	switch r {
	case tools.RiskLow:
		return 1
	case tools.RiskMedium:
		return 2
	case tools.RiskHigh:
		return 3
	}
	return 0
}

// matchAny matches command against patterns. With all, every part of a
// compound command must match some pattern; otherwise the whole line or
// any one part matching is enough. It returns the pattern that matched.
func matchAny(patterns []string, command string, all bool) (string, bool) {
	if len(patterns) == 0 {
		return "", false
	}
	line := strings.TrimSpace(command)
	parts := splitCommand(line)
	if all {
		// The whole line matching one pattern is enough only if the line
		// has a single part; "make && rm -rf /" must not pass as "make*".
		if len(parts) <= 1 {
			return matchOne(patterns, line)
		}
		// A pattern that is itself compound ("make && make test", as a
		// remembered command line is) may cover the whole line.
		var compound []string
		for _, p := range patterns {
			if len(splitCommand(p)) > 1 {
				compound = append(compound, p)
			}
		}
		if p, ok := matchOne(compound, line); ok {
			return p, true
		}
		var pat string
		for _, part := range parts {
			p, ok := matchOne(patterns, part)
			if !ok {
				return "", false
			}
			pat = p
		}
		return pat, true
	}
	if p, ok := matchOne(patterns, line); ok {
		return p, true
	}
	for _, part := range parts {
		if p, ok := matchOne(patterns, part); ok {
			return p, true
		}
	}
	return "", false
}

// sepSub replaces '/' so that doublestar's `*` crosses it: command lines
// are text, not paths.
const sepSub = "\x1f"

func matchOne(patterns []string, s string) (string, bool) {
	s = strings.ReplaceAll(s, "/", sepSub)
	for _, pat := range patterns {
		ok, err := doublestar.Match(strings.ReplaceAll(strings.TrimSpace(pat), "/", sepSub), s)
		if err == nil && ok {
			return pat, true
		}
	}
	return "", false
}

// splitCommand splits a shell line at &&, ||, ;, | and newlines. Quoting is
// not parsed: a separator inside quotes splits too, which errs on the side
// of asking.
func splitCommand(line string) []string {
	f := func(r rune) bool { return r == ';' || r == '|' || r == '&' || r == '\n' }
	var parts []string
	for _, p := range strings.FieldsFunc(line, f) {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	return parts
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// commandOf finds the command line of a call, for policy globs and the
// approval prompt: the tool's Describer, else an args field "command".
func CommandOf(t tools.Tool, args json.RawMessage) tools.Description {
	if d, ok := t.(tools.Describer); ok {
		return d.Describe(args)
	}
	if c := t.Category(); c != tools.CategoryCommand && c != tools.CategoryGit {
		return tools.Description{}
	}
	var a struct {
		Command string `json:"command"`
		Cwd     string `json:"cwd"`
	}
	_ = json.Unmarshal(args, &a)
	return tools.Description{Command: a.Command, Cwd: a.Cwd}
}
