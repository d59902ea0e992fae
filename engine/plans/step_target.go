package plans

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentd/agentd/diff"
)

// StepTarget says in a few words what a step acts on: the paths it writes,
// reads or deletes, the command it runs, the pattern it searches for, so a
// plan's preview (and --yes after it) is not approved blind.
func StepTarget(s *Step) string {
	var a struct {
		Path    string            `json:"path"`
		Paths   []string          `json:"paths"`
		From    string            `json:"from"`
		To      string            `json:"to"`
		Command string            `json:"command"`
		Cwd     string            `json:"cwd"`
		Pattern string            `json:"pattern"`
		Glob    string            `json:"glob"`
		Action  string            `json:"action"`
		Patch   string            `json:"patch"`
		Edits   []json.RawMessage `json:"edits"`
		Ops     []json.RawMessage `json:"ops"`
		Content *string           `json:"content"`
	}
	_ = json.Unmarshal(s.Args, &a)
	switch s.Tool {
	case "run_command":
		t := "$ " + OneLine(a.Command, 100)
		if a.Cwd != "" && a.Cwd != "." {
			t += " (in " + a.Cwd + ")"
		}
		return t
	case "write_file":
		return "writes " + a.Path
	case "edit_file":
		return fmt.Sprintf("edits %s (%d edit%s)", a.Path, len(a.Edits), pluralS(len(a.Edits)))
	case "delete_file":
		return "deletes " + a.Path
	case "move_file":
		return "moves " + a.From + " -> " + a.To
	case "read_file":
		return "reads " + a.Path
	case "list_dir":
		return "lists " + dotIfEmpty(a.Path)
	case "json_patch":
		return fmt.Sprintf("patches %s (%d op%s)", a.Path, len(a.Ops), pluralS(len(a.Ops)))
	case "search_code":
		t := "searches for " + OneLine(a.Pattern, 60)
		if a.Glob != "" {
			t += " in " + a.Glob
		}
		return t
	case "search_files":
		return "finds " + a.Glob
	case "apply_patch":
		var paths []string
		if fds, err := diff.Parse(a.Patch); err == nil {
			for _, fd := range fds {
				p := fd.NewPath
				if p == "" || p == "/dev/null" {
					p = fd.OldPath
				}
				paths = append(paths, p)
			}
		}
		return "patches " + strings.Join(paths, ", ")
	case "git":
		t := "git " + a.Action
		if len(a.Paths) > 0 {
			t += " " + strings.Join(a.Paths, " ")
		}
		return t
	}
	switch s.EffectiveKind() {
	case KindLLM, KindAgent:
		return "asks the model: " + OneLine(s.Prompt, 80)
	case KindInput:
		return "asks you: " + OneLine(s.Question, 80)
	}
	if a.Path != "" {
		return a.Path
	}
	return ""
}

// OneLine is s on one line, cut to n runes.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

func dotIfEmpty(p string) string {
	if p == "" {
		return "."
	}
	return p
}

func pluralS(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
