package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/fakemodel"
)

// TestServeStopsMapWatchers: the daemon's planner keeps a file watcher for
// its repository map (each watcher has a private directory in TMPDIR);
// when the daemon stops on shutdown and exit, it stops them and leaves
// nothing behind.
func TestServeStopsMapWatchers(t *testing.T) {
	ws := demoCopy(t)
	srv := fakemodel.New()
	url := srv.Start(t)
	srv.Push(fakemodel.Reply{Text: greetPlan}, fakemodel.Reply{Text: greetPlan})
	tmp := t.TempDir()
	cmd := exec.Command(agentdBin, "serve", "--state-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "XDG_CONFIG_HOME="+t.TempDir(), "AGENTD_MODEL=openai:test-model",
		"OPENAI_BASE_URL="+url+"/v1", "OPENAI_API_KEY=sk-test-serve")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	c := &lspConn{t: t, in: in, out: bufio.NewReader(out)}
	initialize(c, ws)
	watchDirs := func() []string {
		m, _ := filepath.Glob(filepath.Join(tmp, "agentd-watch-*"))
		return m
	}
	for range 2 {
		if r := c.call("agentd/plan/create", map[string]any{"request": "greet in French", "exploreRounds": -1}); r["error"] != nil {
			t.Fatalf("plan/create: %v", r["error"])
		}
	}
	if len(watchDirs()) == 0 {
		t.Fatal("no watcher directory after two plans")
	}
	c.call("shutdown", nil)
	c.send(map[string]any{"method": "exit"})
	in.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("agentd serve did not exit")
	}
	if left := watchDirs(); len(left) != 0 {
		t.Errorf("left behind in TMPDIR: %v", left)
	}
}
