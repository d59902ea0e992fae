package tools

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

//go:embed json_patch.md
var jsonPatchDesc string

// JSONPatchArgs are json_patch's arguments.
type JSONPatchArgs struct {
	Path string        `json:"path"`
	Ops  []JSONPatchOp `json:"ops"`
}

// JSONPatchOp is one RFC 6902 operation.
type JSONPatchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	From  string          `json:"from,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

const jsonPatchSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "JSON file relative to the workspace root."},
    "ops": {
      "type": "array",
      "minItems": 1,
      "description": "RFC 6902 operations applied in order.",
      "items": {
        "type": "object",
        "properties": {
          "op": {"enum": ["add", "remove", "replace", "move", "copy", "test"]},
          "path": {"type": "string", "description": "JSON Pointer (RFC 6901), e.g. \"/version\" or \"/deps/0\"; \"-\" appends to an array."},
          "from": {"type": "string", "description": "Source pointer for move and copy."},
          "value": {"description": "Value for add, replace and test."}
        },
        "required": ["op", "path"],
        "additionalProperties": false,
        "allOf": [
          {"if": {"properties": {"op": {"enum": ["add", "replace", "test"]}}}, "then": {"required": ["value"]}},
          {"if": {"properties": {"op": {"enum": ["move", "copy"]}}}, "then": {"required": ["from"]}}
        ]
      }
    }
  },
  "required": ["path", "ops"],
  "additionalProperties": false
}`

type jsonPatchTool struct{ spec }

func newJSONPatch() Tool {
	return &jsonPatchTool{spec{name: "json_patch", desc: jsonPatchDesc, category: CategoryWrite, risk: RiskMedium, schema: jsonPatchSchema}}
}

func (t *jsonPatchTool) Describe(raw json.RawMessage) Description {
	a, _ := decodeArgs[JSONPatchArgs](t.name, raw)
	ops := make([]string, 0, len(a.Ops))
	for _, op := range a.Ops {
		ops = append(ops, op.Op+" "+op.Path)
	}
	return Description{Title: "Patch " + a.Path, Detail: strings.Join(ops, ", ")}
}

// CheckArgs implements ArgsChecker: every op's path and from must be a
// JSON Pointer (RFC 6901).
func (t *jsonPatchTool) CheckArgs(raw json.RawMessage) []ArgProblem {
	var a struct {
		Ops []map[string]any `json:"ops"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return nil // the schema check reports args of the wrong shape
	}
	var probs []ArgProblem
	for i, op := range a.Ops {
		for _, field := range []string{"path", "from"} {
			s, ok := op[field].(string)
			if !ok || strings.HasPrefix(s, "$") {
				continue
			}
			if msg := pointerProblem(s); msg != "" {
				probs = append(probs, ArgProblem{Field: fmt.Sprintf("ops[%d].%s", i, field), Message: msg})
			}
		}
	}
	return probs
}

// pointerProblem says why s is not a JSON Pointer (RFC 6901), and how to
// write it, or returns "".
func pointerProblem(s string) string {
	if s != "" && !strings.HasPrefix(s, "/") {
		return fmt.Sprintf("%q is not a JSON Pointer: it must start with \"/\" (write %q), or be \"\" for the whole document", s, "/"+s)
	}
	var fixed strings.Builder
	bad := false
	for i := 0; i < len(s); i++ {
		fixed.WriteByte(s[i])
		if s[i] == '~' && (i+1 == len(s) || (s[i+1] != '0' && s[i+1] != '1')) {
			fixed.WriteByte('0')
			bad = true
		}
	}
	if bad {
		return fmt.Sprintf("%q is not a JSON Pointer: a \"~\" in a key must be written \"~0\" (and a \"/\" in a key \"~1\"), as in %q", s, fixed.String())
	}
	return ""
}

func (t *jsonPatchTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (*Result, error) {
	a, rel, via, err := contentTarget(t.name, env, raw, func(a JSONPatchArgs) string { return a.Path })
	if err != nil {
		return nil, err
	}
	if len(a.Ops) == 0 {
		return nil, errorf(CodeInvalidArgs, "json_patch: ops is empty; give at least one RFC 6902 operation")
	}
	if probs := t.CheckArgs(raw); len(probs) > 0 {
		return nil, errorf(CodeInvalidArgs, "json_patch: %s: %s", probs[0].Field, probs[0].Message)
	}
	b := env.WS.Propose(ctx)
	old, err := b.Read(rel)
	if err != nil {
		return nil, fileError(t.name, rel, err)
	}
	content, err := patchJSON(rel, old, a.Ops)
	if err != nil {
		return nil, err
	}
	if err := b.Write(rel, content); err != nil {
		return nil, fileError(t.name, rel, err)
	}
	return viaLink(proposeResult(b, env), via, rel), nil
}

// patchJSON applies ops to doc one by one (so an error names the op) and
// writes the result back in the document's own style: key order (the
// library keeps it), indentation, line endings and the final newline.
func patchJSON(rel string, doc []byte, ops []JSONPatchOp) ([]byte, error) {
	body := bytes.TrimPrefix(doc, []byte("\xef\xbb\xbf"))
	bom := len(body) != len(doc)
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errorf(CodeInvalidArgs, "json_patch: %s is empty, so there is no JSON to patch; give it a JSON document first", rel).
			hint("write it with write_file first")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, body); err != nil {
		return nil, errorf(CodeInvalidArgs, "json_patch: %s is not valid JSON (%v); fix the file first", rel, err).
			hint("fix it or use edit_file")
	}
	cur := compact.Bytes()
	opts := jsonpatch.NewApplyOptions()
	opts.EscapeHTML = false
	for i, op := range ops {
		one, err := json.Marshal([]JSONPatchOp{op})
		if err != nil {
			return nil, errorf(CodeInvalidArgs, "json_patch: ops[%d]: %v", i, err)
		}
		p, err := jsonpatch.DecodePatch(one)
		if err != nil {
			return nil, errorf(CodeInvalidArgs, "json_patch: ops[%d] (%s %s): %v", i, op.Op, op.Path, err)
		}
		next, err := p.ApplyWithOptions(cur, opts)
		if err != nil {
			return nil, errorf(CodePatchFailed, "json_patch: ops[%d] (%s %s) failed on %s: %v; check that the step's path names a value the file has", i, op.Op, op.Path, rel, err).
				hint("read the file and check the JSON Pointer")
		}
		cur = next
	}
	if bytes.Equal(cur, compact.Bytes()) {
		return doc, nil // nothing changed: keep the file byte for byte
	}
	st := detectJSONStyle(body)
	out := cur
	if st.indent != "" {
		out = formatJSON(cur, readLayout(body, st.indent))
	}
	if st.crlf {
		out = bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n"))
	}
	if st.finalNewline {
		if st.crlf {
			out = append(out, '\r', '\n')
		} else {
			out = append(out, '\n')
		}
	}
	if bom {
		out = append([]byte("\xef\xbb\xbf"), out...)
	}
	return out, nil
}

type jsonStyle struct {
	indent       string // "" for a one-line document
	crlf         bool
	finalNewline bool
}

// detectJSONStyle reads the indentation unit from the first indented line
// (tabs or n spaces), and the line ending and final newline.
func detectJSONStyle(doc []byte) jsonStyle {
	st := jsonStyle{crlf: bytes.Contains(doc, []byte("\r\n"))}
	trimmed := bytes.TrimRight(doc, " \t")
	st.finalNewline = bytes.HasSuffix(trimmed, []byte("\n"))
	lines := bytes.Split(bytes.TrimSpace(doc), []byte("\n"))
	if len(lines) < 2 {
		return st
	}
	for _, l := range lines[1:] {
		l = bytes.TrimRight(l, "\r")
		n := len(l) - len(bytes.TrimLeft(l, " \t"))
		if n > 0 && n < len(l) {
			st.indent = string(l[:n])
			return st
		}
	}
	st.indent = "  "
	return st
}
