package session

import (
	"context"
	"encoding/json"

	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/workspace"
)

// The tools' plain data, as a front end that stands in for a tool (ACP's
// client terminal) reads its call and writes its result.
type (
	ToolEnv          = tools.Env
	ToolResult       = tools.Result
	ToolError        = tools.Error
	ToolDescriber    = tools.Describer
	ToolDescription  = tools.Description
	RunCommandArgs   = tools.RunCommandArgs
	RunCommandOutput = tools.RunCommandOutput
)

// CommandShell is the shell run_command runs its command line with
// (CommandShell() -c LINE).
func CommandShell() string { return tools.Shell }

// MaxCommandOutput caps what a command's (or an MCP tool's) result keeps.
func MaxCommandOutput() int { return tools.MaxCommandOutput }

// EditorTools say where an editor stands in for the built-in tools (an
// ACP client that declares a terminal or a file system).
type EditorTools struct {
	// Read, if set, has the editor read the workspace file rel (its
	// buffer's text) before a tool that reads, writes or deletes it runs,
	// so the tool sees what the editor shows.
	Read func(ctx context.Context, rel string)
	// RunCommand, if set, replaces run_command (the editor's terminal);
	// it is handed the built-in run_command to wrap.
	RunCommand func(builtin Tool) Tool
}

// ToolsThroughEditor is the built-in tools with the editor standing in
// where et says: run_command replaced, and every file tool reading the
// files its call names (path, from, to) through the editor first.
func ToolsThroughEditor(ws *workspace.Workspace, et EditorTools) *ToolRegistry {
	reg := tools.Builtin()
	if et.Read == nil && et.RunCommand == nil {
		return reg
	}
	out := tools.NewRegistry()
	for _, t := range reg.List() {
		switch c := t.Category(); {
		case et.RunCommand != nil && t.Name() == "run_command":
			out.Register(et.RunCommand(t))
		case et.Read != nil && (c == tools.CategoryRead || c == tools.CategoryWrite || c == tools.CategoryDelete):
			r := readingTool{Tool: t, ws: ws, read: et.Read}
			if d, ok := t.(tools.Describer); ok {
				out.Register(&describingReadingTool{r, d})
			} else {
				out.Register(&r)
			}
		default:
			out.Register(t)
		}
	}
	return out
}

// readingTool reads the files its call names through the editor first.
type readingTool struct {
	tools.Tool
	ws   *workspace.Workspace
	read func(ctx context.Context, rel string)
}

func (t *readingTool) Run(ctx context.Context, env *tools.Env, args json.RawMessage) (*tools.Result, error) {
	var a map[string]any
	if json.Unmarshal(args, &a) == nil {
		for _, k := range []string{"path", "from", "to"} {
			p, ok := a[k].(string)
			if !ok || p == "" {
				continue
			}
			if rel, _, err := t.ws.Resolve(p); err == nil {
				t.read(ctx, rel)
			}
		}
	}
	return t.Tool.Run(ctx, env, args)
}

type describingReadingTool struct {
	readingTool
	d tools.Describer
}

func (t *describingReadingTool) Describe(args json.RawMessage) tools.Description {
	return t.d.Describe(args)
}
