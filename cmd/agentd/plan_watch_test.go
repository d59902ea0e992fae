package main

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/fakemodel"
)

// TestServeStopsMapWatchers: the daemon's planner keeps a file watcher for
// its repository map (each watcher has a private directory in TMPDIR);
// however the daemon is stopped short of SIGKILL (shutdown and exit, the
// editor closing its input, SIGTERM), it stops them and leaves nothing
// behind. (A killed daemon cannot; startServeProc gives each test's server
// a TMPDIR of its own for that.)
func TestServeStopsMapWatchers(t *testing.T) {
	for _, stop := range []string{"shutdown+exit", "end of input", "SIGTERM"} {
		t.Run(stop, func(t *testing.T) {
			ws := demoCopy(t)
			srv := fakemodel.New()
			url := srv.Start(t)
			srv.Push(fakemodel.Reply{Text: greetPlan}, fakemodel.Reply{Text: greetPlan})
			tmp := t.TempDir()
			c := startServeProc(t, t.TempDir(), "TMPDIR="+tmp, "XDG_CONFIG_HOME="+t.TempDir(), "AGENTD_MODEL=openai:test-model",
				"OPENAI_BASE_URL="+url+"/v1", "OPENAI_API_KEY=sk-test-serve")
			initialize(c.lspConn, ws)
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
			switch stop {
			case "shutdown+exit":
				c.call("shutdown", nil)
				c.send(map[string]any{"method": "exit"})
				c.in.Close()
			case "end of input":
				c.in.Close()
			case "SIGTERM":
				c.cmd.Process.Signal(syscall.SIGTERM)
			}
			select {
			case <-c.exited:
			case <-time.After(serveStopWait):
				t.Fatal("agentd serve did not exit")
			}
			if left := watchDirs(); len(left) != 0 {
				t.Errorf("left behind in TMPDIR: %v", left)
			}
		})
	}
}
