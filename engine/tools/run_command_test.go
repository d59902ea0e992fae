//go:build linux

package tools

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// streamRecorder collects streamed output and can signal when a stream
// contains a marker line (a pid printed by the command).
type streamRecorder struct {
	mu      sync.Mutex
	streams map[string]*strings.Builder
	pid     chan int
	sent    bool
}

func newRecorder() *streamRecorder {
	return &streamRecorder{streams: map[string]*strings.Builder{}, pid: make(chan int, 1)}
}

func (r *streamRecorder) output(stream, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.streams[stream]
	if b == nil {
		b = &strings.Builder{}
		r.streams[stream] = b
	}
	b.WriteString(text)
	if !r.sent {
		if i := strings.Index(b.String(), "pid="); i >= 0 {
			rest := b.String()[i+4:]
			if j := strings.IndexByte(rest, '\n'); j >= 0 {
				if n, err := strconv.Atoi(rest[:j]); err == nil {
					r.pid <- n
					r.sent = true
				}
			}
		}
	}
}

func (r *streamRecorder) get(stream string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b := r.streams[stream]; b != nil {
		return b.String()
	}
	return ""
}

// processGone reports whether pid has exited or exits within a few
// seconds. A killed process closes its files (so our pipes see EOF) a moment
// before it is marked dead; a pidfd becomes readable when it is.
func processGone(pid int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return errors.Is(err, unix.ESRCH)
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 10_000)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 1
	}
}

// withTimeoutTrigger makes run_command's timeout fire when fire is closed.
func withTimeoutTrigger(t *testing.T) (fire chan time.Time) {
	fire = make(chan time.Time)
	old := after
	after = func(kind string, d time.Duration) <-chan time.Time {
		if kind == "timeout" {
			return fire
		}
		return time.After(d)
	}
	t.Cleanup(func() { after = old })
	return fire
}

func runCmd(t *testing.T, ctx context.Context, env *Env, args RunCommandArgs) (*Result, RunCommandOutput, error) {
	t.Helper()
	tool, _ := Builtin().Get("run_command")
	raw := mustJSON(t, args)
	res, err := tool.Run(ctx, env, raw)
	if res == nil {
		return nil, RunCommandOutput{}, err
	}
	return res, output[RunCommandOutput](t, res), err
}

func TestRunCommand(t *testing.T) {
	ws, root := newWS(t, map[string]string{"sub/f.txt": "x"})
	tests := []struct {
		name   string
		args   RunCommandArgs
		exit   int
		stdout string
		stderr string
		code   string
	}{
		{"ok", RunCommandArgs{Command: "echo out; echo err >&2"}, 0, "out\n", "err\n", ""},
		{"exit code fails the step", RunCommandArgs{Command: "echo partial; echo boom >&2; exit 3"}, 3, "partial\n", "boom\n", CodeExitCode},
		{"ok exit codes", RunCommandArgs{Command: "exit 1", OkExitCodes: []int{0, 1}}, 1, "", "", ""},
		{"zero not ok", RunCommandArgs{Command: "true", OkExitCodes: []int{1}}, 0, "", "", CodeExitCode},
		{"cwd", RunCommandArgs{Command: "pwd", Cwd: "sub"}, 0, filepath.Join(root, "sub") + "\n", "", ""},
		{"env", RunCommandArgs{Command: `printf %s "$GREETING"`, Env: map[string]string{"GREETING": "hi there"}}, 0, "hi there", "", ""},
		{"no stdin", RunCommandArgs{Command: "cat; echo done"}, 0, "done\n", "", ""},
		{"killed by a signal", RunCommandArgs{Command: "kill -KILL $$"}, 137, "", "", CodeExitCode},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			env := &Env{WS: ws, Output: rec.output}
			res, out, err := runCmd(t, context.Background(), env, tc.args)
			if tc.code != "" {
				te := wantCode(t, err, tc.code)
				if te.Retryable {
					t.Error("an exit code error is retryable")
				}
				if res == nil {
					t.Fatal("no Result next to the error: the failed step's output would be lost")
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if out.ExitCode != tc.exit || out.Stdout != tc.stdout || out.Stderr != tc.stderr || out.Truncated {
				t.Errorf("output %+v, want exit %d stdout %q stderr %q", out, tc.exit, tc.stdout, tc.stderr)
			}
			if rec.get("stdout") != tc.stdout || rec.get("stderr") != tc.stderr {
				t.Errorf("streamed stdout %q stderr %q, want %q %q", rec.get("stdout"), rec.get("stderr"), tc.stdout, tc.stderr)
			}
		})
	}
	t.Run("exit error quotes stderr", func(t *testing.T) {
		_, _, err := runCmd(t, context.Background(), &Env{WS: ws}, RunCommandArgs{Command: "echo 'FAIL: TestX' >&2; exit 1"})
		if te := wantCode(t, err, CodeExitCode); !strings.Contains(te.Message, "FAIL: TestX") || !strings.Contains(te.Message, "code 1") {
			t.Errorf("message %q does not say the code and the end of stderr", te.Message)
		}
	})
	t.Run("missing cwd", func(t *testing.T) {
		_, _, err := runCmd(t, context.Background(), &Env{WS: ws}, RunCommandArgs{Command: "true", Cwd: "nope"})
		wantCode(t, err, CodeNotFound)
	})
	t.Run("bad timeout", func(t *testing.T) {
		_, _, err := runCmd(t, context.Background(), &Env{WS: ws}, RunCommandArgs{Command: "true", Timeout: "-1s"})
		wantCode(t, err, CodeInvalidArgs)
	})
}

// A timeout stops the whole process group: the shell and the sleep it
// started.
func TestRunCommandTimeoutKillsGroup(t *testing.T) {
	fire := withTimeoutTrigger(t)
	ws, _ := newWS(t, nil)
	rec := newRecorder()
	env := &Env{WS: ws, Output: rec.output}
	go func() {
		<-rec.pid
		close(fire)
	}()
	res, out, err := runCmd(t, context.Background(), env, RunCommandArgs{
		Command: "sleep 300 & echo pid=$!; wait", Timeout: "1h"})
	te := wantCode(t, err, CodeTimeout)
	if !te.Retryable {
		t.Error("a timeout is not retryable")
	}
	if res == nil || !out.TimedOut || !strings.Contains(out.Stdout, "pid=") {
		t.Errorf("output %+v, want the output so far and timedOut", out)
	}
	pid := pidFrom(t, out.Stdout)
	if !processGone(pid) {
		t.Errorf("the shell's child sleep (pid %d) still runs after the timeout", pid)
	}
}

func pidFrom(t *testing.T, s string) int {
	t.Helper()
	i := strings.Index(s, "pid=")
	if i < 0 {
		t.Fatalf("no pid in %q", s)
	}
	rest := s[i+4:]
	if j := strings.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	n, err := strconv.Atoi(rest)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRunCommandCancel(t *testing.T) {
	ws, _ := newWS(t, nil)
	rec := newRecorder()
	env := &Env{WS: ws, Output: rec.output}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-rec.pid
		cancel()
	}()
	res, out, err := runCmd(t, ctx, env, RunCommandArgs{Command: "sleep 300 & echo pid=$!; wait"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if res == nil || out.TimedOut {
		t.Errorf("output %+v, want the output so far, not timed out", out)
	}
	if pid := pidFrom(t, out.Stdout); !processGone(pid) {
		t.Errorf("sleep (pid %d) still runs after cancel", pid)
	}
}

// A group that ignores SIGTERM gets SIGKILL after KillGrace.
func TestRunCommandKillsAfterGrace(t *testing.T) {
	fire := withTimeoutTrigger(t)
	oldGrace := KillGrace
	KillGrace = 100 * time.Millisecond
	t.Cleanup(func() { KillGrace = oldGrace })
	ws, _ := newWS(t, nil)
	rec := newRecorder()
	go func() {
		<-rec.pid
		close(fire)
	}()
	_, out, err := runCmd(t, context.Background(), &Env{WS: ws, Output: rec.output}, RunCommandArgs{
		Command: "trap '' TERM; sleep 300 & echo pid=$!; wait; wait", Timeout: "1h"})
	wantCode(t, err, CodeTimeout)
	if out.Signal != "killed" || out.ExitCode != 137 {
		t.Errorf("exit %d signal %q, want 137 killed", out.ExitCode, out.Signal)
	}
	if pid := pidFrom(t, out.Stdout); !processGone(pid) {
		t.Errorf("sleep (pid %d) ignoring SIGTERM survived", pid)
	}
}

// A background process that keeps the output open after the shell exits is
// killed after PipeGrace instead of hanging the step.
func TestRunCommandBackgroundHoldingOutput(t *testing.T) {
	oldPipe := PipeGrace
	PipeGrace = 50 * time.Millisecond
	t.Cleanup(func() { PipeGrace = oldPipe })
	ws, _ := newWS(t, nil)
	_, out, err := runCmd(t, context.Background(), &Env{WS: ws}, RunCommandArgs{Command: "sleep 300 & echo pid=$!"})
	if err != nil {
		t.Fatal(err)
	}
	if out.ExitCode != 0 || !strings.Contains(out.Stdout, "background processes were killed") {
		t.Errorf("output %+v", out)
	}
	if pid := pidFrom(t, out.Stdout); !processGone(pid) {
		t.Errorf("background sleep (pid %d) survived", pid)
	}
}

func TestRunCommandOutputCap(t *testing.T) {
	oldMax, oldStream := MaxCommandOutput, MaxStreamedOutput
	MaxCommandOutput, MaxStreamedOutput = 1000, 4000
	t.Cleanup(func() { MaxCommandOutput, MaxStreamedOutput = oldMax, oldStream })
	ws, _ := newWS(t, nil)
	rec := newRecorder()
	// 2000 numbered lines of 6 bytes: 12000 bytes.
	_, out, err := runCmd(t, context.Background(), &Env{WS: ws, Output: rec.output}, RunCommandArgs{
		Command: `i=0; while [ $i -lt 2000 ]; do printf '%05d\n' $i; i=$((i+1)); done`})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Truncated {
		t.Fatal("12000 bytes of output not truncated at 1000")
	}
	if !strings.HasPrefix(out.Stdout, "00000\n00001\n") || !strings.HasSuffix(out.Stdout, "01998\n01999\n") {
		t.Errorf("truncated stdout lost its head or tail: %q...%q", out.Stdout[:20], out.Stdout[len(out.Stdout)-20:])
	}
	if !strings.Contains(out.Stdout, "[agentd: 11000 bytes of stdout omitted]") {
		t.Errorf("no omission marker with the byte count in %q", out.Stdout)
	}
	if len(out.Stdout) > 1100 {
		t.Errorf("stdout is %d bytes, cap 1000", len(out.Stdout))
	}
	if got := rec.get("stdout"); len(got) != 4000 || !strings.HasPrefix(got, "00000\n") {
		t.Errorf("streamed %d bytes, want the first 4000", len(got))
	}
	if !strings.Contains(rec.get("log"), "not streamed") {
		t.Error("no note that streaming stopped")
	}
}

// Streamed chunks never split a UTF-8 character.
func TestCaptureStreamsWholeRunes(t *testing.T) {
	rec := newRecorder()
	var chunks []string
	env := &Env{Output: func(s, text string) {
		chunks = append(chunks, text)
		rec.output(s, text)
	}}
	c := newCapture("stdout", env)
	s := []byte("héllo wörld €")
	for i := range s {
		c.write(s[i : i+1])
	}
	for _, ch := range chunks {
		if !utf8.ValidString(ch) {
			t.Errorf("chunk %q is not valid UTF-8", ch)
		}
	}
	if rec.get("stdout") != string(s) || c.String() != string(s) {
		t.Errorf("streamed %q, captured %q, want %q", rec.get("stdout"), c.String(), s)
	}
}
