//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentd/agentd/gitops"
)

// The undo case (issue 38, "Undo stays fast"): the agent changes 10 files
// of the tree (recorded as a run's ledger edits with Store.RecordEdits,
// before the writes, as the engine does), the user then edits 3 of those
// files on other lines, and the run is undone: agentd's Store.Revert
// against `git revert --no-commit` of the same change. git revert refuses
// to run over uncommitted changes to the files it touches, so on the git
// side the user's edits are a later commit and the agent's commit is
// reverted under it (the same three-way merge per file, same result).
// Both sides must end with the same bytes in the 10 files: the user's
// lines kept, the agent's gone.

const (
	undoChanged   = 10 // files the agent changes
	undoUserEdits = 3  // of those, files the user edits afterwards
	undoMinLines  = 24 // a file far enough from the agent's line for the user's
)

// undoFile is one file of an undo round: its content before the agent,
// after the agent, and after the user's edit (== agent when unedited).
type undoFile struct {
	rel                 string
	mode                os.FileMode // 0o644 or 0o755, as the ledger keeps it
	before, agent, user []byte
}

// undoCandidates are the text files (no NUL, at least undoMinLines lines)
// of the tree a round may pick, in b.files order; listed once.
func (b *bench) undoCandidates() []string {
	if b.undoFiles != nil {
		return b.undoFiles
	}
	for _, rel := range b.files {
		data, err := os.ReadFile(filepath.Join(b.tree, rel))
		if err != nil || bytes.IndexByte(data, 0) >= 0 || bytes.Count(data, []byte("\n")) < undoMinLines || !bytes.HasSuffix(data, []byte("\n")) {
			continue
		}
		b.undoFiles = append(b.undoFiles, rel)
		if len(b.undoFiles) >= 4096 {
			break
		}
	}
	return b.undoFiles
}

// undoPick chooses this round's files, spread over the candidates, and
// computes the agent's change (a line inserted in the middle) and the
// user's (a line inserted at the top, far from the agent's).
func (b *bench) undoPick() ([]undoFile, error) {
	cands := b.undoCandidates()
	if len(cands) < undoChanged {
		return nil, fmt.Errorf("the tree has only %d text files of %d lines or more; the undo case needs %d", len(cands), undoMinLines, undoChanged)
	}
	b.round++
	step := len(cands) / undoChanged
	var fs []undoFile
	for i := range undoChanged {
		rel := cands[(i*step+b.round*3)%len(cands)]
		data, err := os.ReadFile(filepath.Join(b.tree, rel))
		if err != nil {
			return nil, err
		}
		fi, err := os.Stat(filepath.Join(b.tree, rel))
		if err != nil {
			return nil, err
		}
		mode := os.FileMode(0o644)
		if fi.Mode()&0o111 != 0 {
			mode = 0o755
		}
		lines := strings.SplitAfter(string(data), "\n")
		mid := len(lines) / 2
		agent := strings.Join(lines[:mid], "") + fmt.Sprintf("// agent bench change %d\n", b.round) + strings.Join(lines[mid:], "")
		f := undoFile{rel: rel, mode: mode, before: data, agent: []byte(agent), user: []byte(agent)}
		if i < undoUserEdits {
			f.user = []byte(fmt.Sprintf("// user bench edit %d\n", b.round) + agent)
		}
		fs = append(fs, f)
	}
	return fs, nil
}

func (b *bench) write(rel string, data []byte) error {
	return os.WriteFile(filepath.Join(b.tree, rel), data, 0o644)
}

// want is what both undos must leave: the user's line, not the agent's.
func (f undoFile) want() []byte {
	if bytes.Equal(f.user, f.agent) {
		return f.before
	}
	return []byte(strings.Replace(string(f.user), string(f.agent), string(f.before), 1))
}

func (b *bench) checkUndone(tool string, fs []undoFile) error {
	for _, f := range fs {
		got, err := os.ReadFile(filepath.Join(b.tree, f.rel))
		if err != nil {
			return fmt.Errorf("%s undo: %v", tool, err)
		}
		if !bytes.Equal(got, f.want()) {
			return fmt.Errorf("%s undo left %s with %d bytes, want %d (the user's line kept, the agent's gone)", tool, f.rel, len(got), len(f.want()))
		}
	}
	return nil
}

// measureUndo runs reps interleaved rounds: each the agent's change and
// the user's edits, agentd's revert of it; then the same change and edits
// as git commits, and git's revert. Returns medians of wall and CPU time.
func (b *bench) measureUndo(ctx context.Context, store *gitops.Store, reps int) (ta, tg, ca, cg time.Duration, err error) {
	var as, gs, acs, gcs []time.Duration
	for range reps {
		fs, err := b.undoPick()
		if err != nil {
			return 0, 0, 0, 0, err
		}
		// Both sides start from the tree as it is, committed on git's side.
		if err := b.gitSnapshot(); err != nil {
			return 0, 0, 0, 0, err
		}
		// agentd: the run's edits recorded before they are written.
		owner := fmt.Sprintf("run/bench-undo-%d", b.round)
		edits := make([]gitops.Edit, len(fs))
		for i, f := range fs {
			edits[i] = gitops.Edit{Path: filepath.ToSlash(f.rel), Before: &gitops.FileState{Data: f.before, Mode: f.mode}, After: &gitops.FileState{Data: f.agent, Mode: f.mode}}
		}
		if err := store.RecordEdits(ctx, owner, "bench", edits); err != nil {
			return 0, 0, 0, 0, err
		}
		for _, f := range fs {
			if err := b.write(f.rel, f.agent); err != nil {
				return 0, 0, 0, 0, err
			}
		}
		for _, f := range fs[:undoUserEdits] {
			if err := b.write(f.rel, f.user); err != nil {
				return 0, 0, 0, 0, err
			}
		}
		var res *gitops.RevertResult
		d, err := timeIt(func() (err error) {
			res, err = store.Revert(ctx, []string{owner}, gitops.RevertOptions{RecordAs: fmt.Sprintf("undo/bench-undo-%d", b.round)})
			return err
		})
		if err != nil {
			return 0, 0, 0, 0, fmt.Errorf("agentd revert: %w", err)
		}
		if !res.Applied || len(res.Conflicts) > 0 || len(res.Reverted) != undoChanged {
			return 0, 0, 0, 0, fmt.Errorf("agentd revert: applied %v, %d reverted, conflicts %+v; want %d files reverted cleanly", res.Applied, len(res.Reverted), res.Conflicts, undoChanged)
		}
		if err := b.checkUndone("agentd", fs); err != nil {
			return 0, 0, 0, 0, err
		}
		as, acs = append(as, d), append(acs, lastCPU)

		// git: the same change as a commit, the user's edits as the next
		// commit (git revert refuses over uncommitted changes to the
		// files it touches), then the agent's commit reverted under them.
		for _, f := range fs {
			if err := b.write(f.rel, f.agent); err != nil {
				return 0, 0, 0, 0, err
			}
		}
		if err := b.gitSnapshot(); err != nil {
			return 0, 0, 0, 0, err
		}
		agentCommit, err := b.gitOut("rev-parse", "HEAD")
		if err != nil {
			return 0, 0, 0, 0, err
		}
		for _, f := range fs[:undoUserEdits] {
			if err := b.write(f.rel, f.user); err != nil {
				return 0, 0, 0, 0, err
			}
		}
		if err := b.gitSnapshot(); err != nil {
			return 0, 0, 0, 0, err
		}
		d, err = timeIt(func() error { return b.git("revert", "--no-commit", agentCommit) })
		if err != nil {
			return 0, 0, 0, 0, err
		}
		gs, gcs = append(gs, d), append(gcs, lastCPU)
		if err := b.checkUndone("git", fs); err != nil {
			return 0, 0, 0, 0, err
		}
		// Untimed: the revert committed, so the next round starts clean.
		if err := b.git("commit", "-q", "--no-verify", "-m", "revert"); err != nil {
			return 0, 0, 0, 0, err
		}
	}
	return median(as), median(gs), median(acs), median(gcs), nil
}

func (b *bench) gitOut(args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"--git-dir=" + b.gitDir, "--work-tree=" + b.tree}, args...)...)
	cmd.Dir = b.tree
	o, err := cmd.Output()
	childCPU(cmd)
	if err != nil {
		return "", fmt.Errorf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(o)), nil
}
