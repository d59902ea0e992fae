//go:build unix

package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyRun is agentd running on a pseudo-terminal, as a person runs it: stdin,
// stdout and stderr are the terminal, so it shows the live status line and
// asks its questions there.
type ptyRun struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	more chan struct{} // closed and replaced when output arrives
	done chan struct{}
	code int
}

// ansi matches the terminal escapes agentd writes (colours, line clears).
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// startPTY starts agentd with args on a new pseudo-terminal (80x40).
func startPTY(t *testing.T, env []string, args ...string) *ptyRun {
	t.Helper()
	return startPTYWith(t, env, nil, args...)
}

// startPTYWith is startPTY with stdout sent to a file instead (nil: the
// terminal).
func startPTYWith(t *testing.T, env []string, stdout *os.File, args ...string) *ptyRun {
	t.Helper()
	return startPTYCmd(t, "", env, stdout, args...)
}

// startPTYIn is startPTY in the folder dir.
func startPTYIn(t *testing.T, dir string, env []string, args ...string) *ptyRun {
	t.Helper()
	return startPTYCmd(t, dir, env, nil, args...)
}

func startPTYCmd(t *testing.T, dir string, env []string, stdout *os.File, args ...string) *ptyRun {
	t.Helper()
	cmd := exec.Command(agentdBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"TERM=xterm", "NO_COLOR="}, env...)...)
	var tty *os.File
	var err error
	if stdout == nil {
		tty, err = pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	} else {
		var term *os.File
		if tty, term, err = pty.Open(); err == nil {
			defer term.Close()
			cmd.Stdin, cmd.Stdout, cmd.Stderr = term, stdout, term
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
			err = cmd.Start()
		}
	}
	if err != nil {
		t.Fatalf("starting agentd on a pty: %v", err)
	}
	r := &ptyRun{t: t, cmd: cmd, tty: tty, more: make(chan struct{}), done: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			r.mu.Lock()
			r.out.Write(buf[:n])
			close(r.more)
			r.more = make(chan struct{})
			r.mu.Unlock()
			if err != nil {
				break
			}
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.code = ee.ExitCode()
		}
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = cmd.Process.Kill()
			<-r.done
		}
		tty.Close()
	})
	return r
}

// text is everything shown so far, escapes removed.
func (r *ptyRun) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.ReplaceAll(ansi.ReplaceAllString(r.out.String(), ""), "\r\n", "\n")
}

// waitFor waits until the output holds s count times after position from
// (in text()), and returns the position after it. The minute is a safety
// net for a hung agentd, not a measurement.
func (r *ptyRun) waitFor(s string, from int) int {
	r.t.Helper()
	limit := time.After(time.Minute)
	for {
		r.mu.Lock()
		txt, ch := strings.ReplaceAll(ansi.ReplaceAllString(r.out.String(), ""), "\r\n", "\n"), r.more
		r.mu.Unlock()
		if from <= len(txt) {
			if i := strings.Index(txt[from:], s); i >= 0 {
				return from + i + len(s)
			}
		}
		select {
		case <-ch:
		case <-r.done:
			txt := r.text()
			if from <= len(txt) && strings.Contains(txt[from:], s) {
				continue
			}
			r.t.Fatalf("agentd exited (code %d) without showing %q; it showed:\n%s", r.code, s, r.tail())
		case <-limit:
			r.t.Fatalf("agentd did not show %q within a minute; it showed:\n%s", s, r.tail())
		}
	}
}

// tail is the end of what agentd showed, for failure messages.
func (r *ptyRun) tail() string {
	txt := r.text()
	// Status line redraws are noise here: keep the last of each run.
	txt = regexp.MustCompile(`(?m)[^\n]*\r`).ReplaceAllString(txt, "")
	if len(txt) > 4000 {
		txt = "..." + txt[len(txt)-4000:]
	}
	return txt
}

// send types s on the terminal.
func (r *ptyRun) send(s string) {
	r.t.Helper()
	if _, err := io.WriteString(r.tty, s); err != nil {
		r.t.Fatalf("typing %q: %v", s, err)
	}
}

// wait waits for agentd to exit and returns its exit code.
func (r *ptyRun) wait() int {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(2 * time.Minute):
		r.t.Fatalf("agentd did not exit; it showed:\n%s", r.tail())
	}
	return r.code
}
