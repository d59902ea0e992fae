package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/journal"
	"github.com/agentd/agentd/workspace"
)

// What a run did to the user's own git repository, which snapshots do not
// cover and undo cannot take back: commits it made, files it left in the
// index. Read before and after the run through the user-repository git
// tool (status and log, read-only), recorded in the journal beside the
// run's record, and named by agentd undo with what to run instead.

// userGitState is the user's repository at one moment.
type userGitState struct {
	ok     bool
	head   string
	staged map[string]string // path -> index status letter
}

// userGitSide is what a run left in the user's repository.
type userGitSide struct {
	RunID      string              `json:"runId"`
	HeadBefore string              `json:"headBefore,omitempty"`
	HeadAfter  string              `json:"headAfter,omitempty"`
	Commits    []tools.GitLogEntry `json:"commits,omitempty"`
	Staged     []string            `json:"staged,omitempty"`
}

// userGitName is the side record's name in the journal.
func userGitName(runID string) string { return "usergit/" + journal.RecordName(runID) + ".json" }

func gitTool(ctx context.Context, ws *workspace.Workspace, args string, out any) bool {
	t, ok := tools.Builtin().Get("git")
	if !ok {
		return false
	}
	res, err := t.Run(ctx, &tools.Env{WS: ws}, json.RawMessage(args))
	if err != nil || res == nil {
		return false
	}
	data, err := json.Marshal(res.Output)
	return err == nil && json.Unmarshal(data, out) == nil
}

// readUserGit reads HEAD and the index's changes (not ok outside a
// repository).
func readUserGit(ctx context.Context, ws *workspace.Workspace) userGitState {
	var st tools.GitStatusOutput
	if !gitTool(ctx, ws, `{"action":"status"}`, &st) {
		return userGitState{}
	}
	s := userGitState{ok: true, staged: map[string]string{}}
	for _, f := range st.Files {
		if f.Index != "" && f.Index != " " && f.Index != "?" && f.Index != "!" {
			s.staged[f.Path] = f.Index
		}
	}
	var lg tools.GitLogOutput
	if gitTool(ctx, ws, `{"action":"log","maxCount":1}`, &lg) && len(lg.Commits) > 0 {
		s.head = lg.Commits[0].Hash
	}
	return s
}

// userGitChanges is what changed between before and after: the commits
// made since before's HEAD (newest first) and the paths newly staged.
func userGitChanges(ctx context.Context, ws *workspace.Workspace, runID string, before, after userGitState) *userGitSide {
	if !before.ok || !after.ok {
		return nil
	}
	side := &userGitSide{RunID: runID, HeadBefore: before.head, HeadAfter: after.head}
	if after.head != before.head {
		var lg tools.GitLogOutput
		if gitTool(ctx, ws, `{"action":"log","maxCount":50}`, &lg) {
			for _, c := range lg.Commits {
				if c.Hash == before.head {
					break
				}
				side.Commits = append(side.Commits, c)
			}
		}
	}
	for p, x := range after.staged {
		if before.staged[p] != x {
			side.Staged = append(side.Staged, p)
		}
	}
	sort.Strings(side.Staged)
	if len(side.Commits) == 0 && len(side.Staged) == 0 {
		return nil
	}
	return side
}

// printUserGitSide says what undo does not take back in the user's
// repository, and what to run for it.
func printUserGitSide(w io.Writer, side *userGitSide) {
	if side == nil {
		return
	}
	if n := len(side.Commits); n > 0 {
		fmt.Fprintf(w, "not undone: the run made %d commit%s in your repository (undo never changes your git history):\n", n, plural(n))
		for _, c := range side.Commits {
			fmt.Fprintf(w, "  %s %s\n", short12(c.Hash), c.Subject)
		}
		if side.HeadBefore != "" {
			fmt.Fprintf(w, "  to take them back too: git revert --no-edit %s..%s\n", short12(side.HeadBefore), short12(side.Commits[0].Hash))
		} else {
			fmt.Fprintf(w, "  to take them back too: git revert --no-edit %s\n", short12(side.Commits[0].Hash))
		}
	}
	if len(side.Staged) > 0 {
		fmt.Fprintf(w, "not undone: the run left %s in your index (staged); to unstage: git restore --staged -- %s\n",
			strings.Join(side.Staged, ", "), strings.Join(quoteShell(side.Staged), " "))
	}
}

// printLeftOut names the files the run's snapshots left out (too large):
// undo cannot put them back or remove them.
func printLeftOut(w io.Writer, st *engine.RunState) {
	if st == nil || len(st.SkippedFiles) == 0 {
		return
	}
	if n := len(st.SkippedFiles); n == 1 {
		fmt.Fprintln(w, "not undone: 1 file left out of the run's snapshots stays as it is:")
	} else {
		fmt.Fprintf(w, "not undone: %d files left out of the run's snapshots stay as they are:\n", n)
	}
	for _, f := range st.SkippedFiles {
		fmt.Fprintf(w, "  %s (%s)\n", f.Path, f.Reason)
	}
	fmt.Fprintln(w, "  (delete them by hand if the run made them; raise the limit with --max-file-size to keep such files in snapshots)")
}

func quoteShell(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = shq(p)
	}
	return out
}

// printUndoLeftovers is what agentd undo adds after restoring a run: what
// it could not take back (commits, staged files, files too large for the
// snapshots), each with what to do.
func printUndoLeftovers(w io.Writer, j *engine.Journal, st *engine.RunState) {
	var side userGitSide
	if ok, _ := j.Load(userGitName(st.RunID), &side); ok {
		printUserGitSide(w, &side)
	}
	printLeftOut(w, st)
}

// mayHaveChanged reports whether the run may have changed the workspace:
// files changed, or a step that writes or runs commands started. A run of
// read-only steps (failed or not) has nothing to undo.
func mayHaveChanged(st *engine.RunState) bool {
	if len(st.FilesChanged) > 0 {
		return true
	}
	plan := st.FinalPlan
	if plan == nil {
		plan = st.OriginalPlan
	}
	if plan == nil {
		return true
	}
	started := map[string]bool{}
	for _, s := range st.Steps {
		started[s.ID] = s.Attempts > 0
	}
	reg := tools.Builtin()
	for _, s := range plan.Steps {
		if !started[s.ID] {
			continue
		}
		if s.EffectiveKind() != engine.KindTool {
			if s.EffectiveKind() == engine.KindAgent {
				return true
			}
			continue
		}
		if t, ok := reg.Get(s.Tool); !ok || t.Category() != tools.CategoryRead {
			return true
		}
	}
	return false
}
