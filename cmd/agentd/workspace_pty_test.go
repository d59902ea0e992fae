package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestRunWorkspaceAsksOnTerminal: a plan from outside the current folder,
// or --request, on a terminal: agentd asks before using the folder; "y"
// runs there, "n" (or Enter) runs nothing and says how to choose.
func TestRunWorkspaceAsksOnTerminal(t *testing.T) {
	p := writePlan(t, `{"steps":[{"id":"w","tool":"write_file","args":{"path":"made.txt","content":"x\n"}}]}`)
	for _, tc := range []struct {
		args   []string
		answer string
		code   int
		made   bool
	}{
		{[]string{p}, "y\n", 0, true},
		{[]string{p}, "\n", exitUsage, false},
		{[]string{p}, "n\n", exitUsage, false},
		{[]string{"--request", "write made.txt"}, "n\n", exitUsage, false},
	} {
		dir := t.TempDir()
		cmd := exec.Command(agentdBin, append(append([]string{"run"}, tc.args...), "--yes", "--state-dir", t.TempDir())...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "NO_COLOR=1", "TERM=dumb")
		f, err := pty.Start(cmd)
		if err != nil {
			t.Fatalf("pty: %v", err)
		}
		var mu sync.Mutex
		var out bytes.Buffer
		done := make(chan struct{})
		go func() {
			buf := make([]byte, 4096)
			for {
				n, err := f.Read(buf)
				mu.Lock()
				out.Write(buf[:n])
				mu.Unlock()
				if err != nil {
					close(done)
					return
				}
			}
		}()
		screen := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(screen(), "[y/N]") {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("no question on the terminal:\n%s", screen())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !strings.Contains(screen(), dir) {
			t.Errorf("the question does not name the folder %s:\n%s", dir, screen())
		}
		io.WriteString(f, tc.answer)
		err = cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		f.Close()
		<-done
		_, statErr := os.Stat(filepath.Join(dir, "made.txt"))
		if code != tc.code || (statErr == nil) != tc.made {
			t.Errorf("answer %q: exit %d (want %d), made.txt written %v (want %v)\n%s", tc.answer, code, tc.code, statErr == nil, tc.made, screen())
		}
		if tc.code == exitUsage && !strings.Contains(screen(), "--workspace DIR") {
			t.Errorf("answer %q: no word on how to choose:\n%s", tc.answer, screen())
		}
	}
}
