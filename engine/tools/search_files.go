package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"sync"

	"github.com/agentd/agentd/internal/fileset"
)

//go:embed search_files.md
var searchFilesDesc string

// MaxSearchFiles bounds search_files' output.
var MaxSearchFiles = 5000

// SearchFilesArgs are search_files' arguments.
type SearchFilesArgs struct {
	Glob string `json:"glob"`
}

// SearchFilesOutput is search_files' output, files sorted.
type SearchFilesOutput struct {
	Files     []string `json:"files"`
	Truncated bool     `json:"truncated"`
}

const searchFilesSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "glob": {"type": "string", "minLength": 1, "description": "Glob matched against workspace-relative paths, e.g. \"**/*_test.go\" or \"*.md\"."}
  },
  "required": ["glob"],
  "additionalProperties": false
}`

type searchFilesTool struct{ spec }

func newSearchFiles() Tool {
	return &searchFilesTool{spec{name: "search_files", desc: searchFilesDesc, category: CategoryRead, risk: RiskLow, schema: searchFilesSchema}}
}

func (t *searchFilesTool) Describe(raw json.RawMessage) Description {
	a, _ := decodeArgs[SearchFilesArgs](t.name, raw)
	return Description{Title: "Find files matching " + a.Glob}
}

func (t *searchFilesTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (*Result, error) {
	a, err := decodeArgs[SearchFilesArgs](t.name, raw)
	if err != nil {
		return nil, err
	}
	if err := checkEnv(t.name, env); err != nil {
		return nil, err
	}
	m, err := newGlobMatcher(t.name, a.Glob)
	if err != nil {
		return nil, err
	}
	opts, ok, err := walkDir(env, t.name, "glob", m.dir)
	if err != nil {
		return nil, err
	}
	out := SearchFilesOutput{Files: []string{}}
	if !ok {
		return &Result{Output: out}, nil
	}
	var mu sync.Mutex
	err = env.WS.Files().Walk(ctx, opts, func(e fileset.Entry) error {
		if !m.match(e.Path) {
			return nil
		}
		mu.Lock()
		out.Files = append(out.Files, e.Path)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("search_files: walking the workspace: %w", err)
	}
	sort.Strings(out.Files)
	if len(out.Files) > MaxSearchFiles {
		out.Files = out.Files[:MaxSearchFiles]
		out.Truncated = true
	}
	return &Result{Output: out}, nil
}

// walkDir turns a glob's static directory into walk options, resolving it
// inside the workspace. ok is false when that directory does not exist (the
// search then finds nothing).
func walkDir(env *Env, tool, arg, dir string) (fileset.Options, bool, error) {
	if dir == "" {
		return fileset.Options{}, true, nil
	}
	rel, _, err := resolve(env, tool, arg, dir)
	if err != nil {
		return fileset.Options{}, false, err
	}
	if rel == "." {
		return fileset.Options{}, true, nil
	}
	fi, err := env.WS.Stat(rel)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()) {
		return fileset.Options{}, false, nil
	}
	return fileset.Options{Dir: rel}, true, nil
}
