package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed write_file.md
var writeFileDesc string

// WriteFileArgs are write_file's arguments.
type WriteFileArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

const writeFileSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File path relative to the workspace root."},
    "content": {"type": "string", "description": "The file's complete new content."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`

type writeFileTool struct{ spec }

func newWriteFile() Tool {
	return &writeFileTool{spec{name: "write_file", desc: writeFileDesc, category: CategoryWrite, risk: RiskMedium, schema: writeFileSchema}}
}

func (t *writeFileTool) Describe(raw json.RawMessage) Description {
	a, _ := decodeArgs[WriteFileArgs](t.name, raw)
	return Description{Title: "Write " + a.Path, Detail: fmt.Sprintf("%d lines", strings.Count(a.Content, "\n")+1)}
}

func (t *writeFileTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (*Result, error) {
	a, rel, err := fileTarget(t.name, env, raw, func(a WriteFileArgs) string { return a.Path })
	if err != nil {
		return nil, err
	}
	b := env.WS.Propose(ctx)
	if err := b.Write(rel, []byte(a.Content)); err != nil {
		return nil, fileError(t.name, rel, err)
	}
	return proposeResult(b, env), nil
}

// notDir refuses a path that names a directory (or the root).
func notDir(env *Env, tool, rel string) error {
	if rel == "." {
		return errorf(CodeIsDir, "%s: the path is the workspace root, a directory; give a file path", tool)
	}
	if fi, err := env.WS.Stat(rel); err == nil && fi.IsDir() {
		return errorf(CodeIsDir, "%s: %s is a directory; give a file path", tool, rel)
	}
	return nil
}
