package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/agentd/agentd/engine/approval"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/internal/fileset"
)

// Selection is the editor's selection, for the planner's prompt.
type Selection struct {
	Path      string `json:"path"`
	StartLine int    `json:"startLine,omitempty"`
	EndLine   int    `json:"endLine,omitempty"`
	Text      string `json:"text"`
}

// DefaultSummaryTokens is the workspace summary's token budget.
var DefaultSummaryTokens = 4000

// maxWalkFiles bounds how many paths a summary collects.
const maxWalkFiles = 200_000

// workspaceSummary renders the file tree (ignore-aware), the README's head,
// open buffers and the selection within about tokens tokens (4 chars each).
//
// What the model would read of a file goes through gate (approval.ReadGate):
// a sensitive open buffer or README asks, or is left out with a note in the
// summary and on progress.
func workspaceSummary(ctx context.Context, gate approval.ReadGate, open []string, sel *Selection, tokens int, progress func(Progress)) (string, error) {
	ws := gate.WS
	if ws == nil {
		return "", nil
	}
	if tokens <= 0 {
		tokens = DefaultSummaryTokens
	}
	budget := tokens * 4
	var b strings.Builder
	// Selection and open buffers first: they are what the user looks at.
	allowed := func(p string) (bool, error) {
		v, err := gate.Check(ctx, "read_file", []string{p})
		if err != nil {
			return false, err
		}
		if !v.Allowed {
			fmt.Fprintf(&b, "- %s (not read: %s)\n", p, v.Reason)
			if progress != nil {
				progress(Progress{Message: "not read: " + v.Reason})
			}
		}
		return v.Allowed, nil
	}
	if sel != nil && sel.Text != "" {
		if ok, err := allowed(sel.Path); err != nil {
			return "", err
		} else if !ok {
			sel = nil
		}
	}
	if sel != nil && sel.Text != "" {
		t := clip(sel.Text, budget/4)
		fmt.Fprintf(&b, "## Selection in %s (lines %d-%d)\n```\n%s\n```\n\n", sel.Path, sel.StartLine, sel.EndLine, t)
	}
	if len(open) > 0 {
		b.WriteString("## Open in the editor\n")
		per := budget / 4 / len(open)
		for _, p := range open {
			if ok, err := allowed(p); err != nil {
				return "", err
			} else if !ok {
				continue
			}
			data, err := ws.ReadFile(ctx, p)
			if err != nil {
				fmt.Fprintf(&b, "- %s (unreadable: %v)\n", p, err)
				continue
			}
			if per < 200 {
				fmt.Fprintf(&b, "- %s\n", p)
				continue
			}
			fmt.Fprintf(&b, "### %s\n```\n%s\n```\n", p, clip(string(data), per))
		}
		b.WriteString("\n")
	}
	for _, name := range []string{"README.md", "README", "README.rst", "README.txt", "readme.md"} {
		data, err := ws.ReadFile(ctx, name)
		if err != nil {
			continue
		}
		if ok, err := allowed(name); err != nil {
			return "", err
		} else if !ok {
			break
		}
		fmt.Fprintf(&b, "## %s (head)\n%s\n\n", name, clip(headLines(string(data), 40), min(2000, budget/6)))
		break
	}
	var mu sync.Mutex
	var files []string
	errFull := errors.New("enough files")
	err := ws.Files().Walk(ctx, fileset.Options{}, func(e fileset.Entry) error {
		mu.Lock()
		defer mu.Unlock()
		if len(files) >= maxWalkFiles {
			return errFull
		}
		files = append(files, e.Path)
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return "", fmt.Errorf("listing the workspace %s: %w", ws.Root(), err)
	}
	rest := budget - b.Len()
	b.WriteString(fileTree(files, max(rest, 400)))
	return b.String(), nil
}

// fileTree lists files within limit chars: all of them if they fit, else
// the top-level directories with their file counts and the shallowest files.
func fileTree(files []string, limit int) string {
	sort.Strings(files)
	var b strings.Builder
	fmt.Fprintf(&b, "## Files (%d, ignored files left out)\n", len(files))
	total := 0
	for _, f := range files {
		total += len(f) + 1
	}
	if total <= limit {
		for _, f := range files {
			b.WriteString(f + "\n")
		}
		return b.String()
	}
	counts := map[string]int{}
	for _, f := range files {
		top, _, ok := strings.Cut(f, "/")
		if !ok {
			top = "."
		}
		counts[top]++
	}
	var tops []string
	for t := range counts {
		tops = append(tops, t)
	}
	sort.Strings(tops)
	b.WriteString("Directories (files):")
	for _, t := range tops {
		fmt.Fprintf(&b, " %s/ (%d)", t, counts[t])
	}
	b.WriteString("\n")
	byDepth := append([]string(nil), files...)
	sort.SliceStable(byDepth, func(i, j int) bool {
		return strings.Count(byDepth[i], "/") < strings.Count(byDepth[j], "/")
	})
	shown := 0
	var list []string
	for _, f := range byDepth {
		if b.Len()+shown+len(f)+1 > limit-40 {
			break
		}
		list = append(list, f)
		shown += len(f) + 1
	}
	sort.Strings(list)
	for _, f := range list {
		b.WriteString(f + "\n")
	}
	fmt.Fprintf(&b, "... and %d more files (use list_dir / search_files to see them)\n", len(files)-len(list))
	return b.String()
}

func headLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

func clip(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	return s[:n] + "\n... (truncated)"
}

// toolCatalog lists every tool with its description and args schema.
func toolCatalog(reg *tools.Registry) string {
	var b strings.Builder
	for _, t := range reg.List() {
		fmt.Fprintf(&b, "### %s (category %s, risk %s)\n%s\nargs schema: %s\n\n",
			t.Name(), t.Category(), t.Risk(), strings.TrimSpace(t.Description()), compactJSON(t.Schema()))
	}
	return b.String()
}

func compactJSON(raw json.RawMessage) string {
	var buf strings.Builder
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "$schema")
	}
	data, _ := json.Marshal(v)
	buf.Write(data)
	return buf.String()
}

// planFormat is the plan format as the model needs it.
const planFormat = `A plan is JSON: {"title": string, "steps": [step, ...]}. Step fields:
- id: unique, [A-Za-z0-9_.-]+ (required)
- description: what the step does, for people
- kind: "tool" (default), "llm" (one model call with "prompt"), "agent" (model with "tools": [tool names] and "prompt", up to "maxIterations" calls),
  "validation" ("checks": [{"expr", "message"}]), "input" ("question", "options"), "decision" ("branches": [{"when", "steps": [ids]}])
- tool, args: for tool steps, the tool name and its arguments, which must match the tool's args schema
- dependsOn: ids of steps that must finish first (steps run in parallel otherwise)
- when: condition on earlier outputs, e.g. "${test.exitCode} != 0"
- critical: false if the run may go on when the step fails (default true)
- retry: {"max": n, "delay": "1s"}; timeout: Go duration, e.g. "5m"
References: a string argument "$read" is step read's whole output; "${test.stdout}" or "${search.files[0]}" inside a longer string is interpolated.
A step may refer only to steps among its (transitive) dependsOn. Write "$$" for a literal "$".
Prefer precise tool steps (read_file, edit_file, json_patch, run_command) over agent steps; use an agent step when the change needs exploring.
An edit_file oldText must be copied exactly from the file's current text (text you read, an open buffer, the selection); never guess it.
If you have not seen the text, make the edit an agent step: its model reads the file when it edits.
Paths are relative to the workspace root. Keep plans short: a handful of steps.`

// planSchema is the structured-output schema of a plan (loose on purpose:
// ValidatePlan checks the details and the problems go back to the model).
var planSchema = json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"steps":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}}},"required":["steps"]}`)

// recoverySchema is the structured-output schema of a recovery decision.
var recoverySchema = json.RawMessage(`{"type":"object","properties":{"action":{"type":"string","enum":["retry_with_changes","insert_recovery_steps","redesign_remaining_plan","fail_gracefully"]},"reason":{"type":"string"},"step":{"type":"object"},"steps":{"type":"array","items":{"type":"object"}}},"required":["action","reason"]}`)

// stepsSchema is the structured-output schema of extra steps.
var stepsSchema = json.RawMessage(`{"type":"object","properties":{"steps":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}}},"required":["steps"]}`)

// extractJSON returns the JSON object in a model answer (fences and prose
// around it are dropped).
func extractJSON(s string) string {
	s = strings.TrimSpace(s)
	var quoted string
	if strings.HasPrefix(s, `"`) && json.Unmarshal([]byte(s), &quoted) == nil {
		// A forced tool's input that the model gave as a string.
		s = strings.TrimSpace(quoted)
	}
	if i := strings.Index(s, "```"); i >= 0 {
		rest := s[i+3:]
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[nl+1:]
		}
		if j := strings.Index(rest, "```"); j >= 0 {
			s = strings.TrimSpace(rest[:j])
		}
	}
	if i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}'); i >= 0 && j > i {
		return s[i : j+1]
	}
	return s
}

// outputsText renders completed steps' outputs, each clipped.
func outputsText(out map[string]json.RawMessage, each int) string {
	ids := make([]string, 0, len(out))
	for id := range out {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "- %s: %s\n", id, clip(string(out[id]), each))
	}
	if b.Len() == 0 {
		return "(none)\n"
	}
	return b.String()
}
