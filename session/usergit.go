package session

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentd/agentd/engine"
	"github.com/agentd/agentd/engine/tools"
	"github.com/agentd/agentd/gitops"
	"github.com/agentd/agentd/internal/shellcmd"
	"github.com/agentd/agentd/journal"
)

// What a run did that its snapshots do not cover and undo cannot take
// back: commits it made in the user's own git repository, files it left
// staged in the user's index, and files left out of its snapshots (too
// large, FIFOs...). The user's repository is read (never written) at the
// run's start snapshot and when the run has ended, whichever front end
// started it; what changed is recorded in the journal beside the run, so
// an undo from any front end, after a restart too, names it (Leftovers).

// userGitState is the user's repository at one moment.
type userGitState struct {
	ok     bool
	head   string
	staged map[string]string // path -> index status letter
}

// userGitRun is a run in progress: the repository at its start, and done
// closed once what it left is recorded.
type userGitRun struct {
	before userGitState
	done   chan struct{}
}

// userGitSide is the journal's record of what a run left in the user's
// repository.
type userGitSide struct {
	RunID      string              `json:"runId"`
	HeadBefore string              `json:"headBefore,omitempty"`
	HeadAfter  string              `json:"headAfter,omitempty"`
	Commits    []tools.GitLogEntry `json:"commits,omitempty"`
	Staged     []string            `json:"staged,omitempty"`
}

// userGitName is the side record's name in the journal.
func userGitName(runID string) string { return "usergit/" + journal.RecordName(runID) + ".json" }

// gitRead runs the read-only git tool (status, log) on the user's
// repository at the workspace.
func (s *Session) gitRead(ctx context.Context, args tools.GitArgs, out any) bool {
	t, ok := tools.Builtin().Get("git")
	if !ok {
		return false
	}
	a, err := json.Marshal(args)
	if err != nil {
		return false
	}
	res, err := t.Run(ctx, &tools.Env{WS: s.WS}, a)
	if err != nil || res == nil {
		return false
	}
	data, err := json.Marshal(res.Output)
	return err == nil && json.Unmarshal(data, out) == nil
}

// readUserGit reads HEAD and the index's changes (not ok outside a
// repository).
func (s *Session) readUserGit(ctx context.Context) userGitState {
	var st tools.GitStatusOutput
	if !s.gitRead(ctx, tools.GitArgs{Action: "status"}, &st) {
		return userGitState{}
	}
	g := userGitState{ok: true, staged: map[string]string{}}
	for _, f := range st.Files {
		if f.Index != "" && f.Index != " " && f.Index != "?" && f.Index != "!" {
			g.staged[f.Path] = f.Index
		}
	}
	// HEAD of the whole repository: the tool's log shows the workspace's
	// history, which skips an empty commit or one outside the workspace.
	g.head = st.Head
	return g
}

// userGitBefore reads the user's repository at the start of run runID.
func (s *Session) userGitBefore(ctx context.Context, runID string) {
	g := s.readUserGit(ctx)
	if !g.ok {
		return // not a git repository: nothing to count
	}
	s.userGitMu.Lock()
	defer s.userGitMu.Unlock()
	s.userGit[runID] = &userGitRun{before: g, done: make(chan struct{})}
}

// userGitRecorder records, when a run has ended, what it left in the
// user's repository (an engine subscriber: Wait returns after it).
type userGitRecorder struct{ s *Session }

func (r userGitRecorder) OnEvent(ev engine.Event) {
	if ev.Type != engine.EventRunFinished {
		return
	}
	s := r.s
	s.userGitMu.Lock()
	run := s.userGit[ev.RunID]
	s.userGitMu.Unlock()
	if run == nil {
		return
	}
	defer func() {
		s.userGitMu.Lock()
		delete(s.userGit, ev.RunID)
		s.userGitMu.Unlock()
		close(run.done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	side := s.userGitChanges(ctx, ev.RunID, run.before, s.readUserGit(ctx))
	if side == nil || s.Journal == nil {
		return
	}
	if err := s.Journal.Save(userGitName(ev.RunID), side); err != nil {
		s.log.Error("what the run left in your git repository is not recorded; undo will not name it", "run", ev.RunID, "err", err)
	}
}

// userGitChanges is what changed between before and after: the commits
// made since before's HEAD (newest first) and the paths newly staged.
func (s *Session) userGitChanges(ctx context.Context, runID string, before, after userGitState) *userGitSide {
	if !before.ok || !after.ok {
		return nil
	}
	side := &userGitSide{RunID: runID, HeadBefore: before.head, HeadAfter: after.head}
	if after.head != before.head && after.head != "" {
		if cs, err := tools.CommitsBetween(ctx, &tools.Env{WS: s.WS}, before.head, after.head, 100); err == nil {
			side.Commits = cs
		} else {
			s.log.Warn("the commits a run made in your repository could not be listed", "run", runID, "err", err)
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

// Commit is a commit a run made in the user's repository.
type Commit struct {
	SHA     string `json:"sha"`
	Subject string `json:"subject"`
}

// Leftovers is what undoing a run cannot take back (protocol
// agentd/undo/run's leftovers): the commits it made in the user's
// repository and the git revert that takes them back, the files it left
// staged in the user's index, and the files its snapshots left out
// (BigFiles: over the size limit, or not regular files). Text words them
// for the user, the same in every front end.
type Leftovers struct {
	Commits  []Commit `json:"commits,omitempty"`
	Revert   string   `json:"revert,omitempty"`
	Staged   []string `json:"staged,omitempty"`
	BigFiles []string `json:"bigFiles,omitempty"`
	Text     string   `json:"text"`

	left []gitops.SkippedFile
}

// Leftovers is what run runID left that undo cannot take back: what the
// journal recorded of the user's repository, and the files skipped (pass
// the run's SkippedFiles; nil for the git side alone, as after a run whose
// summary lists them). It waits for the record of a run that has just
// ended in this session. Nil when there is nothing.
func (s *Session) Leftovers(ctx context.Context, runID string, skipped []gitops.SkippedFile) *Leftovers {
	s.userGitMu.Lock()
	run := s.userGit[runID]
	s.userGitMu.Unlock()
	if run != nil {
		select {
		case <-run.done:
		case <-ctx.Done():
		}
	}
	var side userGitSide
	if s.Journal != nil {
		if ok, err := s.Journal.Load(userGitName(runID), &side); err != nil || !ok {
			side = userGitSide{}
		}
	}
	return newLeftovers(&side, skipped)
}

func newLeftovers(side *userGitSide, skipped []gitops.SkippedFile) *Leftovers {
	l := &Leftovers{Staged: side.Staged, left: skipped}
	for _, c := range side.Commits {
		l.Commits = append(l.Commits, Commit{SHA: c.Hash, Subject: c.Subject})
	}
	if n := len(l.Commits); n > 0 {
		if side.HeadBefore != "" {
			l.Revert = fmt.Sprintf("git revert --no-edit %s..%s", short(side.HeadBefore), short(l.Commits[0].SHA))
		} else {
			// The run made the repository's first commits: each by name,
			// newest first.
			shas := make([]string, n)
			for i, c := range l.Commits {
				shas[i] = short(c.SHA)
			}
			l.Revert = "git revert --no-edit " + strings.Join(shas, " ")
		}
	}
	for _, f := range skipped {
		l.BigFiles = append(l.BigFiles, f.Path)
	}
	if len(l.Commits)+len(l.Staged)+len(l.BigFiles) == 0 {
		return nil
	}
	l.Text = strings.Join(l.lines(), "\n")
	return l
}

// lines are the words for each leftover, with what to do.
func (l *Leftovers) lines() []string {
	var out []string
	if n := len(l.Commits); n > 0 {
		out = append(out, fmt.Sprintf("not undone: the run made %d commit%s in your repository (undo never changes your git history):", n, plural(n)))
		for _, c := range l.Commits {
			out = append(out, fmt.Sprintf("  %s %s", short(c.SHA), c.Subject))
		}
		out = append(out, "  to take them back too: "+l.Revert)
	}
	if len(l.Staged) > 0 {
		q := make([]string, len(l.Staged))
		for i, p := range l.Staged {
			q[i] = ShellQuote(p)
		}
		out = append(out, fmt.Sprintf("not undone: the run left %s in your index (staged); to unstage: git restore --staged -- %s",
			strings.Join(l.Staged, ", "), strings.Join(q, " ")))
	}
	if n := len(l.left); n > 0 {
		if n == 1 {
			out = append(out, "not undone: 1 file left out of the run's snapshots stays as it is:")
		} else {
			out = append(out, fmt.Sprintf("not undone: %d files left out of the run's snapshots stay as they are:", n))
		}
		for _, f := range l.left {
			out = append(out, fmt.Sprintf("  %s (%s)", f.Path, f.Reason))
		}
		out = append(out, "  (delete them by hand if the run made them; raise "+MaxFileSizeKey+" in .agentd/config.json or ~/.config/agentd/config.json to keep such files in snapshots)")
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// ShellQuote quotes p for the shell the user pastes into when it needs it
// (internal/shellcmd, the one quoting of the commands agentd hands the user
// to paste: a POSIX shell; on Windows PowerShell or cmd.exe).
func ShellQuote(p string) string { return shellcmd.Quote(p) }
