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
	// CodeSymlink: the path is a symbolic link the tool will not follow
	// (dangling, to a directory, outside the workspace) or act on.
	CodeSymlink = "SYMLINK"
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

// errorf returns a *Error with code and a formatted message (for a person).
func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// hint sets the advice only a model is given (which tool to call).
func (e *Error) hint(format string, args ...any) *Error {
	e.Hint = fmt.Sprintf(format, args...)
	return e
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
		return v, errorf(CodeInvalidArgs, "%s: invalid arguments: %v; fix the step's args (docs/plans.md describes each tool's)", tool, err).
			hint("check them against the tool's schema")
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
		return "", "", pathArgError(env, tool, arg, err)
	}
	return rel, abs, nil
}

// notFound turns a missing-file error into a NOT_FOUND tool error and
// passes other errors through with the tool and path named.
func fileError(tool, rel string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return errorf(CodeNotFound, "%s: %s does not exist in the workspace; check the path", tool, rel).
			hint("check the path with list_dir or search_files")
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
	// Note says what the tool did with a symbolic link it was given.
	Note string `json:"note,omitempty"`
}

// ChangeSummaryFile is one file of a ChangeSummary.
type ChangeSummaryFile struct {
	Path    string `json:"path"`
	OldPath string `json:"oldPath,omitempty"`
	Op      string `json:"op"`
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
	Binary  bool   `json:"binary,omitempty"`
	// Link is the text of the symbolic link the change acts on (deletes,
	// moves or replaces by a file), "" for a change to a file.
	Link string `json:"link,omitempty"`
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
		name := f.Path
		if f.OldPath != "" && f.OldPath != f.Path {
			name = f.OldPath + " -> " + f.Path
		}
		what := fmt.Sprintf("%s %s (+%d -%d)", f.Op, name, f.Added, f.Removed)
		if fc.IsLink() {
			// A link's "content" is its text: say what happens to the link.
			f.Link = string(fc.Old)
			if fc.Op == workspace.OpCreate {
				f.Link = string(fc.New)
			}
			f.Added, f.Removed = 0, 0
			what = fmt.Sprintf("%s symbolic link %s (to %s)", f.Op, name, f.Link)
			if fc.Mode&fs.ModeSymlink == 0 {
				f.Added = strings.Count(string(fc.New), "\n")
				what = fmt.Sprintf("replace symbolic link %s (to %s) by a file (+%d)", name, f.Link, f.Added)
			}
		}
		s.Added += f.Added
		s.Removed += f.Removed
		s.Files = append(s.Files, f)
		parts = append(parts, what)
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
// A symbolic link there is the link itself: write_file replaces it and
// delete_file deletes it, whatever it points at.
func fileTarget[A any](tool string, env *Env, raw json.RawMessage, path func(A) string) (A, string, error) {
	a, err := decodeArgs[A](tool, raw)
	if err != nil {
		return a, "", err
	}
	if err := checkEnv(tool, env); err != nil {
		return a, "", err
	}
	rel, _, err := entryTarget(env, tool, "path", path(a))
	return a, rel, err
}

// contentTarget is fileTarget for a tool that edits a file's content
// (edit_file, json_patch, apply_patch): a symbolic link leads to the file
// it points to, which must be a regular file inside the workspace; the
// change then names that file, and via is the link.
func contentTarget[A any](tool string, env *Env, raw json.RawMessage, path func(A) string) (a A, rel, via string, err error) {
	a, err = decodeArgs[A](tool, raw)
	if err != nil {
		return a, "", "", err
	}
	if err := checkEnv(tool, env); err != nil {
		return a, "", "", err
	}
	rel, via, err = followLink(env, tool, "path", path(a))
	return a, rel, via, err
}

// entryTarget resolves p as the entry it names: a symbolic link is returned
// as itself (li set, rel its path), even one that points outside the
// workspace or nowhere, since acting on the link never touches its target.
// Anything else must resolve inside and not be a directory.
func entryTarget(env *Env, tool, arg, p string) (rel string, li *workspace.LinkInfo, err error) {
	if strings.TrimSpace(p) == "" {
		return "", nil, errorf(CodeInvalidArgs, "%s: argument %q is empty; give a path relative to the workspace root", tool, arg)
	}
	li, err = env.WS.Link(p)
	if err != nil {
		return "", nil, pathArgError(env, tool, arg, err)
	}
	if li != nil {
		return li.Path, li, nil
	}
	rel, _, err = resolve(env, tool, arg, p)
	if err != nil {
		return "", nil, err
	}
	if err := notDir(env, tool, rel); err != nil {
		return "", nil, err
	}
	return rel, nil, nil
}

// followLink resolves p for an edit of its content. A symbolic link is
// followed when it leads to a regular file inside the workspace (rel is
// that file, via the link); a dangling link, a link to a directory or one
// leading outside is refused, naming the link and its target.
func followLink(env *Env, tool, arg, p string) (rel, via string, err error) {
	rel, li, err := entryTarget(env, tool, arg, p)
	if err != nil || li == nil {
		return rel, "", err
	}
	switch {
	case li.Outside:
		return "", "", errorf(CodeSymlink, "%s: %s is a symbolic link to %s, which is outside the workspace (or a loop); agentd edits only files inside the workspace: edit the file it points to yourself, or replace the link by a file",
			tool, li.Path, li.Target).hint("use write_file on %s to replace the link itself by a file", li.Path)
	case li.Missing:
		return "", "", errorf(CodeSymlink, "%s: %s is a symbolic link to %s, which does not exist; create %s first, or replace the link by a file",
			tool, li.Path, li.Target, li.Resolved).hint("create %s with write_file, or use write_file on %s to replace the link itself by a file", li.Resolved, li.Path)
	case li.Mode.IsDir():
		return "", "", errorf(CodeIsDir, "%s: %s is a symbolic link to the directory %s; give a file path", tool, li.Path, li.Resolved)
	case !li.Mode.IsRegular():
		return "", "", errorf(CodeSymlink, "%s: %s is a symbolic link to %s, which is not a regular file (%s)", tool, li.Path, li.Resolved, li.Mode.Type())
	}
	return li.Resolved, li.Path, nil
}

// pathArgError words a path resolution error for the tool's caller.
func pathArgError(env *Env, tool, arg string, err error) error {
	if errors.Is(err, workspace.ErrOutsideRoot) {
		return fmt.Errorf("%s: argument %q: %w; use a path inside the workspace %s", tool, arg, err, env.WS.Root())
	}
	return fmt.Errorf("%s: argument %q: %w", tool, arg, err)
}

// viaLink adds to a result's summary that the tool was given a link and
// changed the file it points to.
func viaLink(res *Result, via, rel string) *Result {
	if via == "" {
		return res
	}
	if s, ok := res.Output.(ChangeSummary); ok {
		s.Note = fmt.Sprintf("%s is a symbolic link to %s; the change is to %s", via, rel, rel)
		res.Output = s
	}
	return res
}
