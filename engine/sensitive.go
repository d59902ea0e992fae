package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentd/agentd/engine/tools"
)

// Sensitive reads: a tool call that would read a file on the workspace's
// sensitive list (workspace.DefaultSensitive and what .agentd/config.json
// adds: .env, keys) asks the user first, whoever made the call (a plan's
// own read_file or a model's), as a write does: approval category read,
// Sensitive true, the path in the title. Only a step whose approval is
// "auto" in the plan skips the question (remembered rules, which match by
// category and tool, do not answer it); a dry run asks nothing (nothing of
// it reaches a model).

// sensitiveReader is implemented by tools that read file contents: the
// workspace-relative paths a call reads.
type sensitiveReader interface {
	ReadPaths(args json.RawMessage) []string
}

// approveSensitive asks before t reads a sensitive file; it returns a
// non-empty reason when the call must not happen, and handled false when
// the call reads no sensitive file (the usual approval applies).
func (w *worker) approveSensitive(ctx context.Context, t tools.Tool, args json.RawMessage) (why string, handled bool, err error) {
	s, step := w.s, w.j.step
	sr, ok := t.(sensitiveReader)
	if !ok || s.cfg.WS == nil {
		return "", false, nil
	}
	for _, p := range sr.ReadPaths(args) {
		pat := s.cfg.WS.SensitivePattern(p)
		if pat == "" {
			continue
		}
		if step.Approval == "auto" {
			return "", true, nil
		}
		req := ApprovalRequest{
			RunID: s.r.id, StepID: step.ID, Tool: t.Name(), Category: tools.CategoryRead, Risk: tools.RiskMedium,
			Title:     fmt.Sprintf("Read %s, a sensitive file (step %s)", p, step.ID),
			Detail:    fmt.Sprintf("%s matches %q in the sensitive list; what the step reads may go to a model", p, pat),
			Sensitive: true,
		}
		dec, err := w.ask(ctx, req, "reads a sensitive file: "+p)
		if err != nil {
			return "", true, fmt.Errorf("step %q: asking for approval: %w", step.ID, err)
		}
		if !dec.Allow {
			r := "approval denied"
			if dec.Reason != "" {
				r += ": " + dec.Reason
			}
			return r, true, nil
		}
		return "", true, nil
	}
	return "", false, nil
}
