package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"io/fs"
	"path"
	"strings"

	"github.com/agentd/agentd/workspace"
)

//go:embed move_file.md
var moveFileDesc string

// MoveFileArgs are move_file's arguments.
type MoveFileArgs struct {
	From string `json:"from"`
	To   string `json:"to"`
}

const moveFileSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "from": {"type": "string", "minLength": 1, "description": "Existing file, relative to the workspace root."},
    "to": {"type": "string", "minLength": 1, "description": "New path, relative to the workspace root; must not exist yet."}
  },
  "required": ["from", "to"],
  "additionalProperties": false
}`

type moveFileTool struct{ spec }

func newMoveFile() Tool {
	return &moveFileTool{spec{name: "move_file", desc: moveFileDesc, category: CategoryWrite, risk: RiskMedium, schema: moveFileSchema}}
}

func (t *moveFileTool) Describe(raw json.RawMessage) Description {
	a, _ := decodeArgs[MoveFileArgs](t.name, raw)
	return Description{Title: "Move " + a.From + " to " + a.To}
}

func (t *moveFileTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (*Result, error) {
	a, err := decodeArgs[MoveFileArgs](t.name, raw)
	if err != nil {
		return nil, err
	}
	if err := checkEnv(t.name, env); err != nil {
		return nil, err
	}
	from, li, err := entryTarget(env, t.name, "from", a.From)
	if err != nil {
		return nil, err
	}
	if lt, err := env.WS.Link(a.To); err != nil {
		return nil, pathArgError(env, t.name, "to", err)
	} else if lt != nil {
		return nil, errorf(CodeExists, "move_file: %s already exists (a symbolic link to %s); delete it first or choose another path", lt.Path, lt.Target)
	}
	to, _, err := resolve(env, t.name, "to", a.To)
	if err != nil {
		return nil, err
	}
	if from == to {
		return nil, errorf(CodeInvalidArgs, "move_file: from and to are the same path %s", from)
	}
	if li != nil {
		if err := linkStaysInside(li, to); err != nil {
			return nil, err
		}
	}
	b := env.WS.Propose(ctx)
	if li == nil {
		// A link is moved as a link, even a dangling one; a file must exist.
		if _, err := b.Read(from); err != nil {
			return nil, fileError(t.name, from, err)
		}
	}
	if _, err := b.Read(to); err == nil {
		// On a case-insensitive file system A.txt "exists" when a.txt
		// does: moving a.txt there renames its case.
		if !env.WS.SameEntry(from, to) {
			return nil, errorf(CodeExists, "move_file: %s already exists; delete it first or choose another path", to)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		if fi, serr := env.WS.Stat(to); serr == nil && fi.IsDir() {
			return nil, errorf(CodeIsDir, "move_file: %s is a directory; give the file's full new path (for example %s/name)", to, to)
		}
		return nil, fileError(t.name, to, err)
	}
	if err := b.Move(from, to); err != nil {
		return nil, fileError(t.name, from, err)
	}
	return proposeResult(b, env), nil
}

// linkStaysInside refuses to move a link whose relative text, read from
// its new directory, would lead outside the workspace when it led inside
// before (the link's text is kept as it is, as mv keeps it). The check is
// lexical: links on the way are not followed.
func linkStaysInside(li *workspace.LinkInfo, to string) error {
	if li.Outside || path.IsAbs(li.Target) {
		return nil
	}
	dest := path.Join(path.Dir(to), li.Target)
	if dest == ".." || strings.HasPrefix(dest, "../") {
		return errorf(CodeSymlink, "move_file: %s is a symbolic link to %s; moved to %s it would point outside the workspace (%s); move the file it points to instead, or recreate the link with a path that stays inside",
			li.Path, li.Target, to, dest)
	}
	return nil
}
