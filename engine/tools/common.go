package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/workspace"
)

// Error codes used by the built-in tools. The engine and front ends may
// decide on them; the message always names the file or argument.
const (
	CodeInvalidArgs    = "INVALID_ARGS"
	CodeNotFound       = "NOT_FOUND"
	CodeExists         = "EXISTS"
	CodeIsDir          = "IS_DIRECTORY"
	CodeBinary         = "BINARY_FILE"
	CodeTooLarge       = "TOO_LARGE"
	CodeNoMatch        = "NO_MATCH"
	CodeAmbiguousMatch = "AMBIGUOUS_MATCH"
	CodePatchFailed    = "PATCH_FAILED"
	CodeExitCode       = "EXIT_CODE"
	CodeTimeout        = "TIMEOUT"
	CodeNoInteraction  = "NO_INTERACTIVE_FRONT_END"
	CodeGit            = "GIT_FAILED"
)

// spec carries what every tool has in common; tools embed it.
type spec struct {
	name     string
	desc     string
	category Category
	risk     Risk
	schema   string
}

func (s spec) Name() string            { return s.name }
func (s spec) Description() string     { return strings.TrimSpace(s.desc) }
func (s spec) Category() Category      { return s.category }
func (s spec) Risk() Risk              { return s.risk }
func (s spec) Schema() json.RawMessage { return json.RawMessage(s.schema) }

// errorf returns a *Error with code and a formatted message.
func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// decodeArgs unmarshals args strictly into T. The engine validates args
// against the schema first; this catches callers that did not.
func decodeArgs[T any](tool string, raw json.RawMessage) (T, error) {
	var v T
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, errorf(CodeInvalidArgs, "%s: invalid arguments: %v; check them against the tool's schema", tool, err)
	}
	return v, nil
}

// checkEnv makes sure the tool has a workspace to work in.
func checkEnv(tool string, env *Env) error {
	if env == nil || env.WS == nil {
		return fmt.Errorf("%s: no workspace is open; open a folder first", tool)
	}
	return nil
}

// resolve resolves a path argument inside the workspace. A path outside
// the root comes back as an error wrapping the *workspace.PathError (and so
// workspace.ErrOutsideRoot).
func resolve(env *Env, tool, arg, p string) (rel, abs string, err error) {
	if strings.TrimSpace(p) == "" {
		return "", "", errorf(CodeInvalidArgs, "%s: argument %q is empty; give a path relative to the workspace root", tool, arg)
	}
	rel, abs, err = env.WS.Resolve(p)
	if err != nil {
		if errors.Is(err, workspace.ErrOutsideRoot) {
			return "", "", fmt.Errorf("%s: argument %q: %w; use a path inside the workspace %s", tool, arg, err, env.WS.Root())
		}
		return "", "", fmt.Errorf("%s: argument %q: %w", tool, arg, err)
	}
	return rel, abs, nil
}

// notFound turns a missing-file error into a NOT_FOUND tool error and
// passes other errors through with the tool and path named.
func fileError(tool, rel string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return errorf(CodeNotFound, "%s: %s does not exist; check the path with list_dir or search_files", tool, rel)
	}
	var te *Error
	if errors.As(err, &te) {
		return err
	}
	return fmt.Errorf("%s: %s: %w", tool, rel, err)
}

// binarySniffLen is how much of a file decides whether it is binary, as git
// and ripgrep decide: a NUL byte in the first 8000 bytes.
const binarySniffLen = 8000

func looksBinary(data []byte) bool {
	if len(data) > binarySniffLen {
		data = data[:binarySniffLen]
	}
	return bytes.IndexByte(data, 0) >= 0
}

// ChangeSummary is the Output of every write tool: what the proposed
// change set does, file by file.
type ChangeSummary struct {
	ChangeSetID string              `json:"changeSetId,omitempty"`
	Files       []ChangeSummaryFile `json:"files"`
	Added       int                 `json:"added"`
	Removed     int                 `json:"removed"`
	// Summary is one line for people: "2 files: modify a.go (+3 -1), ...".
	Summary string `json:"summary"`
}

// ChangeSummaryFile is one file of a ChangeSummary.
type ChangeSummaryFile struct {
	Path    string `json:"path"`
	OldPath string `json:"oldPath,omitempty"`
	Op      string `json:"op"`
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
	Binary  bool   `json:"binary,omitempty"`
}

// summarize describes cs for the tool's Output.
func summarize(cs *workspace.ChangeSet) ChangeSummary {
	s := ChangeSummary{Files: []ChangeSummaryFile{}}
	if cs == nil {
		s.Summary = "no changes"
		return s
	}
	s.ChangeSetID = cs.ID
	parts := make([]string, 0, len(cs.Files))
	for _, fc := range cs.Files {
		f := ChangeSummaryFile{Path: fc.Path, OldPath: fc.OldPath, Op: string(fc.Op), Binary: fc.Binary}
		fd := fc.Diff
		if fd == nil && !fc.Binary {
			fd = diff.Compute(fc.OldPath, fc.Path, fc.Old, fc.New)
		}
		if fd != nil {
			for _, h := range fd.Hunks {
				for _, l := range h.Lines {
					switch l.Kind {
					case diff.Insert:
						f.Added++
					case diff.Delete:
						f.Removed++
					}
				}
			}
		}
		s.Added += f.Added
		s.Removed += f.Removed
		s.Files = append(s.Files, f)
		name := f.Path
		if f.OldPath != "" && f.OldPath != f.Path {
			name = f.OldPath + " -> " + f.Path
		}
		parts = append(parts, fmt.Sprintf("%s %s (+%d -%d)", f.Op, name, f.Added, f.Removed))
	}
	noun := "files"
	if len(s.Files) == 1 {
		noun = "file"
	}
	s.Summary = fmt.Sprintf("%d %s: %s", len(s.Files), noun, strings.Join(parts, ", "))
	return s
}

// proposeResult builds the change set and wraps it in a Result. An empty
// change set is not an error: the Result says so.
func proposeResult(b *workspace.Builder, env *Env) *Result {
	cs := b.Build()
	if cs != nil {
		if cs.RunID == "" {
			cs.RunID = env.RunID
		}
		if cs.StepID == "" {
			cs.StepID = env.StepID
		}
	}
	return &Result{Output: summarize(cs), Changes: cs}
}

// ctxErr returns ctx's error wrapped with the tool name, or nil.
func ctxErr(ctx context.Context, tool string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	return nil
}

// fileTarget decodes a file tool's args, checks its environment and
// resolves the file it works on (path(a)), which must not be a directory.
func fileTarget[A any](tool string, env *Env, raw json.RawMessage, path func(A) string) (A, string, error) {
	a, err := decodeArgs[A](tool, raw)
	if err != nil {
		return a, "", err
	}
	if err := checkEnv(tool, env); err != nil {
		return a, "", err
	}
	rel, _, err := resolve(env, tool, "path", path(a))
	if err != nil {
		return a, "", err
	}
	if err := notDir(env, tool, rel); err != nil {
		return a, "", err
	}
	return a, rel, nil
}
