package tools

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
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

func (t *jsonPatchTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (*Result, error) {
	a, rel, via, err := contentTarget(t.name, env, raw, func(a JSONPatchArgs) string { return a.Path })
	if err != nil {
		return nil, err
	}
	if len(a.Ops) == 0 {
		return nil, errorf(CodeInvalidArgs, "json_patch: ops is empty; give at least one RFC 6902 operation")
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
		return nil, errorf(CodeInvalidArgs, "json_patch: %s is empty; write it with write_file first", rel)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, body); err != nil {
		return nil, errorf(CodeInvalidArgs, "json_patch: %s is not valid JSON (%v); fix it or use edit_file", rel, err)
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
			return nil, errorf(CodePatchFailed, "json_patch: ops[%d] (%s %s) failed on %s: %v; read the file and check the JSON Pointer", i, op.Op, op.Path, rel, err)
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
