package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed edit_file.md
var editFileDesc string

// EditFileArgs are edit_file's arguments.
type EditFileArgs struct {
	Path  string `json:"path"`
	Edits []Edit `json:"edits"`
}

// Edit replaces the one occurrence of OldText with NewText.
type Edit struct {
	OldText string `json:"oldText"`
	NewText string `json:"newText"`
}

const editFileSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File to edit, relative to the workspace root."},
    "edits": {
      "type": "array",
      "minItems": 1,
      "description": "Replacements applied in order; each oldText must occur exactly once in the file as the earlier edits left it.",
      "items": {
        "type": "object",
        "properties": {
          "oldText": {"type": "string", "minLength": 1, "description": "Exact text to replace, including whitespace and indentation."},
          "newText": {"type": "string", "description": "Replacement text."}
        },
        "required": ["oldText", "newText"],
        "additionalProperties": false
      }
    }
  },
  "required": ["path", "edits"],
  "additionalProperties": false
}`

type editFileTool struct{ spec }

func newEditFile() Tool {
	return &editFileTool{spec{name: "edit_file", desc: editFileDesc, category: CategoryWrite, risk: RiskMedium, schema: editFileSchema}}
}

func (t *editFileTool) Describe(raw json.RawMessage) Description {
	a, _ := decodeArgs[EditFileArgs](t.name, raw)
	return Description{Title: "Edit " + a.Path, Detail: fmt.Sprintf("%d replacement(s)", len(a.Edits))}
}

func (t *editFileTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (*Result, error) {
	a, rel, via, err := contentTarget(t.name, env, raw, func(a EditFileArgs) string { return a.Path })
	if err != nil {
		return nil, err
	}
	if len(a.Edits) == 0 {
		return nil, errorf(CodeInvalidArgs, "edit_file: edits is empty; give at least one {oldText, newText}")
	}
	b := env.WS.Propose(ctx)
	old, err := b.Read(rel)
	if err != nil {
		return nil, fileError(t.name, rel, err)
	}
	if looksBinary(old) {
		return nil, errorf(CodeBinary, "edit_file: %s is a binary file; edit_file only edits text", rel)
	}
	content, err := applyEdits(rel, string(old), a.Edits)
	if err != nil {
		return nil, err
	}
	if err := b.Write(rel, []byte(content)); err != nil {
		return nil, fileError(t.name, rel, err)
	}
	return viaLink(proposeResult(b, env), via, rel), nil
}

// applyEdits applies edits in order; each oldText must occur exactly once.
func applyEdits(rel, content string, edits []Edit) (string, error) {
	for i, e := range edits {
		var err error
		if content, err = ApplyEdit(rel, content, i, e); err != nil {
			return "", err
		}
	}
	return content, nil
}

// ApplyEdit applies edits[i] = e to content as an edit_file step does: its
// oldText must occur exactly once (in the file's own line endings). The
// error is the step's (NO_MATCH names the closest line). Plan validation
// uses it to warn before the run about what the run would fail on.
func ApplyEdit(rel, content string, i int, e Edit) (string, error) {
	crlf := strings.Contains(content, "\r\n")
	if e.OldText == "" {
		return "", errorf(CodeInvalidArgs, "edit_file: edits[%d].oldText is empty: give the text to replace (a whole file is written by a write_file step)", i).
			hint("to create or replace a whole file use write_file")
	}
	oldText, newText := e.OldText, e.NewText
	n := strings.Count(content, oldText)
	if n == 0 && crlf && !strings.Contains(oldText, "\r\n") && strings.Contains(oldText, "\n") {
		// The file has Windows line endings and the edit was written
		// with \n: match and replace in the file's own style.
		oldText = strings.ReplaceAll(oldText, "\n", "\r\n")
		newText = strings.ReplaceAll(strings.ReplaceAll(newText, "\r\n", "\n"), "\n", "\r\n")
		n = strings.Count(content, oldText)
	}
	switch {
	case n == 0:
		return "", errorf(CodeNoMatch, "edit_file: edits[%d].oldText was not found in %s%s; the file may have changed since the plan was written: make oldText match it exactly, including indentation",
			i, rel, nearMiss(content, oldText)).hint("read the file again and copy the text exactly, including indentation")
	case n > 1:
		return "", errorf(CodeAmbiguousMatch, "edit_file: edits[%d].oldText occurs %d times in %s (at lines %s); include more surrounding lines so it matches exactly once",
			i, n, rel, occurrenceLines(content, oldText))
	}
	return strings.Replace(content, oldText, newText, 1), nil
}

// NearMiss says where in content the text probably is ("; the closest
// line is line N: ..."), as the step's NO_MATCH error does.
func NearMiss(content, oldText string) string { return nearMiss(content, oldText) }

// occurrenceLines lists the 1-based lines where s occurs in content.
func occurrenceLines(content, s string) string {
	var lines []string
	off, line := 0, 1
	for {
		i := strings.Index(content[off:], s)
		if i < 0 {
			break
		}
		line += strings.Count(content[off:off+i], "\n")
		lines = append(lines, fmt.Sprint(line))
		if len(lines) == 10 {
			lines = append(lines, "...")
			break
		}
		// Count the lines inside the match too and move past it, as
		// strings.Count does.
		line += strings.Count(content[off+i:off+i+len(s)], "\n")
		off += i + len(s)
	}
	return strings.Join(lines, ", ")
}

// nearMiss describes the line of content closest to oldText's first
// non-blank line, to tell the caller where the text probably is.
func nearMiss(content, oldText string) string {
	want := ""
	for _, l := range strings.Split(oldText, "\n") {
		if strings.TrimSpace(l) != "" {
			want = strings.TrimRight(l, "\r")
			break
		}
	}
	if want == "" {
		return ""
	}
	wantNorm := normSpace(want)
	bestLine, bestScore, bestText := 0, 0.0, ""
	for i, l := range strings.Split(content, "\n") {
		l = strings.TrimRight(l, "\r")
		if strings.TrimSpace(l) == "" {
			continue
		}
		var score float64
		if normSpace(l) == wantNorm {
			score = 1
		} else {
			score = similarity(strings.TrimSpace(l), strings.TrimSpace(want))
		}
		if score > bestScore {
			bestLine, bestScore, bestText = i+1, score, l
		}
	}
	if bestScore < 0.5 {
		return " (no similar line either)"
	}
	hint := ""
	if bestScore == 1 {
		hint = "; it differs in whitespace"
		if bestText != want {
			hint = "; it differs in whitespace or indentation"
		}
		if strings.Contains(oldText, "\n") {
			hint += " (or a later line of oldText differs)"
		}
	}
	const maxShow = 200
	if len(bestText) > maxShow {
		bestText = bestText[:maxShow] + "..."
	}
	return fmt.Sprintf("; the closest line is line %d: %q%s", bestLine, bestText, hint)
}

func normSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// similarity is 1 - levenshtein/maxlen over bytes, for short lines; longer
// lines compare by common prefix and suffix.
func similarity(a, b string) float64 {
	if a == b {
		return 1
	}
	la, lb := len(a), len(b)
	m := max(la, lb)
	if m == 0 {
		return 1
	}
	if la > 300 || lb > 300 {
		p := commonPrefix(a, b)
		s := commonPrefix(reverse(a[p:]), reverse(b[p:]))
		return float64(p+s) / float64(m)
	}
	prev := make([]int, lb+1)
	cur := make([]int, lb+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= la; i++ {
		cur[0] = i
		for j := 1; j <= lb; j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return 1 - float64(prev[lb])/float64(m)
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}
