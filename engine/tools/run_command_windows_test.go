//go:build windows

package tools

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runWin runs run_command and returns its output, also next to an error.
func runWin(t *testing.T, ctx context.Context, env *Env, args RunCommandArgs) (RunCommandOutput, error) {
	t.Helper()
	tool, _ := Builtin().Get("run_command")
	res, err := tool.Run(ctx, env, mustJSON(t, args))
	if res == nil {
		return RunCommandOutput{}, err
	}
	return output[RunCommandOutput](t, res), err
}

// TestRunCommandThroughCmdExe: on Windows a command line runs through
// cmd.exe: its built-ins, %VAR% from the step's env, the step's cwd, its
// exit code.
func TestRunCommandThroughCmdExe(t *testing.T) {
	ws, root := newWS(t, map[string]string{"sub/f.txt": "x"})
	env := &Env{WS: ws}
	out, err := runWin(t, context.Background(), env, RunCommandArgs{Command: "echo out& echo %GREETING%", Env: map[string]string{"GREETING": "hi there"}})
	if err != nil || out.ExitCode != 0 || out.Stdout != "out\r\nhi there\r\n" {
		t.Fatalf("echo: %+v, %v", out, err)
	}
	out, err = runWin(t, context.Background(), env, RunCommandArgs{Command: "cd", Cwd: "sub"})
	if err != nil || !strings.EqualFold(strings.TrimSpace(out.Stdout), filepath.Join(root, "sub")) {
		t.Fatalf("cd in sub printed %q (%v), want %s", out.Stdout, err, filepath.Join(root, "sub"))
	}
	out, err = runWin(t, context.Background(), env, RunCommandArgs{Command: "echo boom 1>&2& exit /b 3"})
	if te := wantCode(t, err, CodeExitCode); out.ExitCode != 3 || !strings.Contains(te.Message, "boom") {
		t.Fatalf("exit /b 3: %+v, %v", out, err)
	}
}

// TestRunCommandCancelKillsTree: cancelling a step ends the whole tree
// the command started (the Job object), not only cmd.exe: a grandchild
// started in the background keeps the output pipe open, so the step would
// wait for it (a minute here) if it outlived the cancel.
func TestRunCommandCancelKillsTree(t *testing.T) {
	ws, _ := newWS(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(2 * time.Second); cancel() }()
	start := time.Now()
	_, err := runWin(t, ctx, &Env{WS: ws}, RunCommandArgs{Command: "start /b ping -n 60 127.0.0.1 & ping -n 60 127.0.0.1"})
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("the cancelled step returned after %s: a process of its tree outlived the cancel", took)
	}
	if err == nil || !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "cancel") {
		t.Fatalf("error %v, want the cancel", err)
	}
}
