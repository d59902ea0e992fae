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
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

//go:embed run_command.md
var runCommandDesc string

// Tunables for run_command (tests may change them).
var (
	// MaxCommandOutput caps each of stdout and stderr in the output; the
	// head and the tail are kept.
	MaxCommandOutput = 1 << 20
	// MaxStreamedOutput caps how much of each stream is sent live through
	// Env.Output.
	MaxStreamedOutput = 8 << 20
	// KillGrace is how long a stopped command's process group has between
	// SIGTERM and SIGKILL.
	KillGrace = 5 * time.Second
	// PipeGrace is how long, after the shell exits, processes it left in
	// the background may keep the output open before they are killed.
	PipeGrace = 2 * time.Second
	// Shell runs the command as Shell -c command (on POSIX; Windows runs
	// it through cmd.exe, see run_command_windows.go).
	Shell = "/bin/sh"
)

// after is time.After; tests replace it to fire a timeout on cue.
var after = func(kind string, d time.Duration) <-chan time.Time { return time.After(d) }

// RunCommandArgs are run_command's arguments.
type RunCommandArgs struct {
	Command     string            `json:"command"`
	Cwd         string            `json:"cwd,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Timeout     string            `json:"timeout,omitempty"`
	OkExitCodes []int             `json:"okExitCodes,omitempty"`
}

// RunCommandOutput is run_command's output. It is returned even when the
// step fails (exit code, timeout), next to the error.
type RunCommandOutput struct {
	ExitCode   int    `json:"exitCode"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Truncated  bool   `json:"truncated"`
	DurationMs int64  `json:"durationMs"`
	// Signal names the signal that ended the command, if one did.
	Signal string `json:"signal,omitempty"`
	// TimedOut says the command was stopped by its timeout.
	TimedOut bool `json:"timedOut,omitempty"`
}

const runCommandSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "Shell command line, run with sh -c (cmd.exe /d /s /c on Windows)."},
    "cwd": {"type": "string", "description": "Directory to run in, relative to the workspace root (default: the root)."},
    "env": {"type": "object", "additionalProperties": {"type": "string"}, "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}, "description": "Extra environment variables."},
    "timeout": {"type": "string", "pattern": "^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$", "description": "Go duration such as \"30s\" or \"5m\"; the command is stopped after it."},
    "okExitCodes": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 255}, "minItems": 1, "description": "Exit codes that count as success (default [0])."}
  },
  "required": ["command"],
  "additionalProperties": false
}`

type runCommandTool struct{ spec }

func newRunCommand() Tool {
	return &runCommandTool{spec{name: "run_command", desc: runCommandDesc, category: CategoryCommand, risk: RiskHigh, schema: runCommandSchema}}
}

// Describe shows the command line and directory (never env values).
func (t *runCommandTool) Describe(raw json.RawMessage) Description {
	a, _ := decodeArgs[RunCommandArgs](t.name, raw)
	cwd := a.Cwd
	if cwd == "" {
		cwd = "."
	}
	d := Description{Title: "Run a shell command", Command: a.Command, Cwd: cwd}
	var details []string
	if len(a.Env) > 0 {
		keys := make([]string, 0, len(a.Env))
		for k := range a.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		details = append(details, "with environment variables "+strings.Join(keys, ", "))
	}
	if a.Timeout != "" {
		details = append(details, "timeout "+a.Timeout)
	}
	d.Detail = strings.Join(details, "; ")
	return d
}

// Run runs the command. When the command fails (an exit code not in
// okExitCodes, a timeout) Run returns BOTH a Result with the output and the
// error: the engine records the output of a failed step, so a fix step
// can refer to ${step.stderr}.
func (t *runCommandTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (*Result, error) {
	a, err := decodeArgs[RunCommandArgs](t.name, raw)
	if err != nil {
		return nil, err
	}
	if err := checkEnv(t.name, env); err != nil {
		return nil, err
	}
	if strings.TrimSpace(a.Command) == "" {
		return nil, errorf(CodeInvalidArgs, "run_command: command is empty")
	}
	var timeout time.Duration
	if a.Timeout != "" {
		if timeout, err = time.ParseDuration(a.Timeout); err != nil || timeout <= 0 {
			return nil, errorf(CodeInvalidArgs, "run_command: timeout %q is not a positive Go duration such as \"30s\" or \"5m\"", a.Timeout)
		}
	}
	dir := env.WS.Root()
	if a.Cwd != "" {
		rel, abs, err := resolve(env, t.name, "cwd", a.Cwd)
		if err != nil {
			return nil, err
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fileError(t.name, rel, err)
		}
		if !fi.IsDir() {
			return nil, errorf(CodeInvalidArgs, "run_command: cwd %s is not a directory", rel)
		}
		dir = abs
	}
	for k := range a.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, errorf(CodeInvalidArgs, "run_command: env has an invalid variable name %q", k)
		}
	}
	ok := a.OkExitCodes
	if len(ok) == 0 {
		ok = []int{0}
	}

	cmd := shellCommand(a.Command)
	cmd.Dir = dir
	cmd.Env = mergeEnv(os.Environ(), a.Env)
	out, stopErr, err := runGroup(ctx, cmd, env, timeout)
	if err != nil {
		return nil, fmt.Errorf("run_command: starting %s in %s: %w", shellName(), dir, err)
	}
	res := &Result{Output: out}
	switch {
	case out.TimedOut:
		return res, &Error{Code: CodeTimeout, Retryable: true, Message: fmt.Sprintf(
			"run_command: %q did not finish within %s and was stopped; raise the timeout or make the command faster", shorten(a.Command, 120), stopErr)}
	case stopErr != nil:
		return res, fmt.Errorf("run_command: %q was stopped: %w", shorten(a.Command, 120), stopErr)
	case !slices.Contains(ok, out.ExitCode):
		return res, &Error{Code: CodeExitCode, Message: fmt.Sprintf(
			"run_command: %q exited with code %d (expected %s)%s", shorten(a.Command, 120), out.ExitCode, codesText(ok), lastLines(out))}
	}
	return res, nil
}

// runGroup runs cmd in its own process group and captures its output. It
// stops the whole group on timeout or when ctx is done: SIGTERM, then
// SIGKILL after KillGrace. stopErr is set when the command was stopped (a
// duration for a timeout is wrapped in a timeoutError).
func runGroup(ctx context.Context, cmd *exec.Cmd, env *Env, timeout time.Duration) (out RunCommandOutput, stopErr error, err error) {
	setProcessGroup(cmd)
	outR, outW, err := os.Pipe()
	if err != nil {
		return out, nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return out, nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	start := time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return out, nil, err
	}
	if err := startedGroup(cmd); err != nil {
		_ = cmd.Wait()
		outR.Close()
		errR.Close()
		return out, nil, err
	}
	addGroup(cmd)
	stdout := newCapture("stdout", env)
	stderr := newCapture("stderr", env)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); stdout.readFrom(outR) }()
	go func() { defer readers.Done(); stderr.readFrom(errR) }()
	pipesDone := make(chan struct{})
	go func() { readers.Wait(); close(pipesDone) }()

	exited := make(chan struct{})
	var reap func() error
	go func() { reap = waitExited(cmd); close(exited) }()

	var timeoutC <-chan time.Time
	if timeout > 0 {
		timeoutC = after("timeout", timeout)
	}
	stopped := false
	select {
	case <-exited:
	case <-timeoutC:
		stopped, out.TimedOut, stopErr = true, true, timeoutError(timeout)
	case <-ctx.Done():
		stopped, stopErr = true, ctx.Err()
		if errors.Is(stopErr, context.DeadlineExceeded) {
			out.TimedOut = true
			stopErr = timeoutError(0)
		}
	}
	if stopped {
		signalGroup(cmd, false)
		select {
		case <-exited:
		case <-after("kill", KillGrace):
			signalGroup(cmd, true)
			<-exited
		}
	}
	// The shell has exited but is not reaped yet, so its pid (the group id)
	// cannot be reused: signalling the group is safe until cmd.Wait.
	grace := PipeGrace
	if stopped {
		grace = KillGrace
	}
	select {
	case <-pipesDone:
	case <-after("pipes", grace):
		// Background processes still hold the output open.
		signalGroup(cmd, true)
		stdout.note = "\n[agentd: output closed after the command exited; background processes were killed]\n"
		select {
		case <-pipesDone: // the killed processes closed it
		case <-after("close", KillGrace):
			// Something outside the group (a daemon that called setsid)
			// still holds it: stop reading.
			_ = outR.SetReadDeadline(time.Now())
			_ = errR.SetReadDeadline(time.Now())
			<-pipesDone
		}
	}
	// Nothing the command started outlives it.
	signalGroup(cmd, true)
	removeGroup(cmd)
	waitErr := reap()
	releaseGroup(cmd)
	outR.Close()
	errR.Close()
	out.DurationMs = time.Since(start).Milliseconds()
	out.ExitCode, out.Signal = exitStatus(cmd, waitErr)
	out.Stdout, out.Stderr = stdout.String(), stderr.String()
	out.Truncated = stdout.truncated() || stderr.truncated()
	return out, stopErr, nil
}

type timeoutError time.Duration

func (e timeoutError) Error() string {
	if e == 0 {
		return "the step's timeout"
	}
	return time.Duration(e).String()
}

func mergeEnv(base []string, extra map[string]string) []string {
	if len(extra) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := extra[k]; !over {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}

func codesText(codes []int) string {
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprint(c)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "one of " + strings.Join(parts, ", ")
}

// lastLines quotes the end of stderr (or stdout) for the error message.
func lastLines(out RunCommandOutput) string {
	s := strings.TrimSpace(out.Stderr)
	name := "stderr"
	if s == "" {
		s, name = strings.TrimSpace(out.Stdout), "stdout"
	}
	if s == "" {
		return ""
	}
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" { // no "a |  | b" for blank lines
			lines = append(lines, strings.TrimRight(l, "\r"))
		}
	}
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return fmt.Sprintf("; end of %s: %s", name, shorten(strings.Join(lines, " | "), 300))
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// capture keeps the head and the tail of one output stream and streams
// it live through env.Output in valid UTF-8 chunks.
type capture struct {
	stream   string
	env      *Env
	head     []byte
	tail     []byte
	headCap  int
	tailCap  int
	dropped  int64
	streamed int
	pending  []byte // an incomplete UTF-8 sequence held back from streaming
	note     string
}

func newCapture(stream string, env *Env) *capture {
	h := MaxCommandOutput / 2
	return &capture{stream: stream, env: env, headCap: h, tailCap: MaxCommandOutput - h}
}

func (c *capture) readFrom(r *os.File) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.write(buf[:n])
		}
		if err != nil {
			break
		}
	}
	if len(c.pending) > 0 {
		c.emit(c.pending)
		c.pending = nil
	}
}

func (c *capture) write(p []byte) {
	c.stream1(p)
	if room := c.headCap - len(c.head); room > 0 {
		n := min(room, len(p))
		c.head = append(c.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*c.tailCap {
		c.trimTail()
	}
}

func (c *capture) trimTail() {
	if extra := len(c.tail) - c.tailCap; extra > 0 {
		c.dropped += int64(extra)
		c.tail = append(c.tail[:0], c.tail[extra:]...)
	}
}

func (c *capture) truncated() bool { return c.dropped > 0 }

func (c *capture) String() string {
	c.trimTail()
	var b bytes.Buffer
	b.Write(c.head)
	if c.dropped > 0 {
		fmt.Fprintf(&b, "\n[agentd: %d bytes of %s omitted]\n", c.dropped, c.stream)
	}
	b.Write(c.tail)
	b.WriteString(c.note)
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

// stream1 sends p live, holding back a trailing partial UTF-8 sequence.
func (c *capture) stream1(p []byte) {
	if c.env == nil || c.env.Output == nil || c.streamed >= MaxStreamedOutput {
		return
	}
	data := p
	if len(c.pending) > 0 {
		data = append(c.pending, p...)
		c.pending = nil
	}
	// Hold back an incomplete rune at the end (at most 3 bytes).
	cut := len(data)
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				cut = i
			}
			break
		}
	}
	if cut < len(data) {
		c.pending = append([]byte(nil), data[cut:]...)
		data = data[:cut]
	}
	c.emit(data)
}

func (c *capture) emit(data []byte) {
	if len(data) == 0 || c.env == nil || c.env.Output == nil {
		return
	}
	if room := MaxStreamedOutput - c.streamed; len(data) > room {
		data = data[:room]
	}
	c.streamed += len(data)
	c.env.Emit(c.stream, strings.ToValidUTF8(string(data), "\uFFFD"))
	if c.streamed >= MaxStreamedOutput {
		c.env.Emit("log", fmt.Sprintf("[agentd: %s is longer than %d bytes; the rest is not streamed]\n", c.stream, MaxStreamedOutput))
	}
}
