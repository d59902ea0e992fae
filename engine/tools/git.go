package tools

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agentd/agentd/diff"
)

//go:embed git.md
var gitDesc string

// MaxGitOutput bounds the diff text the git tool returns.
var MaxGitOutput = 1 << 20

// GitArgs are the git tool's arguments.
type GitArgs struct {
	Action   string   `json:"action"`
	Paths    []string `json:"paths,omitempty"`
	MaxCount int      `json:"maxCount,omitempty"`
	Staged   bool     `json:"staged,omitempty"`
	Ref      string   `json:"ref,omitempty"`
	Message  string   `json:"message,omitempty"`
	Patch    string   `json:"patch,omitempty"`
}

// GitStatusEntry is one changed path of `status` (porcelain XY codes).
type GitStatusEntry struct {
	Path     string `json:"path"`
	OrigPath string `json:"origPath,omitempty"`
	Index    string `json:"index"`
	Worktree string `json:"worktree"`
}

// GitStatusOutput is `status`'s output.
type GitStatusOutput struct {
	Branch string `json:"branch"`
	// Head is the commit HEAD names ("" before the first commit), read
	// from the whole repository, not only the workspace's paths.
	Head  string           `json:"head,omitempty"`
	Clean bool             `json:"clean"`
	Files []GitStatusEntry `json:"files"`
}

// GitDiffOutput is `diff`'s output.
type GitDiffOutput struct {
	Diff      string   `json:"diff"`
	Files     []string `json:"files"`
	Truncated bool     `json:"truncated"`
}

// GitLogEntry is one commit of `log`.
type GitLogEntry struct {
	Hash    string `json:"hash"`
	Author  string `json:"author"`
	Email   string `json:"email"`
	Date    string `json:"date"`
	Subject string `json:"subject"`
}

// GitLogOutput is `log`'s output.
type GitLogOutput struct {
	Commits []GitLogEntry `json:"commits"`
}

// GitCommitOutput is `commit`'s output.
type GitCommitOutput struct {
	Commit string `json:"commit"`
	Branch string `json:"branch"`
	Output string `json:"output"`
}

// GitApplyOutput is `apply`'s output.
type GitApplyOutput struct {
	Files []string `json:"files"`
}

const gitSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "action": {"enum": ["status", "diff", "log", "commit", "apply"], "description": "What to do."},
    "paths": {"type": "array", "items": {"type": "string", "minLength": 1}, "description": "Limit to these workspace-relative paths (status, diff, log, commit)."},
    "maxCount": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "log: most commits to list (default 20)."},
    "staged": {"type": "boolean", "description": "diff: show staged changes instead of unstaged ones."},
    "ref": {"type": "string", "pattern": "^[^-\\s][^\\s]*$", "description": "diff: compare with this commit; log: start from it."},
    "message": {"type": "string", "minLength": 1, "description": "commit: the commit message."},
    "patch": {"type": "string", "minLength": 1, "description": "apply: a unified diff with workspace-relative paths."}
  },
  "required": ["action"],
  "additionalProperties": false,
  "allOf": [
    {"if": {"properties": {"action": {"const": "commit"}}}, "then": {"required": ["message"]}},
    {"if": {"properties": {"action": {"const": "apply"}}}, "then": {"required": ["patch"]}}
  ]
}`

type gitTool struct{ spec }

func newGit() Tool {
	return &gitTool{spec{name: "git", desc: gitDesc, category: CategoryGit, risk: RiskMedium, schema: gitSchema}}
}

// Describe says what the call does; commit and apply change the user's
// repository and say that they need approval.
func (t *gitTool) Describe(raw json.RawMessage) Description {
	a, _ := decodeArgs[GitArgs](t.name, raw)
	paths := strings.Join(a.Paths, ", ")
	switch a.Action {
	case "commit":
		d := Description{Title: "git commit in your repository (needs approval)", Detail: "message: " + a.Message}
		if paths != "" {
			d.Detail += "; paths: " + paths
		} else {
			d.Detail += "; commits what is staged"
		}
		return d
	case "apply":
		d := Description{Title: "git apply: change files in your working tree (needs approval)"}
		if fds, err := diff.Parse(a.Patch); err == nil {
			names := make([]string, 0, len(fds))
			for _, fd := range fds {
				names = append(names, patchName(fd))
			}
			d.Detail = strings.Join(names, ", ")
		}
		return d
	}
	d := Description{Title: "git " + a.Action + " (read-only)"}
	if paths != "" {
		d.Detail = "paths: " + paths
	}
	return d
}

// RiskOf returns the risk of one call: reads are low, commit and apply high.
func (t *gitTool) RiskOf(raw json.RawMessage) Risk {
	a, _ := decodeArgs[GitArgs](t.name, raw)
	switch a.Action {
	case "status", "diff", "log":
		return RiskLow
	}
	return RiskHigh
}

func (t *gitTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (*Result, error) {
	a, err := decodeArgs[GitArgs](t.name, raw)
	if err != nil {
		return nil, err
	}
	if err := checkEnv(t.name, env); err != nil {
		return nil, err
	}
	if strings.HasPrefix(a.Ref, "-") || strings.ContainsAny(a.Ref, " \t\n") {
		return nil, errorf(CodeInvalidArgs, "git: ref %q is not a commit name", a.Ref)
	}
	// Paths are checked before anything runs.
	specs, err := pathspecs(env, a.Paths)
	if err != nil {
		return nil, err
	}
	r, err := openUserRepo(ctx, env)
	if err != nil {
		return nil, err
	}
	var out any
	switch a.Action {
	case "status":
		out, err = r.status(ctx, specs)
	case "diff":
		out, err = r.diff(ctx, a, specs)
	case "log":
		out, err = r.log(ctx, a, specs)
	case "commit":
		out, err = r.commit(ctx, a, specs)
	case "apply":
		out, err = r.apply(ctx, env, a)
	default:
		return nil, errorf(CodeInvalidArgs, "git: unknown action %q; use status, diff, log, commit or apply", a.Action)
	}
	if err != nil {
		return nil, err
	}
	return &Result{Output: out}, nil
}

// userRepo is the user's own repository, driven with the git CLI.
type userRepo struct {
	dir    string // where git runs
	top    string // the work tree's top level
	root   string // the workspace root (inside top)
	prefix string // root relative to top, "" or "dir/"
}

func openUserRepo(ctx context.Context, env *Env) (*userRepo, error) {
	dir := env.GitDir
	if dir == "" {
		dir = env.WS.Root()
	}
	r := &userRepo{dir: dir, root: env.WS.Root()}
	top, err := r.run(ctx, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, errorf(CodeGit, "git: %s is not inside a git repository (%v); run `git init` first or do not use the git tool", dir, err)
	}
	r.top = strings.TrimSpace(string(top))
	if real, err := filepath.EvalSymlinks(r.top); err == nil {
		r.top = real
	}
	rel, err := filepath.Rel(r.top, r.root)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, errorf(CodeGit, "git: the repository at %s does not contain the workspace %s", r.top, r.root)
	}
	if rel != "." {
		r.prefix = filepath.ToSlash(rel) + "/"
	}
	return r, nil
}

// run runs git with args and returns stdout; stderr goes into the error.
func (r *userRepo) run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	full := append([]string{"-c", "core.quotepath=off", "-c", "color.ui=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	// Its own process group, like run_command's: the terminal's Ctrl-C
	// reaches agentd only, and a cancel kills git's hooks too.
	setProcessGroup(cmd)
	cmd.Cancel = func() error { signalGroup(cmd, true); return nil }
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Start()
	if err == nil {
		// Listed while it runs, so the first Ctrl-C counts it and a
		// second (KillAllCommands) finds it; unlisted before it is reaped.
		addGroup(cmd)
		reap := waitExited(cmd)
		removeGroup(cmd)
		err = reap()
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("git %s: %w", args[0], ctx.Err())
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) && msg != "" {
			return stdout.Bytes(), fmt.Errorf("git %s: %s", args[0], shorten(msg, 2000))
		}
		return stdout.Bytes(), fmt.Errorf("git %s: %w", args[0], err)
	}
	return stdout.Bytes(), nil
}

// pathspecs resolves path arguments inside the workspace into literal
// pathspecs; no paths means the whole workspace.
func pathspecs(env *Env, paths []string) ([]string, error) {
	if len(paths) == 0 {
		return []string{":(literal)" + env.WS.Root()}, nil
	}
	out := make([]string, 0, len(paths))
	for i, p := range paths {
		_, abs, err := resolve(env, "git", fmt.Sprintf("paths[%d]", i), p)
		if err != nil {
			return nil, err
		}
		out = append(out, ":(literal)"+abs)
	}
	return out, nil
}

// wsPath turns a top-level-relative path git printed into a
// workspace-relative one.
func (r *userRepo) wsPath(p string) string {
	if r.prefix != "" && strings.HasPrefix(p, r.prefix) {
		return p[len(r.prefix):]
	}
	if r.prefix == "" {
		return p
	}
	rel, err := filepath.Rel(r.root, filepath.Join(r.top, p))
	if err != nil {
		return p
	}
	return filepath.ToSlash(rel)
}

func (r *userRepo) branch(ctx context.Context) string {
	b, err := r.run(ctx, nil, "symbolic-ref", "--short", "-q", "HEAD")
	if err != nil {
		return "(detached)"
	}
	return strings.TrimSpace(string(b))
}

func (r *userRepo) status(ctx context.Context, specs []string) (*GitStatusOutput, error) {
	args := append([]string{"status", "--porcelain=v1", "-z", "--untracked-files=all", "--"}, specs...)
	b, err := r.run(ctx, nil, args...)
	if err != nil {
		return nil, errorf(CodeGit, "%v", err)
	}
	out := &GitStatusOutput{Branch: r.branch(ctx), Files: []GitStatusEntry{}}
	if h, err := r.run(ctx, nil, "rev-parse", "--verify", "-q", "HEAD"); err == nil {
		out.Head = strings.TrimSpace(string(h))
	}
	fields := strings.Split(string(b), "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		e := GitStatusEntry{Index: f[0:1], Worktree: f[1:2], Path: r.wsPath(f[3:])}
		if f[0] == 'R' || f[0] == 'C' {
			if i+1 < len(fields) {
				i++
				e.OrigPath = r.wsPath(fields[i])
			}
		}
		out.Files = append(out.Files, e)
	}
	out.Clean = len(out.Files) == 0
	return out, nil
}

func (r *userRepo) diff(ctx context.Context, a GitArgs, specs []string) (*GitDiffOutput, error) {
	base := []string{"diff", "--no-ext-diff", "--no-textconv"}
	if a.Staged {
		base = append(base, "--cached")
	}
	if a.Ref != "" {
		base = append(base, a.Ref)
	}
	text, err := r.run(ctx, nil, append(append(base, "--"), specs...)...)
	if err != nil {
		return nil, errorf(CodeGit, "%v", err)
	}
	names, err := r.run(ctx, nil, append(append(base, "--name-only", "-z", "--"), specs...)...)
	if err != nil {
		return nil, errorf(CodeGit, "%v", err)
	}
	out := &GitDiffOutput{Files: []string{}}
	for _, n := range strings.Split(string(names), "\x00") {
		if n != "" {
			out.Files = append(out.Files, r.wsPath(n))
		}
	}
	if len(text) > MaxGitOutput {
		text = text[:MaxGitOutput]
		out.Truncated = true
	}
	out.Diff = strings.ToValidUTF8(string(text), "\uFFFD")
	return out, nil
}

// CommitsBetween lists the commits of the user's repository (found as the
// git tool finds it) in from..to, newest first, at most max, whatever
// paths they touch: an empty commit and one outside the workspace count,
// unlike the tool's log, which shows the workspace's history. from ""
// means every commit reachable from to.
func CommitsBetween(ctx context.Context, env *Env, from, to string, max int) ([]GitLogEntry, error) {
	for _, ref := range []string{from, to} {
		if strings.HasPrefix(ref, "-") || strings.ContainsAny(ref, " \t\n.") {
			return nil, errorf(CodeInvalidArgs, "git: %q is not a commit name", ref)
		}
	}
	if err := checkEnv("git", env); err != nil {
		return nil, err
	}
	r, err := openUserRepo(ctx, env)
	if err != nil {
		return nil, err
	}
	ref := to
	if from != "" {
		ref = from + ".." + to
	}
	out, err := r.log(ctx, GitArgs{MaxCount: max, Ref: ref}, nil)
	if err != nil {
		return nil, err
	}
	return out.Commits, nil
}

func (r *userRepo) log(ctx context.Context, a GitArgs, specs []string) (*GitLogOutput, error) {
	n := a.MaxCount
	if n <= 0 {
		n = 20
	}
	args := []string{"log", fmt.Sprintf("--max-count=%d", n), "--format=%H%x00%an%x00%ae%x00%aI%x00%s%x1e"}
	if a.Ref != "" {
		args = append(args, a.Ref)
	}
	b, err := r.run(ctx, nil, append(append(args, "--"), specs...)...)
	out := &GitLogOutput{Commits: []GitLogEntry{}}
	if err != nil {
		if strings.Contains(err.Error(), "does not have any commits") {
			return out, nil
		}
		return nil, errorf(CodeGit, "%v", err)
	}
	for _, rec := range strings.Split(string(b), "\x1e") {
		rec = strings.TrimLeft(rec, "\n")
		f := strings.Split(rec, "\x00")
		if len(f) != 5 {
			continue
		}
		out.Commits = append(out.Commits, GitLogEntry{Hash: f[0], Author: f[1], Email: f[2], Date: f[3], Subject: f[4]})
	}
	return out, nil
}

// commit commits the given paths (their working-tree content, staged first
// with `git add -A`) or, without paths, what the user has staged. Only the
// current branch moves.
func (r *userRepo) commit(ctx context.Context, a GitArgs, specs []string) (*GitCommitOutput, error) {
	explicit := len(a.Paths) > 0
	if explicit {
		if _, err := r.run(ctx, nil, append([]string{"add", "-A", "--"}, specs...)...); err != nil {
			return nil, errorf(CodeGit, "%v; check the paths", err)
		}
	} else if _, err := r.run(ctx, nil, "diff", "--cached", "--quiet"); err == nil {
		return nil, errorf(CodeGit, "git: nothing is staged to commit; give the files to commit in paths")
	}
	args := []string{"commit", "--no-edit", "-m", a.Message}
	if explicit {
		args = append(append(args, "--only", "--"), specs...)
	}
	msg, err := r.run(ctx, nil, args...)
	if err != nil {
		return nil, errorf(CodeGit, "%v", err)
	}
	head, err := r.run(ctx, nil, "rev-parse", "HEAD")
	if err != nil {
		return nil, errorf(CodeGit, "%v", err)
	}
	return &GitCommitOutput{Commit: strings.TrimSpace(string(head)), Branch: r.branch(ctx), Output: strings.TrimSpace(string(msg))}, nil
}

// apply applies a patch with workspace-relative paths to the working tree
// (not the index) after checking that all of it applies.
func (r *userRepo) apply(ctx context.Context, env *Env, a GitArgs) (*GitApplyOutput, error) {
	fds, err := diff.Parse(a.Patch)
	if err != nil {
		return nil, errorf(CodeInvalidArgs, "git: the patch is not a valid unified diff: %v", err)
	}
	out := &GitApplyOutput{Files: []string{}}
	for _, fd := range fds {
		for _, p := range []string{fd.OldPath, fd.NewPath} {
			if p == "" {
				continue
			}
			rel, _, err := resolve(env, "git", "patch", p)
			if err != nil {
				return nil, err
			}
			if len(out.Files) == 0 || out.Files[len(out.Files)-1] != rel {
				out.Files = append(out.Files, rel)
			}
		}
	}
	// Run in the workspace root: git apply takes the patch's paths as
	// relative to the directory it runs in.
	ar := *r
	ar.dir = r.root
	args := []string{"apply", "--whitespace=nowarn"}
	patch := []byte(a.Patch)
	if _, err := ar.run(ctx, patch, append(append([]string{}, args...), "--check")...); err != nil {
		return nil, errorf(CodePatchFailed, "%v; nothing was changed: make the patch against the files' current content", err)
	}
	if _, err := ar.run(ctx, patch, args...); err != nil {
		return nil, errorf(CodePatchFailed, "%v", err)
	}
	return out, nil
}
