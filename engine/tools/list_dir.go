package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
)

//go:embed list_dir.md
var listDirDesc string

// Tunables for list_dir.
var (
	// MaxListEntries bounds list_dir's output.
	MaxListEntries = 2000
	// MaxListDepth bounds the depth argument.
	MaxListDepth = 10
)

// ListDirArgs are list_dir's arguments.
type ListDirArgs struct {
	Path  string `json:"path"`
	Depth int    `json:"depth,omitempty"`
}

// DirEntry is one entry of list_dir's output.
type DirEntry struct {
	Path string `json:"path"` // relative to the workspace root
	Type string `json:"type"` // "file", "dir" or "symlink"
	Size int64  `json:"size,omitempty"`
}

// ListDirOutput is list_dir's output, entries sorted by path.
type ListDirOutput struct {
	Path      string     `json:"path"`
	Entries   []DirEntry `json:"entries"`
	Truncated bool       `json:"truncated"`
}

const listDirSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory relative to the workspace root; \".\" is the root."},
    "depth": {"type": "integer", "minimum": 1, "maximum": 10, "description": "How many levels to list (default 1: only the directory's own entries)."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

type listDirTool struct{ spec }

func newListDir() Tool {
	return &listDirTool{spec{name: "list_dir", desc: listDirDesc, category: CategoryRead, risk: RiskLow, schema: listDirSchema}}
}

func (t *listDirTool) Describe(raw json.RawMessage) Description {
	a, _ := decodeArgs[ListDirArgs](t.name, raw)
	return Description{Title: "List " + a.Path, Detail: fmt.Sprintf("depth %d", max(a.Depth, 1))}
}

func (t *listDirTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (*Result, error) {
	a, err := decodeArgs[ListDirArgs](t.name, raw)
	if err != nil {
		return nil, err
	}
	if err := checkEnv(t.name, env); err != nil {
		return nil, err
	}
	if a.Path == "" {
		a.Path = "."
	}
	depth := a.Depth
	if depth <= 0 {
		depth = 1
	}
	if depth > MaxListDepth {
		return nil, errorf(CodeInvalidArgs, "list_dir: depth %d is more than %d; list a sub-directory instead", depth, MaxListDepth)
	}
	rel, abs, err := resolve(env, t.name, "path", a.Path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fileError(t.name, rel, err)
	}
	if !fi.IsDir() {
		return nil, errorf(CodeInvalidArgs, "list_dir: %s is a file, not a directory", rel).hint("use read_file to read it")
	}
	out := ListDirOutput{Path: rel, Entries: []DirEntry{}}
	set := env.WS.Files()
	var walk func(dirRel, dirAbs string, level int) error
	walk = func(dirRel, dirAbs string, level int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ents, err := os.ReadDir(dirAbs)
		if err != nil {
			return fmt.Errorf("list_dir: %s: %w", dirRel, err)
		}
		for _, de := range ents {
			name := de.Name()
			if name == ".git" {
				continue
			}
			r := name
			if dirRel != "." {
				r = path.Join(dirRel, name)
			}
			isDir := de.IsDir()
			if set != nil && set.Ignored(r, isDir) {
				continue
			}
			if len(out.Entries) >= MaxListEntries {
				out.Truncated = true
				return nil
			}
			e := DirEntry{Path: r}
			switch {
			case de.Type()&fs.ModeSymlink != 0:
				e.Type = "symlink"
			case isDir:
				e.Type = "dir"
			default:
				e.Type = "file"
				if info, err := de.Info(); err == nil {
					e.Size = info.Size()
				}
			}
			out.Entries = append(out.Entries, e)
			if isDir && level < depth {
				if err := walk(r, filepath.Join(dirAbs, name), level+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(rel, abs, 1); err != nil {
		return nil, err
	}
	sort.Slice(out.Entries, func(i, j int) bool { return out.Entries[i].Path < out.Entries[j].Path })
	return &Result{Output: out}, nil
}
