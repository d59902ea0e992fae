package session

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/agentd/agentd/engine/tools"
)

// BuiltinTools is the built-in tool set (engine/tools), the registry a
// front end hands the engine unless it adds or wraps tools.
func BuiltinTools() *ToolRegistry { return tools.Builtin() }

// SaveBeforeDiskReads returns reg with its command and git tools
// wrapped: commands read the files from disk, not the editor's buffers,
// so before one runs save is called to save the buffers that hold the
// agent's accepted hunks unsaved. save says why to the editor and returns
// the files that stay unsaved (they hold the user's edits); the step's
// log names them, since the command sees them in their saved state.
func SaveBeforeDiskReads(reg *ToolRegistry, save func(ctx context.Context, why string) (unsaved []string)) *ToolRegistry {
	out := tools.NewRegistry()
	for _, t := range reg.List() {
		if t.Category() == tools.CategoryCommand || t.Category() == tools.CategoryGit {
			if d, ok := t.(tools.Describer); ok {
				out.Register(&describingSaver{saveFirst{Tool: t, save: save}, d})
			} else {
				out.Register(&saveFirst{Tool: t, save: save})
			}
			continue
		}
		out.Register(t)
	}
	return out
}

// saveFirst saves buffers with accepted, unsaved hunks before its tool runs.
type saveFirst struct {
	tools.Tool
	save func(ctx context.Context, why string) []string
}

func (t *saveFirst) Run(ctx context.Context, env *tools.Env, args json.RawMessage) (*tools.Result, error) {
	if unsaved := t.save(ctx, "step "+env.StepID+" ("+t.Name()+") reads the files from disk"); len(unsaved) > 0 {
		env.Emit("log", "these files are seen in their saved state (they hold your unsaved edits): "+strings.Join(unsaved, ", "))
	}
	return t.Tool.Run(ctx, env, args)
}

// RiskOf keeps the wrapped tool's per-call risk (git: commit and apply are
// high), which the engine's policy asks about.
func (t *saveFirst) RiskOf(args json.RawMessage) tools.Risk {
	if ra, ok := t.Tool.(tools.RiskAssessor); ok {
		return ra.RiskOf(args)
	}
	return t.Tool.Risk()
}

type describingSaver struct {
	saveFirst
	d tools.Describer
}

func (t *describingSaver) Describe(args json.RawMessage) tools.Description { return t.d.Describe(args) }
