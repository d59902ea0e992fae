//go:build unix

package main

// POSIX-only: Ctrl-C as SIGINT to a process group (Windows has neither).

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRunCtrlCCancels(t *testing.T) {
	ws := t.TempDir()
	p := writePlan(t, `{"steps": [
	  {"id": "slow", "tool": "run_command", "args": {"command": "sleep 60"}},
	  {"id": "after", "tool": "read_file", "args": {"path": "x"}, "dependsOn": ["slow"]}
	]}`)
	cmd := exec.Command(agentdBin, "run", p, "--workspace", ws, "--yes", "--json", "--state-dir", t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	started := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"stepStarted"`) && strings.Contains(sc.Text(), `"slow"`) {
			started = true
			break
		}
	}
	if !started {
		cmd.Process.Kill()
		t.Fatalf("the slow step never started: %s", errb.String())
	}
	cmd.Process.Signal(os.Interrupt)
	go io.Copy(io.Discard, out)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != exitCancelled {
			t.Fatalf("exit %v, want %d\n%s", err, exitCancelled, errb.String())
		}
	case <-time.After(30 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatal("agentd did not stop after Ctrl-C")
	}
}
