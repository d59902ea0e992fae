package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/workspace"
)

// Sensitive reads: every read whose content a model sees — a plan's own
// read_file, an agent step's tools, the planner's exploration, the
// workspace summary's open files and README, a command whose line names a
// file (run_command, tools.CommandPaths) — goes through ReadGate, the
// one place that decides it. A call that would read a file on the
// workspace's sensitive list (workspace.DefaultSensitive and what
// .agentd/config.json adds: .env, keys; matched against the path as
// written and against the file a link or ".." leads to) asks the user
// first, as a write does: approval category read, Sensitive true, the path
// in the title. Only a step whose approval is "auto" in the plan skips the
// question (remembered rules, which match by category and tool, do not
// answer it); a dry run asks nothing (nothing of it reaches a model). Where
// the front end cannot ask (no approver, standard input closed), the read
// is left out and the note says so to the model and the user.

// ErrCannotAsk is what an approval hook returns when it has no way to ask
// the user (a terminal whose standard input is closed): the gate leaves the
// read out with a note instead of failing.
var ErrCannotAsk = errors.New("the front end cannot ask the user")

// sensitiveReader is implemented by tools that read file contents: the
// workspace-relative paths a call reads.
type sensitiveReader interface {
	ReadPaths(args json.RawMessage) []string
}

// ReadPaths returns the paths a call of t with args reads (nil when t
// reads no file content).
func ReadPaths(t tools.Tool, args json.RawMessage) []string {
	if sr, ok := t.(sensitiveReader); ok {
		return sr.ReadPaths(args)
	}
	return nil
}

// ReadGate decides whether a model may see a file's content.
type ReadGate struct {
	WS            *workspace.Workspace
	RunID, StepID string
	// Ask asks the user (the front end's approval hook). Nil, or an
	// error wrapping ErrCannotAsk: the read is left out with a note.
	Ask func(ctx context.Context, req ApprovalRequest) (ApprovalDecision, error)
	// Auto allows without asking (a plan step whose approval is "auto").
	Auto bool
	// Planning: the planner's model reads (the question says so).
	Planning bool
}

// ReadVerdict is the gate's answer for one call.
type ReadVerdict struct {
	// Sensitive: the call reads a file on the list (Path, Pattern).
	Sensitive     bool
	Path, Pattern string
	// Allowed: the read may happen. When not, Reason says why, in words
	// for the model and the user ("approval denied", or why it was left out).
	Allowed bool
	Reason  string
	// LeftOut: nobody could be asked; the read was left out.
	LeftOut bool
}

// Check decides on a call of tool (by name) that reads paths.
func (g ReadGate) Check(ctx context.Context, tool string, paths []string) (ReadVerdict, error) {
	if g.WS == nil {
		return ReadVerdict{Allowed: true}, nil
	}
	match := g.WS.SensitiveMatcher()
	out := ReadVerdict{Allowed: true}
	for _, p := range paths {
		pat := match(p)
		if pat == "" {
			continue
		}
		v := ReadVerdict{Sensitive: true, Path: p, Pattern: pat}
		if g.Auto {
			v.Allowed = true
			out = v
			continue
		}
		where := ""
		switch {
		case g.Planning:
			where = " (while planning)"
		case g.StepID != "":
			where = fmt.Sprintf(" (step %s)", g.StepID)
		}
		req := ApprovalRequest{
			RunID: g.RunID, StepID: g.StepID, Tool: tool, Category: tools.CategoryRead, Risk: tools.RiskMedium,
			Title:     fmt.Sprintf("Read %s, a sensitive file%s", p, where),
			Detail:    fmt.Sprintf("%s matches %q in the sensitive list (the path or the file it leads to); what is read goes to a model", p, pat),
			Sensitive: true,
		}
		if g.Ask == nil {
			v.LeftOut = true
			v.Reason = fmt.Sprintf("%s was left out: it is a sensitive file (matches %q) and the user could not be asked here; "+
				"if it is needed, plan a read_file step for it, which asks when the plan runs", p, pat)
			return v, nil
		}
		dec, err := g.Ask(ctx, req)
		if errors.Is(err, ErrCannotAsk) {
			v.LeftOut = true
			v.Reason = fmt.Sprintf("%s was left out: it is a sensitive file (matches %q) and the user could not be asked (%v)", p, pat, err)
			return v, nil
		}
		if err != nil {
			return v, fmt.Errorf("asking to read %s: %w", p, err)
		}
		if !dec.Allow {
			v.Reason = "approval denied"
			if dec.Reason != "" {
				v.Reason += ": " + dec.Reason
			}
			return v, nil
		}
		v.Allowed = true
		out = v
	}
	return out, nil
}
