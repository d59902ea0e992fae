package tools

import (
	"context"
	_ "embed"
	"encoding/json"
)

//go:embed delete_file.md
var deleteFileDesc string

// DeleteFileArgs are delete_file's arguments.
type DeleteFileArgs struct {
	Path string `json:"path"`
}

const deleteFileSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File to delete, relative to the workspace root."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

type deleteFileTool struct{ spec }

func newDeleteFile() Tool {
	return &deleteFileTool{spec{name: "delete_file", desc: deleteFileDesc, category: CategoryDelete, risk: RiskHigh, schema: deleteFileSchema}}
}

func (t *deleteFileTool) Describe(raw json.RawMessage) Description {
	a, _ := decodeArgs[DeleteFileArgs](t.name, raw)
	return Description{Title: "Delete " + a.Path}
}

func (t *deleteFileTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (*Result, error) {
	_, rel, err := fileTarget(t.name, env, raw, func(a DeleteFileArgs) string { return a.Path })
	if err != nil {
		return nil, err
	}
	b := env.WS.Propose(ctx)
	if err := b.Delete(rel); err != nil {
		return nil, fileError(t.name, rel, err)
	}
	return proposeResult(b, env), nil
}
