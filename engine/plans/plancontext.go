package plans

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/workspace"
)

// ContextItem is one thing the planner's model looked at before it made
// the plan (a read_file, list_dir, search_files or search_code call), with
// the reason it gave. Plans made from a request carry them in
// Plan.Context, so the user sees what the plan is based on.
type ContextItem struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args,omitempty"`
	Why  string          `json:"why,omitempty"`
}

// contextSpec is the parser's shape of a context item.
var contextSpec = map[string]fieldSpec{
	"tool": {shape: shString}, "args": {shape: shObject}, "why": {shape: shString},
}

func init() {
	planSpec["context"] = fieldSpec{shape: shStructList, sub: contextSpec}
}

// EditWarnings returns a warning for every edit_file step whose oldText
// does not occur in the file as it is now (unsaved editor buffers
// included): such a step was planned without reading the file and would
// fail. Steps whose path or oldText hold references, and files that an
// earlier step of the plan may write or create, are not checked. The
// plan is valid either way; these are warnings, for the model (a repair
// round) and for the user's review.
func EditWarnings(ctx context.Context, p *Plan, ws *workspace.Workspace) []Problem {
	return EditWarningsRead(ctx, p, ws, nil)
}

// ReadFunc reads a workspace-relative file as the user sees it now.
type ReadFunc func(ctx context.Context, rel string) ([]byte, error)

// EditWarningsRead is EditWarnings with the file text read by read (nil:
// the workspace with its overlays). A front end whose editor holds buffers
// the workspace has not seen yet (ACP's fs/read_text_file) passes a reader
// that asks the editor, so the warning judges the text the step will edit.
func EditWarningsRead(ctx context.Context, p *Plan, ws *workspace.Workspace, read ReadFunc) []Problem {
	if p == nil || ws == nil {
		return nil
	}
	var out []Problem
	written := map[string]bool{} // files a step before may change
	for _, st := range p.Steps {
		if st.EffectiveKind() != KindTool {
			if st.EffectiveKind() == KindAgent {
				return out // an agent step may change anything
			}
			continue
		}
		if st.Tool != "edit_file" {
			if t, ok := tools.Builtin().Get(st.Tool); ok && t.Category() != tools.CategoryRead {
				var a struct {
					Path string `json:"path"`
					To   string `json:"to"`
				}
				_ = json.Unmarshal(st.Args, &a)
				if a.Path == "" && a.To == "" {
					return out // a patch or command: anything may change
				}
				written[a.Path], written[a.To] = true, true
			}
			continue
		}
		var a tools.EditFileArgs
		if json.Unmarshal(st.Args, &a) != nil || hasRef(a.Path) || written[a.Path] {
			written[a.Path] = true
			continue
		}
		written[a.Path] = true
		rel, _, err := ws.Resolve(a.Path)
		if err != nil {
			continue // validation of the step reports bad paths
		}
		var data []byte
		if read != nil {
			data, err = read(ctx, rel)
		} else {
			data, err = ws.ReadFile(ctx, rel)
		}
		if err != nil {
			out = append(out, Problem{File: p.Source, StepID: st.ID, Field: "args.path",
				Message: fmt.Sprintf("warning: %s cannot be read (%v); edit_file needs an existing file", a.Path, err)})
			continue
		}
		// The run's own matcher, edit after edit as the step applies them:
		// the warning is what the run would fail with, closest line and all.
		content := string(data)
		for i, e := range a.Edits {
			if e.OldText == "" || hasRef(e.OldText) || hasRef(e.NewText) {
				continue
			}
			next, err := tools.ApplyEdit(rel, content, i, e)
			var te *tools.Error
			switch {
			case err == nil:
				content = next
			case errors.As(err, &te) && te.Code == tools.CodeNoMatch:
				out = append(out, Problem{File: p.Source, StepID: st.ID, Field: fmt.Sprintf("args.edits[%d].oldText", i),
					Message: fmt.Sprintf("warning: this oldText does not occur in %s as it is now%s; read the file and copy the text exactly, or make the step an agent step", rel, tools.NearMiss(content, e.OldText))})
			default:
				out = append(out, Problem{File: p.Source, StepID: st.ID, Field: fmt.Sprintf("args.edits[%d].oldText", i),
					Message: "warning: " + strings.TrimPrefix(err.Error(), "edit_file: ")})
			}
		}
	}
	return out
}

// hasRef reports whether s may hold a reference ("$id", "${id.path}").
func hasRef(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '$' {
			c := s[i+1]
			if c == '{' || c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') {
				return true
			}
		}
	}
	return false
}

// String renders the item for people: the tool, its main argument, and why.
func (c ContextItem) String() string {
	var a map[string]any
	_ = json.Unmarshal(c.Args, &a)
	var main string
	for _, k := range []string{"path", "pattern", "glob"} {
		if v, ok := a[k].(string); ok && v != "" {
			main = v
			break
		}
	}
	if main == "" && len(c.Args) > 0 && string(c.Args) != "{}" {
		main = string(c.Args)
	}
	if s, ok := a["startLine"].(float64); ok {
		main += fmt.Sprintf(":%d", int(s))
		if e, ok := a["endLine"].(float64); ok {
			main += fmt.Sprintf("-%d", int(e))
		}
	}
	out := c.Tool
	if main != "" {
		out += " " + main
	}
	if c.Why != "" {
		out += " — " + c.Why
	}
	return out
}

// ContextText renders a plan's context for a review, one item a line
// under a heading; "" when the plan has none. Every front end shows it the
// same way.
func ContextText(p *Plan) string {
	if p == nil || len(p.Context) == 0 {
		return ""
	}
	var b strings.Builder
	what := "things"
	if len(p.Context) == 1 {
		what = "thing"
	}
	fmt.Fprintf(&b, "The model looked at %d %s before planning:\n", len(p.Context), what)
	for _, c := range p.Context {
		b.WriteString("  " + c.String() + "\n")
	}
	return b.String()
}
