package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// acpConn is a minimal ACP client (newline-delimited JSON-RPC) for the
// built binary.
type acpConn struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Reader
	id  int
	sid string
	// said is the text of the agent's messages so far.
	said strings.Builder
	// kill ends a server silent for serveSilentBound (as lspConn's).
	kill func()
}

func (c *acpConn) call(method string, params any) map[string]any {
	c.t.Helper()
	c.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	for {
		silent := time.AfterFunc(serveSilentBound, c.kill)
		line, err := c.out.ReadString('\n')
		if !silent.Stop() {
			c.t.Errorf("agentd acp sent nothing for %v and was killed", serveSilentBound)
		}
		if err != nil {
			c.t.Fatalf("reading from agentd acp: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			c.t.Fatalf("agentd acp sent %q", line)
		}
		if id, ok := m["id"].(float64); ok && int(id) == c.id && m["method"] == nil {
			return m
		}
		if m["method"] == "session/update" {
			p, _ := m["params"].(map[string]any)
			u, _ := p["update"].(map[string]any)
			if ct, _ := u["content"].(map[string]any); u["sessionUpdate"] == "agent_message_chunk" && ct != nil {
				c.said.WriteString(fmt.Sprint(ct["text"]))
			}
		}
		if os.Getenv("ACP_DEBUG") != "" {
			c.t.Logf("acp: %s", line)
		}
	}
}

// prompt sends a slash command; it returns the error message, "" if none.
func (c *acpConn) prompt(text string) string {
	c.t.Helper()
	r := c.call("session/prompt", map[string]any{"sessionId": c.sid, "prompt": []any{map[string]any{"type": "text", "text": text}}})
	if e, ok := r["error"].(map[string]any); ok {
		if d, ok := e["data"].(map[string]any); ok && d["prompt"] != nil {
			return fmt.Sprint(d["prompt"])
		}
		b, _ := json.Marshal(e)
		return string(b)
	}
	return ""
}

func startACP(t *testing.T, ws, state string, env ...string) *acpConn {
	t.Helper()
	cmd := exec.Command(agentdBin, "acp", "--state-dir", state)
	cmd.Env = append(append(os.Environ(), "TMPDIR="+t.TempDir(), "AGENTD_MODEL=", "XDG_CONFIG_HOME="+t.TempDir()), env...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		in.Close()
		select {
		case <-done:
		case <-time.After(serveStopWait):
			cmd.Process.Kill()
			<-done
		}
	})
	c := &acpConn{t: t, in: in, out: bufio.NewReader(out), kill: func() { cmd.Process.Kill() }}
	if r := c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}); r["error"] != nil {
		t.Fatalf("acp initialize: %v", r["error"])
	}
	r := c.call("session/new", map[string]any{"cwd": ws, "mcpServers": []any{}})
	res, _ := r["result"].(map[string]any)
	c.sid, _ = res["sessionId"].(string)
	if c.sid == "" {
		t.Fatalf("acp session/new: %v", r)
	}
	return c
}

// outcome is what one front end's undo or revoke came to: the file's text
// after it, or the error's words.
type outcome struct{ text, err string }

func (o outcome) String() string {
	if o.err != "" {
		return "error: " + o.err
	}
	return fmt.Sprintf("%q", o.text)
}

// TestOneSessionEveryFrontEnd drives undo of runs, undo of a restore, the
// approval policy and rule revocation from the terminal, the server and
// ACP, on three copies of the same history (two runs made by agentd run),
// and checks that each front end comes to the same result: the session
// layer, not the front end, decides.
func TestOneSessionEveryFrontEnd(t *testing.T) {
	first := writePlan(t, `{"title":"first","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"first\n"}}]}`)
	second := writePlan(t, `{"title":"second","steps":[{"id":"w","tool":"write_file","args":{"path":"a.txt","content":"second\n"}}]}`)
	type copyOf struct{ ws, state string }
	history := func() copyOf {
		c := copyOf{t.TempDir(), t.TempDir()}
		os.WriteFile(filepath.Join(c.ws, "a.txt"), []byte("a\n"), 0o644)
		for _, p := range []string{first, second} {
			if r := agentd(t, "", "run", p, "--yes", "--workspace", c.ws, "--state-dir", c.state); r.code != 0 {
				t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		}
		return c
	}
	file := func(c copyOf) string { return readFile(t, filepath.Join(c.ws, "a.txt")) }
	// Each front end's words for "nothing to undo" and an unknown rule
	// differ in wrapping; the core's words must be in each.
	core := func(msg string) string {
		for _, w := range []string{"nothing to undo", "no restore to undo", `no remembered rule "rule-9"`} {
			if strings.Contains(msg, w) {
				return w
			}
		}
		return msg
	}
	steps := []string{"undo run", "undo run", "undo run", "undo restore", "undo run", "revoke rule-9"}

	// The terminal.
	term := history()
	var termOut []outcome
	for _, s := range steps {
		args := map[string][]string{"undo run": {"undo"}, "undo restore": {"undo", "--restore"}, "revoke rule-9": {"rules", "revoke", "rule-9"}}[s]
		r := agentd(t, "", append(args, "--workspace", term.ws, "--state-dir", term.state)...)
		o := outcome{text: file(term)}
		if r.code != 0 {
			o = outcome{err: core(r.stderr)}
		}
		termOut = append(termOut, o)
	}

	// The server.
	srvCopy := history()
	srv := startServeProc(t, srvCopy.state)
	initialize(srv.lspConn, srvCopy.ws)
	var srvOut []outcome
	for _, s := range steps {
		var r map[string]any
		switch s {
		case "undo run":
			r = srv.call("agentd/undo/run", map[string]any{})
		case "undo restore":
			r = srv.call("agentd/undo/restore", map[string]any{})
		case "revoke rule-9":
			r = srv.call("agentd/policy/set", map[string]any{"revoke": []string{"rule-9"}})
		}
		o := outcome{text: file(srvCopy)}
		if e, ok := r["error"].(map[string]any); ok {
			o = outcome{err: core(fmt.Sprint(e["message"]))}
			if s == "revoke rule-9" {
				if d, _ := e["data"].(map[string]any); e["code"] != float64(-32602) || d["field"] != "revoke[0]" {
					t.Errorf("server revoke of an unknown rule: %v, want -32602 with data.field revoke[0]", e)
				}
			}
		}
		srvOut = append(srvOut, o)
	}
	// The run lists say undone the same way everywhere.
	list := srv.call("agentd/run/list", map[string]any{})
	undone := 0
	for _, r := range list["result"].([]any) {
		if r.(map[string]any)["undone"] != nil {
			undone++
		}
	}

	// ACP.
	acpCopy := history()
	acp := startACP(t, acpCopy.ws, acpCopy.state)
	var acpOut []outcome
	for _, s := range steps {
		cmd := map[string]string{"undo run": "/undo", "undo restore": "/undo-restore", "revoke rule-9": "/revoke rule-9"}[s]
		msg := acp.prompt(cmd)
		o := outcome{text: file(acpCopy)}
		if msg != "" {
			o = outcome{err: core(msg)}
		}
		acpOut = append(acpOut, o)
	}

	want := []outcome{{text: "first\n"}, {text: "a\n"}, {err: "nothing to undo"}, {text: "first\n"}, {text: "a\n"}, {err: `no remembered rule "rule-9"`}}
	for i, s := range steps {
		if termOut[i] != want[i] || srvOut[i] != want[i] || acpOut[i] != want[i] {
			t.Errorf("%d %s: terminal %v, server %v, ACP %v; want %v", i+1, s, termOut[i], srvOut[i], acpOut[i], want[i])
		}
	}
	termRuns := agentd(t, "", "runs", "--workspace", term.ws, "--state-dir", term.state)
	acpRuns := agentd(t, "", "runs", "--workspace", acpCopy.ws, "--state-dir", acpCopy.state)
	if n, m := strings.Count(termRuns.stdout, "undone"), strings.Count(acpRuns.stdout, "undone"); n != 2 || m != 2 || undone != 2 {
		t.Errorf("undone runs: terminal %d, server %d, ACP %d; want 2 each\n%s", n, undone, m, termRuns.stdout)
	}

	// The approval policy is the workspace's: set over the protocol, the
	// terminal's run reads it (commands allowed: the command runs without
	// a question), and ACP's and the server's policy/get agree.
	if r := srv.call("agentd/policy/set", map[string]any{"command": "allow", "requireApprovalForRisk": ""}); r["error"] != nil {
		t.Fatalf("policy/set: %v", r["error"])
	}
	if r := srv.call("agentd/policy/set", map[string]any{"command": "sometimes"}); r["error"] == nil {
		t.Fatalf("policy/set accepted command: sometimes")
	}
	cmdPlan := writePlan(t, `{"title":"cmd","steps":[{"id":"c","tool":"run_command","args":{"command":"echo ran > ran.txt"}}]}`)
	r := agentd(t, "", "run", cmdPlan, "--workspace", srvCopy.ws, "--state-dir", srvCopy.state)
	if r.code != 0 || readFile(t, filepath.Join(srvCopy.ws, "ran.txt")) != "ran\n" {
		t.Fatalf("agentd run under the workspace's policy (commands allowed): exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Without it, the same run asks, and off a terminal nobody answers.
	r = agentd(t, "", "run", cmdPlan, "--workspace", term.ws, "--state-dir", term.state)
	if _, err := os.Stat(filepath.Join(term.ws, "ran.txt")); r.code == 0 || err == nil {
		t.Fatalf("agentd run under the default policy ran the command without asking: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
