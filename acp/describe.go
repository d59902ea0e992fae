package acp

import (
	"fmt"
	"path/filepath"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/engine/approval"
	agentsession "github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// describeApproval says what an approval will let run, in the words a
// client shows: a command's line and folder in the title and the content,
// an edit's diff, a delete's path. ACP clients show the request's title
// (CodeCompanion: "Execute: <title>"), so the title alone must name what
// "Always allow" would remember.
func (s *session) describeApproval(req approval.ApprovalRequest) (title string, content []sdk.ToolCallContent, locs []sdk.ToolCallLocation) {
	root := s.ws.Root()
	if req.Command != "" {
		dir := root
		if req.Cwd != "" {
			if filepath.IsAbs(req.Cwd) {
				dir = req.Cwd
			} else {
				dir = filepath.Join(root, filepath.FromSlash(req.Cwd))
			}
		}
		title = fmt.Sprintf("Run `%s` in %s", oneLine(req.Command), dir)
		text := fmt.Sprintf("```sh\n%s\n```\nin `%s`", req.Command, dir)
		if req.Detail != "" && req.Detail != req.Command {
			text += "\n\n" + req.Detail
		}
		content = append(content, sdk.ToolContent(sdk.TextBlock(text)))
		locs = append(locs, sdk.ToolCallLocation{Path: dir})
		return title, content, locs
	}
	if cs := s.changeOf(req.ChangeID); cs != nil {
		diffs, paths := changeContent(root, cs)
		content, locs = append(content, diffs...), append(locs, paths...)
	}
	paths := s.stepPaths(req.RunID, req.StepID)
	if len(locs) == 0 {
		for _, p := range paths {
			locs = append(locs, sdk.ToolCallLocation{Path: p})
		}
	}
	switch {
	case req.Category == agentsession.CategoryDelete && len(paths) > 0:
		title = "Delete " + strings.Join(paths, ", ")
	case req.Category == agentsession.CategoryWrite && len(paths) > 0:
		title = "Write " + strings.Join(paths, ", ")
	case req.Title != "":
		title = req.Title
	default:
		title = fmt.Sprintf("Step %s wants to use %s", req.StepID, req.Tool)
	}
	if req.Detail != "" {
		content = append(content, sdk.ToolContent(sdk.TextBlock(req.Detail)))
	}
	if req.Category == agentsession.CategoryDelete && len(paths) > 0 {
		content = append(content, sdk.ToolContent(sdk.TextBlock("deletes "+strings.Join(paths, ", "))))
	}
	return title, content, locs
}

// changeOf is a change set of the running turn's run.
func (s *session) changeOf(id string) *workspace.ChangeSet {
	if id == "" {
		return nil
	}
	s.mu.Lock()
	w := s.watch
	s.mu.Unlock()
	if w == nil {
		return nil
	}
	w.mu.Lock()
	run := w.run
	w.mu.Unlock()
	if run == nil {
		return nil
	}
	cs, _ := run.Change(id)
	return cs
}

// stepPaths are the absolute paths a step of the running turn names.
func (s *session) stepPaths(runID, stepID string) []string {
	s.mu.Lock()
	w := s.watch
	s.mu.Unlock()
	if w == nil {
		return nil
	}
	st := w.step(stepID)
	if st == nil {
		return nil
	}
	var out []string
	for _, l := range w.locations(st) {
		out = append(out, l.Path)
	}
	return out
}

// changeContent shows a change set as diff content (path, oldText,
// newText), with each file's location.
func changeContent(root string, cs *workspace.ChangeSet) ([]sdk.ToolCallContent, []sdk.ToolCallLocation) {
	var diffs []sdk.ToolCallContent
	var locs []sdk.ToolCallLocation
	for _, f := range cs.Files {
		abs := filepath.Join(root, filepath.FromSlash(f.Path))
		locs = append(locs, fileLocation(abs, f))
		if f.Binary {
			diffs = append(diffs, sdk.ToolContent(sdk.TextBlock(fmt.Sprintf("%s %s (binary)", f.Op, f.Path))))
			continue
		}
		switch f.Op {
		case workspace.OpCreate:
			diffs = append(diffs, sdk.ToolDiffContent(abs, string(f.New)))
		case workspace.OpDelete:
			diffs = append(diffs, sdk.ToolDiffContent(abs, "", string(f.Old)))
		default:
			diffs = append(diffs, sdk.ToolDiffContent(abs, string(f.New), string(f.Old)))
		}
	}
	return diffs, locs
}

// fileLocation is a changed file and the first line that changed (1-based),
// so a client following along opens it there.
func fileLocation(abs string, f *workspace.FileChange) sdk.ToolCallLocation {
	loc := sdk.ToolCallLocation{Path: abs}
	if f.Binary || f.Op == workspace.OpDelete {
		return loc
	}
	if line := firstChangedLine(f.Old, f.New); line > 0 {
		loc.Line = &line
	}
	return loc
}

// firstChangedLine is the 1-based line of new where it first differs from
// old (0 when they are equal).
func firstChangedLine(old, new []byte) int {
	a, b := strings.Split(string(old), "\n"), strings.Split(string(new), "\n")
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i + 1
		}
	}
	if len(a) == len(b) {
		return 0
	}
	n := min(len(a), len(b))
	if n == 0 {
		return 1
	}
	return n
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// changeSummary names what a change set does to which files ("delete
// old.txt, modify a.txt"), at most three, for a title.
func changeSummary(cs *workspace.ChangeSet) string {
	var parts []string
	for i, f := range cs.Files {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(cs.Files)-3))
			break
		}
		if f.Op == workspace.OpMove && f.OldPath != "" {
			parts = append(parts, fmt.Sprintf("move %s to %s", f.OldPath, f.Path))
			continue
		}
		parts = append(parts, string(f.Op)+" "+f.Path)
	}
	return strings.Join(parts, ", ")
}
