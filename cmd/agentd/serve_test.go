package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/fakemodel"
)

// lspConn is a minimal LSP-framed JSON-RPC client for the built binary.
type lspConn struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Reader
	id  int
	// queued: the server's other messages call read while it waited for
	// its answer; read gives them first. A notification can come before
	// the answer to the request that caused it (a short run's runFinished
	// before run/start's answer), so none is dropped: a test that dropped
	// it would wait for it for good.
	queued []map[string]any
	// kill ends a server that sent nothing for serveSilentBound, so a
	// test waiting for a message that never comes fails with its name
	// instead of hanging the package until go test's timeout.
	kill func()
}

func (c *lspConn) send(msg map[string]any) {
	c.t.Helper()
	msg["jsonrpc"] = "2.0"
	b, _ := json.Marshal(msg)
	if _, err := fmt.Fprintf(c.in, "Content-Length: %d\r\n\r\n%s", len(b), b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *lspConn) read() map[string]any {
	c.t.Helper()
	if len(c.queued) > 0 {
		m := c.queued[0]
		c.queued = c.queued[1:]
		return m
	}
	return c.readWire()
}

// readWire reads the next message from the server.
func (c *lspConn) readWire() map[string]any {
	c.t.Helper()
	if c.kill != nil {
		silent := time.AfterFunc(serveSilentBound, c.kill)
		defer func() {
			if !silent.Stop() {
				c.t.Errorf("the server sent nothing for %v and was killed: the test waited for a message it had already been sent or never would be", serveSilentBound)
			}
		}()
	}
	n := -1
	for {
		line, err := c.out.ReadString('\n')
		if err != nil {
			c.t.Fatalf("reading a frame header: %v", err)
		}
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			n, _ = strconv.Atoi(v)
		}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c.out, body); err != nil {
		c.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		c.t.Fatalf("server sent invalid JSON %q", body)
	}
	return m
}

// call sends a request and returns its response, skipping notifications.
func (c *lspConn) call(method string, params any) map[string]any {
	c.t.Helper()
	c.id++
	c.send(map[string]any{"id": c.id, "method": method, "params": params})
	for {
		m := c.readWire()
		if id, ok := m["id"].(float64); ok && int(id) == c.id && m["method"] == nil {
			return m
		}
		c.queued = append(c.queued, m)
	}
}

// startServe starts the built binary's server with a fresh state dir and
// env added to the environment.
func startServe(t *testing.T, env ...string) *lspConn {
	t.Helper()
	return startServeProc(t, t.TempDir(), env...).lspConn
}

// serveProc is a running `agentd serve`; exited is closed when it ended.
type serveProc struct {
	*lspConn
	cmd    *exec.Cmd
	exited chan struct{}
}

// serveStopWait is how long a test's cleanup lets the server end after
// closing its input (end of input stops it, and it removes what it made)
// before killing it. Not a timing assertion: a bound on a hung server.
const serveStopWait = 30 * time.Second

// serveSilentBound is how long a test's read waits for the server's next
// message before it kills the server and fails. Not a timing assertion:
// every wait in these tests is for a message the server sends within
// seconds; the bound names a test that would otherwise hang.
const serveSilentBound = 3 * time.Minute

// startServeProc starts the built binary's server with stateDir and env
// added to the environment. Its TMPDIR is the test's own (env may set
// another), so what a killed server could not remove (a file watcher's
// directory) goes with the test. The cleanup closes the server's input
// and lets it end as an editor's closing would, and kills it only if it
// hangs.
func startServeProc(t *testing.T, stateDir string, env ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(agentdBin, "serve", "--state-dir", stateDir)
	cmd.Env = append(append(os.Environ(), "TMPDIR="+t.TempDir()), env...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{lspConn: &lspConn{t: t, in: in, out: bufio.NewReader(out), kill: func() { cmd.Process.Kill() }}, cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait() // after the process ended: the test's reads are done
		close(p.exited)
	}()
	t.Cleanup(func() {
		in.Close()
		select {
		case <-p.exited:
		case <-time.After(serveStopWait):
			cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

func initialize(c *lspConn, root string) {
	c.t.Helper()
	r := c.call("initialize", map[string]any{"processId": nil, "rootUri": "file://" + root, "capabilities": map[string]any{}})
	if r["error"] != nil {
		c.t.Fatalf("initialize: %v", r["error"])
	}
	c.send(map[string]any{"method": "initialized", "params": map[string]any{}})
}

// TestServePlanCreateWithModel drives the built binary: agentd/plan/create
// goes through engine/llm to the fake model server and returns a validated
// plan.
func TestServePlanCreateWithModel(t *testing.T) {
	ws := demoCopy(t)
	srv := fakemodel.New()
	url := srv.Start(t)
	srv.Push(fakemodel.Reply{Text: `{"title":"Read the greeter","steps":[{"id":"read","tool":"read_file","args":{"path":"greet/greet.go"}}]}`})
	c := startServe(t, "XDG_CONFIG_HOME="+t.TempDir(), "AGENTD_MODEL=openai:test-model",
		"OPENAI_BASE_URL="+url+"/v1", "OPENAI_API_KEY=sk-test-serve")
	initialize(c, ws)
	r := c.call("agentd/plan/create", map[string]any{"request": "show me the greeter"})
	if r["error"] != nil {
		t.Fatalf("plan/create: %v", r["error"])
	}
	plan, _ := r["result"].(map[string]any)
	steps, _ := plan["steps"].([]any)
	if len(steps) != 1 || plan["id"] == "" {
		t.Fatalf("plan/create result: %v", r["result"])
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "show me the greeter") || !strings.Contains(string(reqs[0].Body), "greet/greet.go") {
		t.Fatalf("the model was not asked with the request and the workspace tree: %d requests", len(reqs))
	}
}

// TestServePlanCreateWithoutModel: -32006 with a message that says how to
// configure a model, and the server keeps serving.
func TestServePlanCreateWithoutModel(t *testing.T) {
	ws := demoCopy(t)
	c := startServe(t, "XDG_CONFIG_HOME="+t.TempDir(), "AGENTD_MODEL=", "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=")
	initialize(c, ws)
	r := c.call("agentd/plan/create", map[string]any{"request": "anything"})
	e, _ := r["error"].(map[string]any)
	if e == nil || e["code"] != float64(-32006) || !strings.Contains(fmt.Sprint(e["message"]), "AGENTD_MODEL") {
		t.Fatalf("want -32006 naming AGENTD_MODEL, got %v", r)
	}
	if r := c.call("agentd/tools/list", map[string]any{}); r["error"] != nil {
		t.Fatalf("server stopped serving after the error: %v", r["error"])
	}
}
