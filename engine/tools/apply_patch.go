package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/agentd/agentd/diff"
)

//go:embed apply_patch.md
var applyPatchDesc string

// ApplyPatchArgs are apply_patch's arguments.
type ApplyPatchArgs struct {
	Patch string `json:"patch"`
}

const applyPatchSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "patch": {"type": "string", "minLength": 1, "description": "A unified diff (git diff or diff -u format) touching one or more files."}
  },
  "required": ["patch"],
  "additionalProperties": false
}`

type applyPatchTool struct{ spec }

func newApplyPatch() Tool {
	return &applyPatchTool{spec{name: "apply_patch", desc: applyPatchDesc, category: CategoryWrite, risk: RiskMedium, schema: applyPatchSchema}}
}

func (t *applyPatchTool) Describe(raw json.RawMessage) Description {
	a, _ := decodeArgs[ApplyPatchArgs](t.name, raw)
	d := Description{Title: "Apply a patch"}
	if fds, err := diff.Parse(a.Patch); err == nil {
		names := make([]string, 0, len(fds))
		for _, fd := range fds {
			names = append(names, patchName(fd))
		}
		d.Detail = strings.Join(names, ", ")
	}
	return d
}

func patchName(fd *diff.FileDiff) string {
	switch {
	case fd.OldPath == "":
		return fd.NewPath + " (new)"
	case fd.NewPath == "":
		return fd.OldPath + " (deleted)"
	case fd.OldPath != fd.NewPath:
		return fd.OldPath + " -> " + fd.NewPath
	}
	return fd.NewPath
}

func (t *applyPatchTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (*Result, error) {
	a, err := decodeArgs[ApplyPatchArgs](t.name, raw)
	if err != nil {
		return nil, err
	}
	if err := checkEnv(t.name, env); err != nil {
		return nil, err
	}
	fds, err := diff.Parse(a.Patch)
	if err != nil {
		return nil, errorf(CodeInvalidArgs, "apply_patch: the patch is not a valid unified diff: %v; give a diff with ---/+++ headers and @@ hunks", err)
	}
	if len(fds) == 0 {
		return nil, errorf(CodeInvalidArgs, "apply_patch: the patch names no files; give a diff with ---/+++ headers and @@ hunks")
	}
	b := env.WS.Propose(ctx)
	var vias []string
	for _, fd := range fds {
		if err := ctxErr(ctx, t.name); err != nil {
			return nil, err
		}
		if fd.Binary {
			return nil, errorf(CodeInvalidArgs, "apply_patch: %s: binary patches are not supported; apply them with git apply", patchName(fd)).
				hint("use write_file or the git tool's apply action")
		}
		// A symbolic link named by the patch: a modification edits the
		// file it points to inside the workspace (as edit_file does);
		// deleting or renaming a link is left to delete_file and move_file,
		// whose change says it is the link.
		var oldRel, newRel, via string
		if fd.OldPath != "" {
			li, err := env.WS.Link(fd.OldPath)
			if err != nil {
				return nil, pathArgError(env, t.name, "patch", err)
			}
			if li != nil && (fd.NewPath == "" || fd.NewPath != fd.OldPath) {
				return nil, errorf(CodeSymlink, "apply_patch: %s is a symbolic link (to %s); patch the file it points to, or remove the link first",
					li.Path, li.Target).hint("delete or move the link with delete_file or move_file, or patch the file it points to")
			}
			if oldRel, via, err = followLink(env, t.name, "patch", fd.OldPath); err != nil {
				return nil, err
			}
		}
		if fd.NewPath != "" {
			if fd.NewPath == fd.OldPath {
				newRel = oldRel
			} else {
				if li, err := env.WS.Link(fd.NewPath); err != nil {
					return nil, pathArgError(env, t.name, "patch", err)
				} else if li != nil {
					return nil, errorf(CodeExists, "apply_patch: the patch creates %s, which already exists as a symbolic link to %s", li.Path, li.Target)
				}
				if newRel, _, err = resolve(env, t.name, "patch", fd.NewPath); err != nil {
					return nil, err
				}
			}
		}
		if via != "" {
			vias = append(vias, via+" -> "+oldRel)
		}
		switch {
		case oldRel == "" && newRel == "":
			return nil, errorf(CodeInvalidArgs, "apply_patch: a file of the patch has neither an old nor a new path")
		case oldRel == "": // create
			if _, err := b.Read(newRel); err == nil {
				return nil, errorf(CodeExists, "apply_patch: the patch creates %s, which already exists; use a patch that modifies it", newRel)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, fileError(t.name, newRel, err)
			}
			content, err := diff.Apply(nil, fd.Hunks)
			if err != nil {
				return nil, hunkError(newRel, err)
			}
			if err := b.Write(newRel, content); err != nil {
				return nil, fileError(t.name, newRel, err)
			}
		case newRel == "": // delete
			old, err := b.Read(oldRel)
			if err != nil {
				return nil, fileError(t.name, oldRel, err)
			}
			if len(fd.Hunks) > 0 {
				rest, err := diff.Apply(old, fd.Hunks)
				if err != nil {
					return nil, hunkError(oldRel, err)
				}
				if len(rest) != 0 {
					return nil, errorf(CodePatchFailed, "apply_patch: the patch deletes %s but its content differs from the file's: the file changed since the patch was made", oldRel).
						hint("read the file and make the patch again")
				}
			}
			if err := b.Delete(oldRel); err != nil {
				return nil, fileError(t.name, oldRel, err)
			}
		default: // modify, possibly with a move
			old, err := b.Read(oldRel)
			if err != nil {
				return nil, fileError(t.name, oldRel, err)
			}
			content := old
			if len(fd.Hunks) > 0 {
				if content, err = diff.Apply(old, fd.Hunks); err != nil {
					return nil, hunkError(oldRel, err)
				}
			}
			if oldRel != newRel {
				if _, err := b.Read(newRel); err == nil {
					return nil, errorf(CodeExists, "apply_patch: the patch moves %s to %s, which already exists", oldRel, newRel)
				}
				if err := b.Move(oldRel, newRel); err != nil {
					return nil, fileError(t.name, oldRel, err)
				}
			}
			if err := b.Write(newRel, content); err != nil {
				return nil, fileError(t.name, newRel, err)
			}
		}
	}
	res := proposeResult(b, env)
	if len(vias) > 0 {
		if sum, ok := res.Output.(ChangeSummary); ok {
			sum.Note = "symbolic links followed to the files they point to: " + strings.Join(vias, ", ")
			res.Output = sum
		}
	}
	return res, nil
}

func hunkError(rel string, err error) error {
	return &Error{Code: CodePatchFailed, Message: fmt.Sprintf(
		"apply_patch: %s: %v; the file changed since the patch was made: make it against the file's current content", rel, err),
		Hint: "read the file again and make the patch against its current content"}
}
