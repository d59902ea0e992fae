package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentd/agentd/diff"
	"github.com/agentd/agentd/engine/approval"
	agentsession "github.com/agentd/agentd/session"
	"github.com/agentd/agentd/workspace"
)

// ---- Files through the client -----------------------------------------

// clientWriter writes the agent's accepted edits with fs/write_text_file,
// so they land in the editor's buffer (its undo and its own review, such
// as Zed's keep/reject per hunk, cover them).
type clientWriter struct{ s *session }

func (c clientWriter) WriteFile(ctx context.Context, rel string, old, new []byte, mode fs.FileMode) error {
	s := c.s
	abs := filepath.Join(s.ws.Root(), filepath.FromSlash(rel))
	if _, err := s.a.conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sdk.SessionId(s.id), Path: abs, Content: string(new)}); err != nil {
		return fmt.Errorf("writing %s through the editor (fs/write_text_file): %w", rel, err)
	}
	s.setOverlay(rel, new, true)
	return nil
}

// overlayDropper writes to the disk and forgets the file's overlay (for
// clients that read through fs/read_text_file but do not write).
type overlayDropper struct {
	s *session
	w workspace.FileWriter
}

func (d overlayDropper) WriteFile(ctx context.Context, rel string, old, new []byte, mode fs.FileMode) error {
	err := d.w.WriteFile(ctx, rel, old, new, mode)
	d.s.dropOverlay(rel)
	return err
}

// setOverlay records what the editor's buffer holds, so that tools read
// what the user sees (unsaved text included), and whose edits it holds
// (workspace.SyncOverlay): byAgent is the agent's own write; a read that
// differs from the buffer and the disk is the user's unsaved edit, which
// snapshots do not take for the agent's and a restore leaves alone.
func (s *session) setOverlay(rel string, content []byte, byAgent bool) {
	s.mu.Lock()
	v := s.overlays[rel] + 1
	s.overlays[rel] = v
	s.mu.Unlock()
	if err := s.ws.SyncOverlay(rel, content, v, byAgent); err != nil {
		s.log.Debug("overlay not set", "path", rel, "err", err)
	}
}

func (s *session) dropOverlay(rel string) {
	s.mu.Lock()
	_, ok := s.overlays[rel]
	delete(s.overlays, rel)
	s.mu.Unlock()
	if ok {
		s.ws.CloseOverlay(rel)
	}
}

// readThroughClient asks the editor for a file's text (fs/read_text_file)
// and keeps it as the file's overlay; a file the editor cannot read is
// read from the disk.
func (s *session) readThroughClient(ctx context.Context, rel string) {
	abs := filepath.Join(s.ws.Root(), filepath.FromSlash(rel))
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return
	}
	res, err := s.a.conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sdk.SessionId(s.id), Path: abs})
	if err != nil {
		s.dropOverlay(rel)
		return
	}
	s.setOverlay(rel, []byte(res.Content), false)
}

// clientBuffers is ACP's read and write of the editor's buffers
// (agentsession.EditorBuffers); which files a restore or undo may write
// and which buffers then show the new text is the session's rule.
type clientBuffers struct{ s *session }

// ReadBuffers reads through the client (fs/read_text_file) the files a
// restore or undo is about to write, so unsaved edits in buffers agentd
// had not read yet are known, and left alone, rather than overwritten in
// the editor afterwards. Files binary on disk are not read (ACP text
// cannot carry them).
func (c clientBuffers) ReadBuffers(ctx context.Context, paths []string) {
	s := c.s
	if !s.caps.Fs.ReadTextFile {
		return
	}
	for _, rel := range paths {
		s.mu.Lock()
		_, open := s.overlays[rel]
		s.mu.Unlock()
		if open {
			continue
		}
		data, err := os.ReadFile(filepath.Join(s.ws.Root(), filepath.FromSlash(rel)))
		if err != nil || diff.IsBinary(data) || !utf8.Valid(data) {
			continue
		}
		s.readThroughClient(ctx, rel)
	}
}

// WriteBuffers gives the editor what a restore or undo wrote (/restore,
// /undo, /undo-restore): with a client that writes (fs.writeTextFile),
// each written or re-created text file's new content goes to the editor
// with fs/write_text_file, whether or not it is open there, so its
// buffers show it and its undo covers it; so do the open buffers the
// session names (w.Refresh). Binary files (a NUL byte, or not UTF-8: ACP
// text cannot carry them), deletions and file modes stay on the disk
// only. Without fs.writeTextFile, the overlays of the files written are
// read again through the client. It returns the files the editor could
// not be given, with why.
func (c clientBuffers) WriteBuffers(ctx context.Context, w agentsession.BufferWrite) []agentsession.RestoreConflict {
	s := c.s
	if !s.caps.Fs.WriteTextFile {
		s.refreshOverlays(ctx, append(append([]string(nil), w.Written...), w.Deleted...))
		return nil
	}
	for _, rel := range w.Deleted {
		s.dropOverlay(rel)
	}
	rels := append([]string(nil), w.Written...)
	for _, b := range w.Refresh {
		if !slices.Contains(rels, b.Path) && !slices.Contains(w.Deleted, b.Path) {
			rels = append(rels, b.Path)
		}
	}
	var failed []agentsession.RestoreConflict
	for _, rel := range rels {
		abs := filepath.Join(s.ws.Root(), filepath.FromSlash(rel))
		content, err := os.ReadFile(abs)
		if err != nil {
			s.dropOverlay(rel)
			continue
		}
		if diff.IsBinary(content) || !utf8.Valid(content) {
			s.dropOverlay(rel)
			continue
		}
		if _, err := s.a.conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sdk.SessionId(s.id), Path: abs, Content: string(content)}); err != nil {
			s.log.Warn("restored file not written through the editor", "path", rel, "err", err)
			s.dropOverlay(rel)
			failed = append(failed, agentsession.RestoreConflict{Path: rel, Message: fmt.Sprintf("written on disk, but the editor refused the new text (reload it from disk): %v", err)})
			continue
		}
		s.setOverlay(rel, content, true)
	}
	return failed
}

// refreshOverlays re-reads files a restore changed.
func (s *session) refreshOverlays(ctx context.Context, rels []string) {
	for _, rel := range rels {
		s.mu.Lock()
		_, open := s.overlays[rel]
		s.mu.Unlock()
		if open {
			s.dropOverlay(rel)
			if s.caps.Fs.ReadTextFile {
				s.readThroughClient(ctx, rel)
			}
		}
	}
}

// ---- Commands in the client's terminal ---------------------------------

// terminalTool runs run_command in the client's terminal (terminal/*):
// the user sees it live in the editor. Approval, snapshots and the
// step's output work as for agentd's own run_command.
type terminalTool struct {
	agentsession.Tool
	s *session
}

// ReadPaths are the files the command line names, as for agentd's own
// run_command: the engine asks before one of them is a sensitive file.
func (t *terminalTool) ReadPaths(args json.RawMessage) []string {
	return approval.ReadPaths(t.Tool, args)
}

func (t *terminalTool) Describe(args json.RawMessage) agentsession.ToolDescription {
	if d, ok := t.Tool.(agentsession.ToolDescriber); ok {
		return d.Describe(args)
	}
	return agentsession.ToolDescription{}
}

// terminalOutputLimit bounds what the client keeps of a command's output.
const terminalOutputLimit = 1 << 20

func (t *terminalTool) Run(ctx context.Context, env *agentsession.ToolEnv, raw json.RawMessage) (*agentsession.ToolResult, error) {
	s := t.s
	var a agentsession.RunCommandArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, &agentsession.ToolError{Code: "INVALID_ARGS", Message: "run_command: " + err.Error()}
	}
	if strings.TrimSpace(a.Command) == "" {
		return nil, &agentsession.ToolError{Code: "INVALID_ARGS", Message: "run_command: command is empty"}
	}
	dir := s.ws.Root()
	if a.Cwd != "" {
		_, abs, err := s.ws.Resolve(a.Cwd)
		if err != nil {
			return nil, &agentsession.ToolError{Code: "INVALID_ARGS", Message: "run_command: cwd: " + err.Error()}
		}
		dir = abs
	}
	if a.Timeout != "" {
		d, err := time.ParseDuration(a.Timeout)
		if err != nil || d <= 0 {
			return nil, &agentsession.ToolError{Code: "INVALID_ARGS", Message: fmt.Sprintf("run_command: timeout %q is not a positive Go duration such as \"30s\"", a.Timeout)}
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	var envVars []sdk.EnvVariable
	for k, v := range a.Env {
		envVars = append(envVars, sdk.EnvVariable{Name: k, Value: v})
	}
	slices.SortFunc(envVars, func(x, y sdk.EnvVariable) int { return strings.Compare(x.Name, y.Name) })
	sid := sdk.SessionId(s.id)
	start := time.Now()
	term, err := s.a.conn.CreateTerminal(ctx, sdk.CreateTerminalRequest{SessionId: sid, Command: agentsession.CommandShell(), Args: []string{"-c", a.Command},
		Cwd: &dir, Env: envVars, OutputByteLimit: sdk.Ptr(terminalOutputLimit)})
	if err != nil {
		return nil, fmt.Errorf("run_command: starting %q in the editor's terminal: %w", a.Command, err)
	}
	tid := term.TerminalId
	bg := context.WithoutCancel(ctx)
	defer func() {
		_, _ = s.a.conn.ReleaseTerminal(bg, sdk.ReleaseTerminalRequest{SessionId: sid, TerminalId: tid})
	}()
	s.send(sdk.UpdateToolCall(sdk.ToolCallId(env.RunID+"/"+env.StepID), sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolTerminalRef(tid)})), true)
	exit, werr := s.a.conn.WaitForTerminalExit(ctx, sdk.WaitForTerminalExitRequest{SessionId: sid, TerminalId: tid})
	stopped := werr != nil && ctx.Err() != nil
	if stopped {
		_, _ = s.a.conn.KillTerminal(bg, sdk.KillTerminalRequest{SessionId: sid, TerminalId: tid})
	} else if werr != nil {
		return nil, fmt.Errorf("run_command: waiting for %q in the editor's terminal: %w", a.Command, werr)
	}
	out, oerr := s.a.conn.TerminalOutput(bg, sdk.TerminalOutputRequest{SessionId: sid, TerminalId: tid})
	res := agentsession.RunCommandOutput{DurationMs: time.Since(start).Milliseconds(), ExitCode: -1}
	if oerr == nil {
		res.Stdout, res.Truncated = out.Output, out.Truncated
		if out.ExitStatus != nil && exit.ExitCode == nil && exit.Signal == nil {
			exit.ExitCode, exit.Signal = out.ExitStatus.ExitCode, out.ExitStatus.Signal
		}
	}
	if exit.ExitCode != nil {
		res.ExitCode = *exit.ExitCode
	}
	if exit.Signal != nil {
		res.Signal = *exit.Signal
	}
	result := &agentsession.ToolResult{Output: res}
	ok := a.OkExitCodes
	if len(ok) == 0 {
		ok = []int{0}
	}
	switch {
	case stopped && errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.TimedOut = true
		result.Output = res
		return result, &agentsession.ToolError{Code: "TIMEOUT", Retryable: true, Message: fmt.Sprintf("run_command: %q did not finish within %s and was stopped", a.Command, a.Timeout)}
	case stopped:
		return result, fmt.Errorf("run_command: %q was stopped: %w", a.Command, ctx.Err())
	case !slices.Contains(ok, res.ExitCode):
		return result, &agentsession.ToolError{Code: "EXIT_CODE", Message: fmt.Sprintf("run_command: %q exited with code %d", a.Command, res.ExitCode)}
	}
	return result, nil
}
